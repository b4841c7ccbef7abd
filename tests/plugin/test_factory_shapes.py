"""One factory shape for every plugin kind, ``factory(ctx)``: each kind's factory is called
with a context carrying what the kind needs; a factory of an old two-argument shape (operators,
transports, evaluation backends) is refused at load in one line naming the plugin and what to
write (:func:`dei_framework.plugin._contract.old_factory_shape`); and the registry's lookups
are typed (no ``Any`` in the public signatures of ``contract/registry.py`` and
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
    PluginError,
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


#: A factory of each shape before 0.2, by hook: its spec, and the one line it is refused with.
OLD_SHAPES = {
    "dei_operators": (
        OperatorSpec(name="old-op", domains=("toy",), factory=lambda settings, domain: None),
        "plugin {plugin!r}: operator 'old-op': factory(settings, domain) takes the old shape; "
        "write factory(settings) and read settings.domain (see docs/writing-an-operator.md)",
    ),
    "dei_transports": (
        TransportSpec(name="old-transport", factory=lambda node_names, options: None),
        "plugin {plugin!r}: transport 'old-transport': factory(node_names, options) takes the old "
        "shape; write factory(ctx) and read ctx.node_names and ctx.options "
        "(see docs/writing-a-transport.md)",
    ),
    "dei_evaluation_backends": (
        EvaluatorSpec(name="old-backend", factory=lambda domain, options: None),
        "plugin {plugin!r}: evaluation backend 'old-backend': factory(domain, options) takes the "
        "old shape; write factory(options) and read options.domain (see docs/multi-machine.md)",
    ),
}


def _plugin(hook: str, spec: object) -> object:
    """A plugin object registering ``spec`` through ``hook``."""

    class Plugin:
        pass

    setattr(Plugin, hook, hookimpl(lambda self: [spec]))
    return Plugin()


def _load(hook: str, spec: object):
    return load_plugins(extra=[toy_domain, _plugin(hook, spec)], entry_points=False)


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


@pytest.mark.parametrize("hook", sorted(OLD_SHAPES))
def test_an_old_shape_is_refused_at_load_in_one_line_saying_what_to_write(hook) -> None:
    spec, message = OLD_SHAPES[hook]
    plugin = _plugin(hook, spec)
    with pytest.raises(PluginError) as caught:
        load_plugins(extra=[toy_domain, plugin], entry_points=False)
    name = f"{type(plugin).__module__}.{type(plugin).__qualname__}"  # as an in-process plugin's
    assert str(caught.value) == message.format(plugin=name)


def test_a_named_factory_is_named_and_star_args_are_an_old_shape_too() -> None:
    def create(settings, domain):
        return None

    with pytest.raises(
        PluginError,
        match=r"factory create\(settings, domain\) takes the old "
        r"shape; write create\(settings\)",
    ):
        _load("dei_operators", OperatorSpec(name="a", factory=create))
    with pytest.raises(PluginError, match=r"factory\(\*args\) takes the old shape"):
        _load("dei_transports", TransportSpec(name="b", factory=lambda *args: None))


def test_a_second_argument_with_a_default_is_the_new_shape() -> None:
    # ``lambda ctx, name=name:`` binds a loop variable: one argument is required
    spec = OperatorSpec(name="bound", domains=("toy",), factory=lambda ctx, name="x": name)
    registry = _load("dei_operators", spec)
    assert registry.operator("bound").factory(OperatorSettings(spec="bound", node="n0")) == "x"


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
def test_a_one_argument_factory_is_accepted_for_every_other_kind(hook) -> None:
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


def test_a_context_of_every_kind_is_the_mapping_of_its_options() -> None:
    # One rule for every kind: the context's truth and contents are its options'.
    assert not EvaluatorOptions() and not OperatorSettings(spec="x", node="n0")
    assert not FactoryContext()
    assert EvaluatorOptions(options={"a": 1}, workers=0)
    assert dict(OperatorSettings(spec="x", node="n0", options={"t": 0.5})) == {"t": 0.5}


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
