"""The context a plugin factory receives: the loaded plugins, its options, the run seed, and
what its kind needs besides (the domain, the nodes)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from dei_framework.contract.domain import Domain
    from dei_framework.contract.registry import PluginRegistry


@attrs.frozen(kw_only=True)
class FactoryContext(Mapping[str, Any]):
    """What the core hands a plugin's factory, so that it never has to rediscover plugins.

    Every factory, of every kind, is called ``factory(ctx)`` with one: domain, transport,
    sharing, parent selector, archive and allocator factories with a
    :class:`FactoryContext`, operator factories with an
    :class:`~dei_framework.contract.operators.OperatorSettings` and evaluation backend
    factories with an :class:`~dei_framework.contract.backend.EvaluatorOptions` (subclasses
    that add what those kinds need). It is also the read-only mapping of its ``options``
    (``ctx["key"]``, ``dict(ctx)``, ``ctx.get(...)``), so a factory written as
    ``factory(options)`` works unchanged and one that needs more reads ``ctx.registry`` or
    ``ctx.seed``. As a mapping it is false without options, whatever its kind: test
    ``ctx.options`` or the attribute you need rather than the context itself.

    Factories of the two-argument shapes before 0.2 (``factory(settings, domain)`` for
    operators, ``factory(node_names, options)`` for transports, ``factory(domain, options)`` for
    evaluation backends) are refused when their plugin is loaded, naming the shape to write.

    Attributes:
        registry: The plugins of the run: other plugins' registrations, and every hook
            (``registry.manager.hook.<name>``), hooks added by plugins included. ``None`` only
            when a library user builds a context by hand without loading plugins.
        options: The component's options, already merged from flags and the config file.
        seed: The run seed.
        domain: The run's domain, for the kinds built for one (operators, evaluation
            backends); ``None`` for the others, and for the domain itself.
        node_names: The nodes to connect, for a transport (one endpoint each, in this order);
            empty for the other kinds.
    """

    registry: PluginRegistry | None = attrs.field(default=None, eq=False, repr=False)
    options: Mapping[str, Any] = attrs.field(factory=dict)
    seed: int = 0
    domain: Domain | None = attrs.field(default=None, eq=False, repr=False)
    node_names: tuple[str, ...] = attrs.field(default=(), converter=tuple)

    # --- the options as a read-only mapping ----------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        return self.options[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.options)

    def __len__(self) -> int:
        return len(self.options)
