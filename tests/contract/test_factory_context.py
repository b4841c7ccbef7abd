"""Every plugin factory gets a FactoryContext: its options as a read-only mapping (so factories
written as ``factory(options)`` keep working), the run's plugins and the run's seed."""

from __future__ import annotations

import types

import pytest
import toy_domain

from dei_framework import (
    ArchiveSpec,
    DomainSpec,
    FactoryContext,
    NodeConfig,
    OperatorSpec,
    RunConfig,
    SelectorSpec,
    SharingSpec,
    TransportSpec,
    hookimpl,
    load_plugins,
    run,
)


class Recorder:
    """Registers a domain, transport, sharing policy, selector and archive that record what
    their factories receive, then build the built-in ones found through the context."""

    def __init__(self) -> None:
        self.seen: dict[str, FactoryContext] = {}

    def _keep(self, kind: str, context: FactoryContext) -> FactoryContext:
        self.seen[kind] = context
        return context

    @hookimpl
    def dei_domains(self):
        return [
            DomainSpec(
                name="toy-ctx",
                description="toy, recording its context",
                factory=lambda c: toy_domain.ToyDomain(self._keep("domain", c)),
            )
        ]

    @hookimpl
    def dei_operators(self):
        return [
            OperatorSpec(
                name="toy-ctx-random",
                domains=("toy-ctx",),
                offline=True,
                factory=lambda ctx: toy_domain.ToyOperator("ctx"),
            )
        ]

    @hookimpl
    def dei_transports(self):
        def factory(context):
            inmemory = context.registry.transport("inmemory")
            return inmemory.factory(self._keep("transport", context))

        return [TransportSpec(name="inmemory-ctx", factory=factory, in_process=True)]

    @hookimpl
    def dei_sharing_policies(self):
        def factory(context):
            return context.registry.sharing_policy("top-k").factory(self._keep("sharing", context))

        return [SharingSpec(name="top-k-ctx", factory=factory)]

    @hookimpl
    def dei_parent_selectors(self):
        def factory(context):
            return context.registry.selector("uniform").factory(self._keep("selector", context))

        return [SelectorSpec(name="uniform-ctx", factory=factory)]

    @hookimpl
    def dei_archives(self):
        def factory(context):
            return context.registry.archive("grid").factory(self._keep("archive", context))

        return [ArchiveSpec(name="grid-ctx", factory=factory)]


def test_every_factory_gets_the_runs_plugins_seed_and_its_options(tmp_path) -> None:
    recorder = Recorder()
    registry = load_plugins(extra=[toy_domain, recorder])
    config = RunConfig(
        domain="toy-ctx",
        transport="inmemory-ctx",
        delivery="wallclock",
        sharing="top-k-ctx",
        selector="uniform-ctx",
        archive="grid-ctx",
        seed=41,
        budget=16,
        rounds=2,
        eval_workers=0,
        nodes=[NodeConfig(name=f"n{i}", operator="toy-ctx-random") for i in (0, 1)],
        domain_options={"improve": "Refine"},
        sharing_options={"k": 1},
    )
    summary = run(config, tmp_path / "run", registry=registry)
    assert summary.budget["calls"] == 16
    assert set(recorder.seen) == {"domain", "transport", "sharing", "selector", "archive"}
    for kind, context in recorder.seen.items():
        assert isinstance(context, FactoryContext), kind
        assert context.registry is registry and context.seed == 41, kind
        assert context.registry.domain("toy-ctx").name == "toy-ctx"
    # The options read as a mapping, the way factories written for a dict read them.
    domain_options = recorder.seen["domain"]
    assert dict(domain_options) == {"improve": "Refine"} and domain_options["improve"] == "Refine"
    assert recorder.seen["sharing"].get("k") == 1 and len(recorder.seen["selector"]) == 0
    with pytest.raises(TypeError):
        domain_options["improve"] = "Improve"  # read-only: a factory cannot change the run's


def test_a_plugin_registered_in_process_is_named_after_its_class() -> None:
    module = types.ModuleType("inline_plugin")  # a module plugin: named after the module
    registry = load_plugins(extra=[module, Recorder(), Recorder()])
    names = {name for name, _ in registry.manager.list_name_plugin()}
    assert {"inline_plugin", f"{__name__}.Recorder", f"{__name__}.Recorder#2"} <= names
