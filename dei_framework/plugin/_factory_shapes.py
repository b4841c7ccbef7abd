"""One factory shape for every plugin kind: ``factory(ctx)``; the shapes before 0.2 adapted.

Operators were built as ``factory(settings, domain)``, transports as
``factory(node_names, options)`` and evaluation backends as ``factory(domain, options)``; every
kind now takes one :class:`~dei_framework.contract.context.FactoryContext` (``ctx.domain``,
``ctx.node_names``). A factory of an old shape is found by its signature when its plugin is
registered (it requires a second positional argument) and wrapped in an adapter that calls it
the old way, with one :class:`DeprecationWarning` naming the plugin and the new shape. The
kinds whose factories always took one argument (domains, sharing policies, allocators, parent
selectors, archives) need no adapter: the context is the mapping of the options they got.

Code that calls a registered factory of those kinds the old way (``spec.factory(settings,
domain)``, as ``docs/library.md`` showed, or a plugin wrapping another's transport) keeps
working too: the registry's factory of those kinds is a :class:`TwoShapeFactory`, which turns
an old call into a context, with a :class:`DeprecationWarning`.

Both adapters are for one release (0.2); then old shapes fail as any wrong signature does."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from typing import TypeVar

import attrs

from dei_framework._deprecation import DEIDeprecationWarning
from dei_framework.contract.context import FactoryContext

SpecT = TypeVar("SpecT")
#: A factory of the kinds adapted here, of either shape.
AnyFactory = Callable[..., object]


def _old_operator(factory: AnyFactory, ctx: FactoryContext) -> object:
    return factory(ctx, ctx.domain)


def _old_transport(factory: AnyFactory, ctx: FactoryContext) -> object:
    return factory(list(ctx.node_names), ctx)


def _old_backend(factory: AnyFactory, ctx: FactoryContext) -> object:
    return factory(ctx.domain, ctx)


def _operator_context(settings: FactoryContext, domain: object) -> FactoryContext:
    return attrs.evolve(settings, domain=domain)


def _transport_context(node_names: object, options: Mapping[str, object]) -> FactoryContext:
    if isinstance(options, FactoryContext):
        return attrs.evolve(options, node_names=node_names)
    return FactoryContext(options=dict(options), node_names=node_names)


def _backend_context(domain: object, options: FactoryContext) -> FactoryContext:
    return attrs.evolve(options, domain=domain)


@attrs.frozen
class OldShape:
    """A kind's factory shape before 0.2.

    Attributes:
        text: The shape, for messages (``"factory(settings, domain)"``).
        call: Calls a factory of that shape with a context.
        context: Makes the context of an old call's two arguments.
    """

    text: str
    call: Callable[[AnyFactory, FactoryContext], object]
    context: Callable[[object, object], FactoryContext]


#: The registration hooks whose factories had two arguments, and their old shape.
OLD_SHAPES: dict[str, OldShape] = {
    "dei_operators": OldShape("factory(settings, domain)", _old_operator, _operator_context),
    "dei_transports": OldShape("factory(node_names, options)", _old_transport, _transport_context),
    "dei_evaluation_backends": OldShape("factory(domain, options)", _old_backend, _backend_context),
}


def takes_old_shape(factory: AnyFactory) -> bool:
    """Whether ``factory`` is of a two-argument shape: it requires a second positional argument,
    or takes only ``*args``. Parameters with defaults do not count (``lambda ctx, name=name:``
    binds a loop variable). A callable whose signature cannot be read is taken as old, as it
    was called before 0.2."""
    try:
        parameters = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in parameters if p.kind in positional and p.default is p.empty]
    variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
    return len(required) >= 2 or (variadic and not required)


@attrs.frozen
class TwoShapeFactory:
    """A registered factory of a kind that had two arguments: called ``factory(ctx)``, as
    every factory is, or the old way (one release), with a warning.

    Attributes:
        factory: The plugin's factory.
        shape: The kind's old shape.
        old: Whether the plugin's factory is of the old shape (it is then called that way).
        label: ``plugin 'x': operator 'y'``, for messages.
    """

    factory: AnyFactory
    shape: OldShape
    old: bool
    label: str

    def __call__(self, ctx: FactoryContext, *old_arguments: object) -> object:
        if old_arguments:
            warnings.warn(
                f"{self.label}: calling its factory as {self.shape.text} is deprecated; call "
                "factory(ctx) (ctx.domain, ctx.node_names and the options are in the context)",
                DEIDeprecationWarning,
                stacklevel=2,
            )
            ctx = self.shape.context(ctx, *old_arguments)
        if self.old:
            return self.shape.call(self.factory, ctx)  # type: ignore[arg-type]
        return self.factory(ctx)


def adapt(hook: str, kind: str, spec: SpecT, plugin: str) -> SpecT:
    """``spec`` with a factory called ``factory(ctx)``: itself when its kind's factories always
    took one argument, else a copy whose factory is a :class:`TwoShapeFactory`; one whose
    factory is of the old shape is reported with one :class:`DeprecationWarning` naming the
    plugin, the spec and the new shape."""
    shape = OLD_SHAPES.get(hook)
    factory = getattr(spec, "factory", None)
    if shape is None or not attrs.has(type(spec)) or not callable(factory):
        return spec
    if isinstance(factory, TwoShapeFactory):  # registered again (e.g. by a wrapping plugin)
        return spec
    label = f"plugin {plugin!r}: {kind} {getattr(spec, 'name', '?')!r}"
    old = takes_old_shape(factory)
    if old:
        warnings.warn(
            f"{label} has a factory of the old shape {shape.text}; write factory(ctx) "
            "(ctx.domain, ctx.node_names and the options are in the context); the old shape "
            "is adapted for one release",
            DEIDeprecationWarning,
            stacklevel=2,
        )
    return attrs.evolve(spec, factory=TwoShapeFactory(factory, shape, old, label))
