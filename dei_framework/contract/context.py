"""The context a plugin factory receives: the loaded plugins, its options and the run seed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from dei_framework.contract.registry import PluginRegistry


@attrs.frozen(kw_only=True)
class FactoryContext(Mapping[str, Any]):
    """What the core hands a plugin's factory, so that it never has to rediscover plugins.

    Every factory gets one: domain, transport, sharing, parent selector (emitter) and archive
    factories as their options argument, operator factories as
    :class:`~dei_framework.contract.operators.OperatorSettings`
    (a subclass that adds the node and what the user typed). It is also the read-only mapping
    of its ``options`` (``context["key"]``, ``dict(context)``, ``context.get(...)``), so a
    factory written as ``factory(options)`` works unchanged and one that needs more reads
    ``context.registry`` or ``context.seed``.

    Attributes:
        registry: The plugins of the run: other plugins' registrations, and every hook
            (``registry.manager.hook.<name>``), hooks added by plugins included. ``None`` only
            when a library user builds a context by hand without loading plugins.
        options: The component's options, already merged from flags and the config file.
        seed: The run seed.
    """

    registry: PluginRegistry | None = attrs.field(default=None, eq=False, repr=False)
    options: Mapping[str, Any] = attrs.field(factory=dict)
    seed: int = 0

    # --- the options as a read-only mapping ----------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        return self.options[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.options)

    def __len__(self) -> int:
        return len(self.options)
