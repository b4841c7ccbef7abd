"""Budget allocation: the ``dei_budget_allocators`` hook, the static default, the bandit."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
import pytest
from midway import events, kill_midway
from seeded_runs import GivesUpPlugin, run_outcome

from dei_framework import NodeConfig, RunConfig, hookimpl, load_plugins, run
from dei_framework.contract.errors import ConfigError
from dei_framework.runtime.ensemble import Ensemble
from dei_framework.runtime.files.run_dir import RunDir
from dei_framework.search.allocation import (
    AllocationDecision,
    AllocatorSpec,
    BanditAllocator,
    RoundCredit,
    apportion,
)

# The seeded-run helpers of tests/system/test_determinism.py, imported where a test uses them.

#: Keys whose values are wall-clock measurements, not results.
TIMING_KEYS = frozenset({"timings", "call_seconds", "wall_seconds", "waits", "pid"})


def _config(operators: Sequence[str], **overrides) -> RunConfig:
    values = dict(
        domain="toy",
        budget=180,
        rounds=4,
        seed=5,
        eval_workers=0,
        allocation="bandit",
        nodes=[NodeConfig(name=f"node-{i}", operator=op) for i, op in enumerate(operators)],
    )
    values.update(overrides)
    return RunConfig(**values)


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _allocations(path: Path) -> list[dict]:
    return sorted((e for e in events(path) if e["event"] == "allocation"), key=lambda e: e["round"])


# --- the arithmetic -----------------------------------------------------------------------------


def test_apportion_spends_the_budget_exactly_with_the_floor_and_ties_to_the_first() -> None:
    assert apportion(10, {"a": 1.0, "b": 0.0, "c": 3.0}, 1) == {"a": 3, "b": 1, "c": 6}
    assert apportion(7, {"a": 1.0, "b": 1.0, "c": 1.0}, 0) == {"a": 3, "b": 2, "c": 2}
    assert apportion(5, {"a": 0.0, "b": 0.0}, 0) == {"a": 3, "b": 2}  # no signal: equal
    # a floor larger than an equal share is cut to it: the budget still holds exactly
    assert apportion(4, {"a": 5.0, "b": 1.0, "c": 1.0}, 3) == {"a": 2, "b": 1, "c": 1}
    for budget in range(0, 40):
        assert sum(apportion(budget, {"a": 0.3, "b": 0.1, "c": 0.0}, 2).values()) == budget


def test_a_node_that_adds_nothing_gets_the_floor_and_the_others_share_the_rest() -> None:
    bandit = BanditAllocator()
    history = [
        {
            "a": RoundCredit(spent=20, new_cells=6.0, landed=0),
            "b": RoundCredit(spent=20, new_cells=5.0, landed=1),
            "c": RoundCredit(spent=20, new_cells=0.0, landed=0),
        }
    ]
    decision = bandit.decide(1, 60, history, ["a", "b", "c"])
    floor = int(bandit.floor * 60 / 3)
    assert decision.quotas["c"] == floor == decision.inputs["floor_calls"]
    assert decision.quotas["a"] > 20 and decision.quotas["b"] > 20
    assert sum(decision.quotas.values()) == 60
    assert decision.inputs["reward"] == {"a": 0.3, "b": 0.275, "c": 0.0}
    # the same inputs, the same decision (no random draw anywhere)
    assert bandit.decide(1, 60, history, ["a", "b", "c"]) == decision


def test_bandit_options_are_checked(toy_env) -> None:
    registry = load_plugins()
    factory = registry.allocator("bandit").factory
    assert factory({"floor": 0.5, "c": 1.0}).floor == 0.5
    for bad in ({"floor": 2}, {"discount": 0}, {"c": "wide"}, {"speed": 1}):
        with pytest.raises(ConfigError, match="allocation bandit"):
            factory(bad)


# --- in-process runs ------------------------------------------------------------------------------


def test_a_seeded_bandit_run_is_reproducible_and_spends_exactly_the_budget(
    toy_env, tmp_path, monkeypatch
) -> None:
    # Random stalls before every call and evaluation: the two runs' timings differ.
    monkeypatch.setenv("DEI_CHAOS_STALL", "0.002")
    registry = load_plugins()
    config = _config(["toy-random", "toy-random", "toy-stuck"])
    first = run(config, tmp_path / "a", registry=registry)
    second = run(config, tmp_path / "b", registry=registry)
    # Byte for byte: the decisions as logged, every round archive, the summary's results.
    lines = {
        name: sorted(
            line
            for line in (tmp_path / name / "events.jsonl").read_text().splitlines()
            if json.loads(line)["event"] == "allocation"
        )
        for name in ("a", "b")
    }
    assert len(lines["a"]) == 3 and lines["a"] == lines["b"]
    for path in sorted((tmp_path / "a" / "nodes").glob("*/round-*.json")):
        twin = tmp_path / "b" / path.relative_to(tmp_path / "a")
        assert path.read_bytes() == twin.read_bytes(), path.name
    assert _without_timings(first.to_json()) == _without_timings(second.to_json())

    def logged(name: str) -> list:
        # Every event (nodes log concurrently: the file's line order follows the wall clock).
        return sorted(
            json.dumps(_without_timings(e), sort_keys=True) for e in events(tmp_path / name)
        )

    assert logged("a") == logged("b")
    # A replay of the record makes the same decisions (from the same round archives).
    replayed = run(config, tmp_path / "c", registry=registry, replay_from=tmp_path / "a")
    assert sorted(json.dumps(e, sort_keys=True) for e in _allocations(tmp_path / "c")) == sorted(
        json.dumps(e, sort_keys=True) for e in _allocations(tmp_path / "a")
    )
    assert replayed.merged == first.merged
    # Total compute is exactly the budget, whatever the shares.
    assert first.budget["calls"] == first.budget["limit"] == 180
    assert sum(node.calls for node in first.nodes.values()) == 180
    calls = [
        e
        for e in events(tmp_path / "a")
        if e["event"] == "evaluated" and e["kind"] in ("new", "mutate")
    ]
    assert len(calls) == 180
    # Each decision spends its round's budget; the last round gets all that was left.
    for decision in _allocations(tmp_path / "a"):
        assert sum(decision["quotas"].values()) == decision["budget"]
    assert (
        _allocations(tmp_path / "a")[-1]["budget"]
        == _allocations(tmp_path / "a")[-1]["budget_left"]
    )


def test_a_node_that_can_never_fill_a_new_cell_falls_to_the_floor_within_three_rounds(
    toy_env, tmp_path
) -> None:
    registry = load_plugins()
    for seed in (1, 2, 3):
        out = tmp_path / f"seed-{seed}"
        run(_config(["toy-random", "toy-random", "toy-stuck"], seed=seed), out, registry=registry)
        decisions = _allocations(out)[:3]
        equal = [decision["budget"] / 3 for decision in decisions]
        assert all(d["credits"]["node-2"]["new_cells"] == 0 for d in decisions[1:])
        floored = [
            d
            for d, share in zip(decisions, equal, strict=True)
            if d["quotas"]["node-2"] == d["floor_calls"]
            and d["quotas"]["node-0"] > share
            and d["quotas"]["node-1"] > share
        ]
        assert floored, f"seed {seed}: {[d['quotas'] for d in decisions]}"
        # its inputs are logged with it: rewards, bounds and shares
        first = floored[0]
        assert first["reward"]["node-2"] == 0.0
        assert first["share"]["node-2"] < 1 / 3 < first["share"]["node-0"]


def test_static_allocation_records_the_configuration_as_before(toy_env, tmp_path) -> None:
    registry = load_plugins()
    config = _config(["toy-random", "toy-random"], allocation="static", budget=40, rounds=2)
    assert "allocation" not in config.to_json()  # config.json and experiment.json unchanged
    summary = run(config, tmp_path / "run", registry=registry)
    assert not _allocations(tmp_path / "run")
    assert [node.calls for node in summary.nodes.values()] == [20, 20]
    assert _config(["toy-random"]).to_json()["allocation"] == "bandit"


def test_bandit_is_refused_where_it_cannot_hold_with_one_line(toy_env, tmp_path) -> None:
    registry = load_plugins()
    # A node in a process of its own learns its peers' rounds through the champion gossip:
    # without a transport it would wait for reports that cannot come.
    config = _config(["toy-random", "toy-random"], sharing="none")
    ensemble = Ensemble(config, RunDir(tmp_path / "node"), registry=registry, local="node-0")
    with pytest.raises(ConfigError, match="needs a transport that shares champions") as refused:
        ensemble.assemble()
    assert "\n" not in str(refused.value)
    tokens = _config(["toy-random", "toy-random"], compute_axis="tokens", iterations=4)
    with pytest.raises(ConfigError, match="compute-axis tokens"):
        Ensemble(tokens, RunDir(tmp_path / "tokens"), registry=registry).assemble()
    # dei-run over AXL: refused before any AXL node or node process starts
    from dei_framework.runtime.node.launcher import local_network

    axl = _config(
        ["toy-random", "toy-random"], transport="axl", compute_axis="tokens", iterations=4
    )
    with pytest.raises(ConfigError, match="compute-axis tokens"):
        local_network(axl, registry, tmp_path / "axl")
    assert not (tmp_path / "axl").exists()
    waits = _config(["toy-random"], allocation_options={"peer_wait": -1})
    with pytest.raises(ConfigError, match="peer_wait must be a positive number"):
        Ensemble(waits, RunDir(tmp_path / "wait"), registry=registry).assemble()


class _FirstTakesAll:
    """A plugin's allocator: every call of the budget left to the first live node."""

    name = "first"
    dynamic = True

    def decide(
        self,
        round_index: int,
        budget: int,
        history: Sequence[Mapping[str, RoundCredit]],
        nodes: Sequence[str],
    ) -> AllocationDecision:
        return AllocationDecision(
            quotas={n: budget if i == 0 else 0 for i, n in enumerate(nodes)},
            inputs={"why": "first"},
        )


