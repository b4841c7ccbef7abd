"""One factory shape for every plugin kind, ``factory(ctx)``
(:mod:`dei_framework.plugin._factory_shapes`): each kind's factory is called with a context
carrying what the kind needs; factories of the old two-argument shapes (operators, transports,
evaluation backends) keep working with one warning naming the plugin; and the registry's
lookups are typed (no ``Any`` in the public signatures of ``contract/registry.py`` and
``build_plugin``)."""

from __future__ import annotations

import inspect
import warnings

import attrs
import pytest
import toy_domain

from dei_framework import (
    ArchiveSpec,
    DomainSpec,
    EvaluatorOptions,
    EvaluatorSpec,
    FactoryContext,
    NodeConfig,
    OperatorSettings,
    OperatorSpec,
    RunConfig,
    SelectorSpec,
    SharingSpec,
    TransportSpec,
    hookimpl,
    load_plugins,
    run,
)
from dei_framework.contract import registry as registry_module
from dei_framework.contract.backend import EVALUATORS
from dei_framework.contract.cli_options import RUN_OPTIONS
from dei_framework.contract.descriptors import AXES
from dei_framework.contract.domain import DOMAINS
from dei_framework.contract.operators import OPERATORS
from dei_framework.contract.registry import REGISTRATION_HOOKS, Kind
from dei_framework.contract.transport import TRANSPORTS
from dei_framework.evaluation.local import LocalBackend
from dei_framework.runtime import builders
from dei_framework.search.allocation import ALLOCATORS, AllocatorSpec
from dei_framework.search.archives import ARCHIVES
from dei_framework.search.selectors import SELECTORS
from dei_framework.search.sharing import SHARING_POLICIES

KINDS = (
    "domain",
    "operator",
    "transport",
    "sharing",
    "allocator",
    "selector",
    "archive",
    "evaluator",
)


class NewShapes:
    """One plugin of every kind, each factory ``factory(ctx)``, recording its context and
    building the built-in (or toy) component through the context's registry."""

    def __init__(self) -> None:
        self.seen: dict[str, list[FactoryContext]] = {kind: [] for kind in KINDS}

    def _keep(self, kind: str, ctx: FactoryContext) -> FactoryContext:
        self.seen[kind].append(ctx)
        return ctx

    @hookimpl
    def dei_domains(self):
        return [
            DomainSpec(
                name="toy-new", factory=lambda ctx: toy_domain.ToyDomain(self._keep("domain", ctx))
            )
        ]

    @hookimpl
    def dei_operators(self):
        def factory(ctx):
            self._keep("operator", ctx)
            return toy_domain.ToyOperator("new")

        return [OperatorSpec(name="toy-new-op", domains=("toy-new",), factory=factory)]

    @hookimpl
    def dei_transports(self):
        def factory(ctx):
            return ctx.registry.transport("inmemory").factory(self._keep("transport", ctx))

        return [TransportSpec(name="inmemory-new", factory=factory, in_process=True)]

    @hookimpl
    def dei_sharing_policies(self):
        def factory(ctx):
            return ctx.registry.sharing_policy("top-k").factory(self._keep("sharing", ctx))

        return [SharingSpec(name="top-k-new", factory=factory)]

    @hookimpl
    def dei_budget_allocators(self):
        def factory(ctx):
            return ctx.registry.allocator("static").factory(self._keep("allocator", ctx))

        return [AllocatorSpec(name="static-new", factory=factory)]

    @hookimpl
    def dei_parent_selectors(self):
        def factory(ctx):
            return ctx.registry.selector("uniform").factory(self._keep("selector", ctx))

        return [SelectorSpec(name="uniform-new", factory=factory)]

    @hookimpl
    def dei_archives(self):
        def factory(ctx):
            return ctx.registry.archive("grid").factory(self._keep("archive", ctx))

        return [ArchiveSpec(name="grid-new", factory=factory)]

    @hookimpl
    def dei_evaluation_backends(self):
        def factory(ctx):
            return ctx.registry.evaluator("local").factory(self._keep("evaluator", ctx))

        return [EvaluatorSpec(name="local-new", factory=factory)]


