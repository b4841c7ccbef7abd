"""Hook specifications are documented as pytest documents its own, and their payload records
match what the core passes.

Every hook must say when and how often it fires (``Fires:``), what is done with what it returns
(``Returns:``: collected, firstresult or ignored), document each argument (``Args:``), and, if
historic, say that it cannot be wrapped; no hook argument or return, nor any field of a payload
record, may be typed ``Any`` (``dict[str, Any]`` included).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, get_args, get_origin

import attrs
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "toy"))

import toy_domain  # noqa: E402

from dei_framework import NodeConfig, RunConfig, hookimpl, hookspec, load_plugins, run  # noqa: E402
from dei_framework.net.envelope import ChampionEnvelope  # noqa: E402
from dei_framework.plugin import hookspecs as core_hookspecs  # noqa: E402
from dei_framework.plugin._contract import hook_docs  # noqa: E402

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
#: The core's specifications and every reference plugin's own (``plugins/<name>/hookspecs.py``,
#: installed as ``dei_<name>``).
SPEC_MODULES = (
    core_hookspecs,
    *(
        importlib.import_module(f"dei_{path.parent.name}.hookspecs")
        for path in sorted(PLUGINS.glob("*/hookspecs.py"))
    ),
)
HOOKS = [(module, doc) for module in SPEC_MODULES for doc in hook_docs(module)]


def _type_checking_names(module: types.ModuleType) -> dict[str, Any]:
    """What the module imports under ``if TYPE_CHECKING:`` (its annotations name those)."""
    tree = ast.parse(Path(module.__file__).read_text())
    namespace: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            code = compile(ast.Module(body=node.body, type_ignores=[]), module.__file__, "exec")
            exec(code, namespace)
    return {**vars(module), **namespace}


def _any_in(hint: Any, where: str, seen: set[int]) -> list[str]:
    """Where ``Any`` occurs in a type hint, TypedDict fields included."""
    if hint is Any:
        return [where]
    if isinstance(hint, typing.ForwardRef) or id(hint) in seen:  # JSONValue's recursion
        return []
    seen.add(id(hint))
    if typing.is_typeddict(hint):
        hints = typing.get_type_hints(hint, globalns=vars(sys.modules[hint.__module__]))
        return [
            found
            for field, value in hints.items()
            for found in _any_in(value, f"{where}.{field}", seen)
        ]
    return [found for argument in get_args(hint) for found in _any_in(argument, where, seen)]


@pytest.mark.parametrize(("module", "doc"), HOOKS, ids=[doc.name for _, doc in HOOKS])
def test_every_hook_documents_when_it_fires_what_it_returns_and_each_argument(module, doc):
    assert doc.problems() == []
    assert doc.summary and doc.sections["Fires"] and doc.sections["Returns"]


@pytest.mark.parametrize(("module", "doc"), HOOKS, ids=[doc.name for _, doc in HOOKS])
def test_no_hook_argument_or_payload_field_is_typed_any(module, doc) -> None:
    function = getattr(module, doc.name)
    # Annotations name what the defining module imports: the core's hookspecs module collects
    # hooks that modules of their own family define.
    defining = sys.modules[function.__module__]
    hints = typing.get_type_hints(function, globalns=_type_checking_names(defining))
    assert set(hints) == {*doc.arguments, "return"}  # every argument is annotated
    found = [where for name, hint in hints.items() for where in _any_in(hint, name, set())]
    assert found == []


# --- the checks themselves fail on a hook documented badly --------------------------------------


def _badly_documented() -> types.ModuleType:
    module = types.ModuleType("bad_hookspecs")

    @hookspec
    def dei_no_firing_rule(value: int) -> None:
        """Something happened.

        Args:
            value: The value.

        Returns:
            Nothing; ignored.
        """

    @hookspec(firstresult=True)
    def dei_silent_firstresult(name: str) -> str | None:
        """Asks for a name.

        Fires:
            Once.

        Args:
            nme: Misspelled.

        Returns:
            The name.
        """

    @hookspec(historic=True)
    def dei_unsaid_history() -> None:
        """Registers.

        Fires:
            Once per plugin.
        """

    for function in (dei_no_firing_rule, dei_silent_firstresult, dei_unsaid_history):
        setattr(module, function.__name__, function)
    return module


def test_the_documentation_check_names_each_gap() -> None:
    problems = {doc.name: doc.problems() for doc in hook_docs(_badly_documented())}
    assert problems["dei_no_firing_rule"] == ["dei_no_firing_rule: no Fires: section"]
    assert problems["dei_silent_firstresult"] == [
        "dei_silent_firstresult: argument 'name' is not documented under Args:",
        "dei_silent_firstresult: Args: documents 'nme', which the hook does not take",
        "dei_silent_firstresult: a firstresult hook whose Returns: does not say so",
    ]
    assert problems["dei_unsaid_history"] == [
        "dei_unsaid_history: no Returns: section",
        "dei_unsaid_history: a historic hook whose Fires: does not say it is historic and "
        "cannot be wrapped",
    ]


class Inner(TypedDict):
    loose: dict[str, Any]


class Outer(TypedDict):
    inner: NotRequired[Inner | None]


def test_an_any_annotation_is_found_inside_a_payload_record() -> None:
    assert _any_in(Outer, "event", set()) == ["event.inner.loose"]
    assert _any_in(core_hookspecs.RunSummary, "summary", set()) == []


def test_a_wrapper_on_the_historic_hook_is_refused_as_its_docstring_says() -> None:
    class Wrapping:
        @hookimpl(wrapper=True)
        def dei_addhooks(self, pluginmanager):
            return (yield)

    registry = load_plugins([Wrapping()], entry_points=False)
    assert len(registry.problems) == 1
    assert "historic incompatible" in registry.problems[0]


# --- the payload records match what a real run passes -------------------------------------------


def _conforms(value: Any, hint: Any, where: str) -> list[str]:
    """Where ``value`` does not fit ``hint`` (a record's class and its JSON read back the
    same, types of leaves)."""
    if isinstance(hint, type) and attrs.has(hint):  # a record, whose JSON is read back equal
        if not isinstance(value, hint):
            return [f"{where}: {value!r} is not a {hint.__name__}"]
        again = hint.from_json(json.loads(json.dumps(value.to_json())))
        return [] if again == value else [f"{where}: {value!r} reads back as {again!r}"]
    if isinstance(hint, typing.ForwardRef):  # JSONValue's recursion: any JSON value
        json.dumps(value)
        return []
    if typing.is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not a dict"]
        namespace = vars(sys.modules[hint.__module__])
        hints = typing.get_type_hints(hint, globalns=namespace)
        # Python 3.11 cannot tell NotRequired keys under postponed annotations at run time
        # (__required_keys__ lists them all); the annotations with their extras can.
        extras = typing.get_type_hints(hint, globalns=namespace, include_extras=True)
        required = {key for key, value in extras.items() if get_origin(value) is not NotRequired}
        missing = sorted(required - set(value))
        unknown = sorted(set(value) - set(hints))
        found = [f"{where}: missing {missing}"] * bool(missing)
        found += [f"{where}: undeclared {unknown}"] * bool(unknown)
        for key in set(value) & set(hints):
            found += _conforms(value[key], hints[key], f"{where}.{key}")
        return found
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        attempts = [_conforms(value, option, where) for option in get_args(hint)]
        return [] if any(not attempt for attempt in attempts) else min(attempts, key=len)
    if origin is Literal:
        return [] if value in get_args(hint) else [f"{where}: {value!r} not in {get_args(hint)}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not a list"]
        return [
            p
            for i, item in enumerate(value)
            for p in _conforms(item, get_args(hint)[0], f"{where}[{i}]")
        ]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not a dict"]
        return [
            p
            for key, item in value.items()
            for p in _conforms(item, get_args(hint)[1], f"{where}.{key}")
        ]
    if hint is type(None):
        return [] if value is None else [f"{where}: {value!r} is not None"]
    allowed = (int, float) if hint is float else hint
    if isinstance(value, allowed) and not (hint is not bool and isinstance(value, bool)):
        return []
    return [f"{where}: {value!r} is not {hint}"]


class PayloadChecker:
    """Checks every observation hook's arguments against the spec's annotations."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.calls: dict[str, int] = {}
        self.hints = {
            name: typing.get_type_hints(
                getattr(core_hookspecs, name), globalns=_type_checking_names(core_hookspecs)
            )
            for name in ("dei_candidate_evaluated", "dei_round_ended", "dei_run_finished")
        }

    def _check(self, hook: str, **arguments: Any) -> None:
        self.calls[hook] = self.calls.get(hook, 0) + 1
        for name, value in arguments.items():
            self.problems += _conforms(value, self.hints[hook][name], f"{hook}.{name}")

    @hookimpl
    def dei_candidate_evaluated(self, event):
        self._check("dei_candidate_evaluated", event=event)

    @hookimpl
    def dei_round_ended(self, node, round, stats):
        self._check("dei_round_ended", node=node, round=round, stats=stats)

    @hookimpl
    def dei_champion_received(self, node, envelope, accepted, reason):
        self.calls["dei_champion_received"] = self.calls.get("dei_champion_received", 0) + 1
        if not (
            isinstance(envelope, ChampionEnvelope | None)
            and isinstance(accepted, bool)
            and reason in ("ok", "dropped")
            and isinstance(node, str)
        ):
            self.problems.append(f"dei_champion_received{(node, envelope, accepted, reason)}")

    @hookimpl
    def dei_run_finished(self, run_dir, summary):
        self._check("dei_run_finished", run_dir=run_dir, summary=summary)