class _AllocatorPlugin:
    @hookimpl
    def dei_budget_allocators(self) -> list[AllocatorSpec]:
        return [AllocatorSpec(name="first", factory=lambda options: _FirstTakesAll())]


def test_a_plugin_allocator_is_found_through_the_hook_and_used(toy_env, tmp_path) -> None:
    registry = load_plugins(extra=[_AllocatorPlugin()])
    assert registry.allocators["first"].plugin != registry.allocators["bandit"].plugin
    summary = run(
        _config(["toy-random", "toy-random"], allocation="first", budget=40, rounds=2),
        tmp_path / "run",
        registry=registry,
    )
    # round 0 is the equal split of 40 / 2 rounds; round 1 (the other 20) all to node-0
    assert {n: node.calls for n, node in summary.nodes.items()} == {"node-0": 30, "node-1": 10}
    (decision,) = _allocations(tmp_path / "run")
    assert decision["allocator"] == "first" and decision["why"] == "first"
    assert summary.budget["calls"] == 40


def test_a_killed_and_resumed_bandit_run_ends_as_an_uninterrupted_one(
    toy_env, cli, tmp_path
) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "toy"\nbudget = 240\nrounds = 5\nseed = 6\nallocation = "bandit"\n'
        "checkpoint_seconds = 0.05\neval_workers = 0\n"
        'operators = ["toy-random", "toy-random", "toy-stuck"]\n'
        "[operator_options]\ndelay = 0.01\n"
    )
    common = ["--config", str(config), "--progress", "quiet", "--no-report"]
    env = {**toy_env, "DEI_CHAOS_STALL": "0.02"}
    clean = tmp_path / "clean"
    cli("dei-run", *common, "--out", str(clean), env=env)
    killed = tmp_path / "killed"
    kill_midway([*common, "--out", str(killed)], killed, env, min_events=120)
    checkpoint = json.loads((killed / "checkpoint.json").read_text())
    rounds = [state["round"] for state in checkpoint["nodes"].values()]
    # killed after the first decision and before the last one
    assert all("1" in state["round_quotas"] for state in checkpoint["nodes"].values())
    assert min(rounds) < 4, rounds
    cli("dei-run", "--resume", str(killed), "--progress", "quiet", "--no-report", env=env)
    assert run_outcome(killed) == run_outcome(clean)

    def decisions(path: Path) -> list[str]:
        return sorted(json.dumps(e, sort_keys=True) for e in _allocations(path))

    assert len(decisions(clean)) == 4 and decisions(killed) == decisions(clean)
    summary = json.loads((killed / "summary.json").read_text())
    assert summary["budget"]["calls"] == summary["budget"]["limit"] == 240