class OldShapes:
    """An operator, a transport and an evaluation backend with factories of the shapes before
    0.2, recording the arguments they were called with."""

    def __init__(self) -> None:
        self.calls: dict[str, tuple[object, object]] = {}

    @hookimpl
    def dei_operators(self):
        def factory(settings, domain):
            self.calls["operator"] = (settings, domain)
            return toy_domain.ToyOperator("old")

        return [OperatorSpec(name="toy-old-op", domains=("toy",), factory=factory)]

    @hookimpl
    def dei_transports(self):
        def factory(node_names, options):
            self.calls["transport"] = (node_names, options)
            inmemory = options.registry.transport("inmemory")
            return inmemory.factory(attrs.evolve(options, node_names=node_names))

        return [TransportSpec(name="inmemory-old", factory=factory, in_process=True)]

    @hookimpl
    def dei_evaluation_backends(self):
        def factory(domain, options):
            self.calls["evaluator"] = (domain, options)
            return LocalBackend(domain, workers=options.workers)

        return [EvaluatorSpec(name="local-old", factory=factory)]


def _config(**fields) -> RunConfig:
    return RunConfig(
        **{
            "delivery": "wallclock",
            "seed": 41,
            "budget": 16,
            "rounds": 2,
            "eval_workers": 0,
            **fields,
        }
    )


@pytest.fixture(scope="module")
def new_run(tmp_path_factory):
    plugin = NewShapes()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the new shape warns nothing
        registry = load_plugins(extra=[toy_domain, plugin])
        config = _config(
            domain="toy-new",
            transport="inmemory-new",
            sharing="top-k-new",
            allocation="static-new",
            selector="uniform-new",
            archive="grid-new",
            evaluator="local-new",
            nodes=[NodeConfig(name=f"n{i}", operator="toy-new-op") for i in (0, 1)],
            domain_options={"improve": "Refine"},
        )
        run(config, tmp_path_factory.mktemp("new") / "run", registry=registry)
    return plugin, registry


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_is_called_with_one_context(new_run, kind) -> None:
    plugin, registry = new_run
    assert plugin.seen[kind], f"the {kind} factory was not called"
    for ctx in plugin.seen[kind]:
        assert isinstance(ctx, FactoryContext)
        assert ctx.registry is registry and ctx.seed == 41


def test_each_kind_finds_what_it_needs_in_the_context(new_run) -> None:
    plugin, _ = new_run
    domain = plugin.seen["operator"][0].domain
    assert domain is not None and domain.name == "toy"
    operators = plugin.seen["operator"]
    assert all(isinstance(ctx, OperatorSettings) for ctx in operators)
    assert sorted(ctx.node for ctx in operators) == ["n0", "n1"]
    assert all(ctx.domain is domain for ctx in operators)
    (backend,) = plugin.seen["evaluator"]
    assert isinstance(backend, EvaluatorOptions) and backend.domain is domain
    assert backend.workers == 0
    (transport,) = plugin.seen["transport"]
    assert transport.node_names == ("n0", "n1")
    assert plugin.seen["domain"][0].domain is None  # the domain is what this one builds
    assert dict(plugin.seen["domain"][0]) == {"improve": "Refine"}


def test_an_old_shape_warns_once_per_factory_at_registration_naming_the_plugin() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        load_plugins(extra=[toy_domain, OldShapes()])
    messages = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(messages) == 3
    for name, shape in (
        ("toy-old-op", "factory(settings, domain)"),
        ("inmemory-old", "factory(node_names, options)"),
        ("local-old", "factory(domain, options)"),
    ):
        (message,) = [message for message in messages if repr(name) in message]
        assert f"plugin '{__name__}.OldShapes'" in message
        assert shape in message and "factory(ctx)" in message


def test_an_old_shape_still_builds_with_the_old_arguments(tmp_path) -> None:
    plugin = OldShapes()
    with pytest.warns(DeprecationWarning):
        registry = load_plugins(extra=[toy_domain, plugin])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # no warning per call
        config = _config(
            domain="toy",
            transport="inmemory-old",
            evaluator="local-old",
            nodes=[NodeConfig(name=f"n{i}", operator="toy-old-op") for i in (0, 1)],
        )
        summary = run(config, tmp_path / "run", registry=registry)
    assert summary.budget["calls"] == 16
    settings, domain = plugin.calls["operator"]
    assert isinstance(settings, OperatorSettings) and domain.name == "toy"
    node_names, options = plugin.calls["transport"]
    assert node_names == ["n0", "n1"] and isinstance(options, FactoryContext)
    domain, options = plugin.calls["evaluator"]
    assert domain.name == "toy" and options.workers == 0


