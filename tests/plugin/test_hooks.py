"""Hooks go through pluggy: its call order, both wrapper styles, and isolation of failing
observers during a real run on the toy domain."""

from __future__ import annotations

import json

import toy_domain

from dei_framework import NodeConfig, RunConfig, hookimpl, load_plugins, run


def _config() -> RunConfig:
    return RunConfig(
        domain="toy",
        nodes=[NodeConfig(name="solo", operator="toy-random")],
        budget=24,
        rounds=2,
        seed=5,
        eval_workers=0,
        sharing="none",
    )


class Recorder:
    """Observes ``dei_run_finished`` with the given hookimpl options, logging its label."""

    def __init__(self, label: str, calls: list[str], **options) -> None:
        self.label, self.calls = label, calls

        def dei_run_finished(run_dir, summary):
            self.calls.append(label)

        self.dei_run_finished = hookimpl(**options)(dei_run_finished)


class NewStyleWrapper:
    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    @hookimpl(wrapper=True)
    def dei_run_finished(self, summary):
        self.calls.append(f"wrapper:before:{summary.evaluated}")
        result = yield
        self.calls.append("wrapper:after")
        return result


class OldStyleWrapper:
    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    @hookimpl(hookwrapper=True)
    def dei_run_finished(self):
        self.calls.append("hookwrapper:before")
        outcome = yield
        outcome.get_result()
        self.calls.append("hookwrapper:after")


def test_observers_run_in_pluggy_order_inside_their_wrappers(tmp_path) -> None:
    calls: list[str] = []
    plugins = [
        toy_domain,
        Recorder("plain-1", calls),
        Recorder("tryfirst", calls, tryfirst=True),
        Recorder("plain-2", calls),
        Recorder("trylast", calls, trylast=True),
        NewStyleWrapper(calls),
        OldStyleWrapper(calls),
    ]
    registry = load_plugins(plugins, entry_points=False)
    assert registry.problems == []
    summary = run(_config(), tmp_path / "run", registry=registry)
    # pluggy: wrappers outermost (the last registered outside), then tryfirst, the plain ones
    # from the last registered to the first, then trylast.
    assert calls == [
        "hookwrapper:before",
        f"wrapper:before:{summary.evaluated}",
        "tryfirst",
        "plain-2",
        "plain-1",
        "trylast",
        "wrapper:after",
        "hookwrapper:after",
    ]


def test_a_wrapper_on_a_registration_hook_leaves_registration_intact() -> None:
    seen: list[int] = []

    class Wrapping:
        @hookimpl(wrapper=True)
        def dei_operators(self):
            result = yield
            seen.append(len(result))
            return result

    registry = load_plugins([toy_domain, Wrapping()], entry_points=False)
    assert registry.problems == []
    assert {"toy", "toy-random"} <= set(registry.domains) | set(registry.operators)
    assert seen == [0]  # called for its own plugin: it registers nothing itself


class Counting:
    def __init__(self) -> None:
        self.evaluated = 0
        self.rounds = 0

    @hookimpl
    def dei_candidate_evaluated(self, event):
        self.evaluated += 1

    @hookimpl
    def dei_round_ended(self, node, round, stats):
        self.rounds += 1


class Failing:
    calls = 0

    @hookimpl
    def dei_candidate_evaluated(self, event):
        type(self).calls += 1
        raise KeyError(event.to_json()["no-such-key"])


def test_a_failing_observer_is_reported_once_and_the_run_finishes(tmp_path, capsys) -> None:
    counting = Counting()
    # Registered after the failing plugin, so pluggy calls it first, before the failure.
    registry = load_plugins([toy_domain, Failing(), counting], entry_points=False)
    summary = run(_config(), tmp_path / "run", registry=registry)

    assert json.loads((tmp_path / "run" / "summary.json").read_text())["budget"]["calls"] == 24
    assert summary.evaluated > 1
    failing_name = registry.plugin_name(
        next(p for p in registry.manager.get_plugins() if isinstance(p, Failing))
    )
    problems = [p for p in registry.problems if "dei_candidate_evaluated" in p]
    assert len(problems) == 1 and repr(failing_name) in problems[0] and "KeyError" in problems[0]
    assert capsys.readouterr().err.count("failed in dei_candidate_evaluated") == 1
    assert Failing.calls == 1  # muted after its first failure
    assert counting.evaluated == summary.evaluated  # the other observer saw every event
    assert counting.rounds == 2


def test_a_failing_wrapper_is_blamed_not_the_observer_it_wraps(capsys) -> None:
    class Plain:
        @hookimpl
        def dei_round_ended(self, node):
            pass

    class BadWrapper:
        @hookimpl(wrapper=True)
        def dei_round_ended(self):
            yield
            raise RuntimeError("teardown bug")

    registry = load_plugins([Plain(), BadWrapper()], entry_points=False)
    wrapper_name = registry.plugin_name(
        next(p for p in registry.manager.get_plugins() if isinstance(p, BadWrapper))
    )
    for round_index in range(3):
        registry.notify("dei_round_ended", node="n", round=round_index, stats={})
    assert len(registry.problems) == 1 and repr(wrapper_name) in registry.problems[0]
    assert capsys.readouterr().err.count("teardown bug") == 1