def test_the_watch_page_state_carries_the_decisions(toy_env, tmp_path) -> None:
    from dei_framework.app.watch.run import WatchedRun

    registry = load_plugins()
    out = tmp_path / "run"
    run(_config(["toy-random", "toy-random", "toy-stuck"]), out, registry=registry)
    state = WatchedRun(out).state(seconds=None)
    logged = _allocations(out)
    assert [d["round"] for d in state["allocation"]] == [1, 2, 3]
    for shown, decision in zip(state["allocation"], logged, strict=True):
        assert shown["quotas"] == decision["quotas"] and shown["share"] == decision["share"]
        assert shown["reward"] == decision["reward"] and shown["budget"] == decision["budget"]
    assert WatchedRun(tmp_path / "nothing").state(seconds=None)["allocation"] == []


# 0: it stops in round 0; 11: round 0 gives it 10 calls, so it stops in round 1.
@pytest.mark.parametrize("calls", [0, 11])
def test_a_node_that_stops_early_leaves_its_budget_to_the_others(toy_env, tmp_path, calls):
    import toy_domain

    config = _config(["toy-random", "gives-up", "toy-random"], budget=120, rounds=4, seed=2)
    config = attrs.evolve(
        config,
        nodes=[
            attrs.evolve(node, options={"calls": calls}) if node.operator == "gives-up" else node
            for node in config.nodes
        ],
    )
    registry = load_plugins([toy_domain, GivesUpPlugin()])
    # No hang: the barrier must not wait for a node that stopped (a time limit, not a timing).
    summary = asyncio.run(
        asyncio.wait_for(asyncio.to_thread(run, config, tmp_path / "run", registry=registry), 120)
    )
    assert summary.nodes["node-1"].stopped
    assert [summary.nodes[n].rounds_completed for n in ("node-0", "node-2")] == [4, 4]
    # What the stopped node did not spend went to the others: the run spent its whole budget.
    assert summary.budget["calls"] == summary.budget["limit"] == 120
    decisions = _allocations(tmp_path / "run")
    assert decisions and all("node-1" not in d["quotas"] for d in decisions[1:])
    assert ("node-1" in decisions[0]["quotas"]) == bool(calls)  # it was still running in round 1