@pytest.mark.parametrize(
    "hook",
    [
        "dei_domains",
        "dei_sharing_policies",
        "dei_budget_allocators",
        "dei_parent_selectors",
        "dei_archives",
    ],
)
def test_a_one_argument_factory_was_always_this_shape_and_warns_nothing(hook) -> None:
    kind = Kind(hook)
    specs = {
        "dei_domains": DomainSpec(name="x", factory=lambda options: dict(options)),
        "dei_sharing_policies": SharingSpec(name="x", factory=lambda options: dict(options)),
        "dei_budget_allocators": AllocatorSpec(name="x", factory=lambda options: dict(options)),
        "dei_parent_selectors": SelectorSpec(name="x", factory=lambda options: dict(options)),
        "dei_archives": ArchiveSpec(name="x", factory=lambda options: dict(options)),
    }

    class Plugin:
        pass

    setattr(Plugin, hook, hookimpl(lambda self: [specs[hook]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        registry = load_plugins(extra=[Plugin()], entry_points=False)
    spec = registry.lookup(kind, "x")
    assert spec.factory(FactoryContext(options={"a": 1})) == {"a": 1}


def test_calling_a_registered_factory_the_old_way_still_works_with_a_warning() -> None:
    registry = load_plugins(extra=[toy_domain])
    domain = registry.domain("toy").factory({})
    settings = OperatorSettings(spec="toy-random", node="n0", registry=registry)
    with pytest.warns(DeprecationWarning, match=r"factory\(settings, domain\) is deprecated"):
        operator = registry.operator("toy-random").factory(settings, domain)
    assert operator.label == "toy-random"
    with pytest.warns(DeprecationWarning, match=r"factory\(node_names, options\)"):
        transports = registry.transport("inmemory").factory(["a", "b"], {})
    assert len(transports) == 2


def test_a_context_keeps_the_truth_of_what_it_replaced() -> None:
    # Operator settings and backend options were records, always true, before they became
    # mappings of their options; a factory testing ``if options:`` must not change branch.
    assert EvaluatorOptions()
    assert EvaluatorOptions(options={}, workers=0)
    assert OperatorSettings(spec="x", node="n0")
    assert len(EvaluatorOptions()) == 0 and dict(OperatorSettings(spec="x", node="n0")) == {}
    # A plain context stands for the options dict of the one-argument kinds: false when empty.
    assert not FactoryContext()
    assert FactoryContext(options={"a": 1})


# --- typed lookups -------------------------------------------------------------------------------


def test_every_registration_hook_has_a_typed_kind() -> None:
    kinds = [
        DOMAINS,
        OPERATORS,
        TRANSPORTS,
        SHARING_POLICIES,
        ALLOCATORS,
        AXES,
        SELECTORS,
        ARCHIVES,
        EVALUATORS,
        RUN_OPTIONS,
    ]
    assert sorted(kind.hook for kind in kinds) == sorted(REGISTRATION_HOOKS)


def test_a_typed_lookup_gives_the_kinds_spec() -> None:
    registry = load_plugins(extra=[toy_domain])
    assert isinstance(registry.lookup(DOMAINS, "toy"), DomainSpec)
    assert isinstance(registry.lookup(OPERATORS, "toy-random"), OperatorSpec)
    assert isinstance(registry.lookup(SHARING_POLICIES, "top-k"), SharingSpec)
    assert isinstance(registry.lookup(ALLOCATORS, "static"), AllocatorSpec)
    assert isinstance(registry.lookup(EVALUATORS, "local"), EvaluatorSpec)
    assert registry.entries(ARCHIVES)["grid"].plugin == "dei_framework"


def _public_signatures(module) -> dict[str, inspect.Signature]:
    found = {}
    for name, value in vars(module).items():
        if name.startswith("_") or getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(value):
            found[name] = inspect.signature(value)
        elif inspect.isclass(value):
            for attribute, member in vars(value).items():
                if inspect.isfunction(member) and not attribute.startswith("_"):
                    found[f"{name}.{attribute}"] = inspect.signature(member)
            for field in attrs.fields(value) if attrs.has(value) else ():
                if not field.name.startswith("_"):
                    found[f"{name}.{field.name}"] = inspect.Signature(return_annotation=field.type)
    return found


def test_the_registry_and_build_plugin_name_no_any() -> None:
    signatures = _public_signatures(registry_module)
    signatures["build_plugin"] = inspect.signature(builders.build_plugin)
    assert {"PluginRegistry.lookup", "PluginRegistry.operator", "Registered.spec"} <= set(
        signatures
    )
    untyped = [
        name
        for name, signature in signatures.items()
        if "Any" in str(signature.return_annotation)
        or any("Any" in str(p.annotation) for p in signature.parameters.values())
    ]
    assert untyped == []