def test_a_real_runs_payloads_fit_their_records(tmp_path) -> None:
    checker = PayloadChecker()
    registry = load_plugins([toy_domain, checker])  # the inmemory transport is a plugin
    assert registry.problems == []
    config = RunConfig(
        domain="toy",
        budget=24,
        rounds=2,
        seed=5,
        eval_workers=0,
        nodes=[
            NodeConfig(name="a", operator="toy-random"),
            NodeConfig(name="b", operator="toy-random"),
        ],
    )
    summary = run(config, tmp_path / "run", registry=registry)
    assert checker.problems == []
    assert checker.calls["dei_candidate_evaluated"] == summary.evaluated
    assert checker.calls["dei_round_ended"] == 4  # two nodes, two rounds
    assert checker.calls["dei_champion_received"] >= 1
    assert checker.calls["dei_run_finished"] == 1
    # and the check would notice a payload that does not fit
    assert _conforms({"event": "evaluated"}, core_hookspecs.EvaluatedEvent, "e") != []
    # a key this version does not declare is kept, and written back
    read = core_hookspecs.RunSummary.from_json({**summary.to_json(), "later": 1})
    assert read.extra == {"later": 1} and read.to_json() == {**summary.to_json(), "later": 1}


def test_the_plugins_own_specifications_are_checked_too() -> None:
    assert "dei_llm_providers" in {doc.name for _, doc in HOOKS}


def test_payload_records_are_reachable_from_the_hookspecs_module() -> None:
    for name in ("EvaluatedEvent", "RoundEvent", "RunSummary", "NodeSummary", "JSONValue"):
        assert inspect.getattr_static(core_hookspecs, name) is not None
