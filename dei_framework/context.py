"""The context a plugin factory receives: the loaded plugins, its options and the run seed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from dei_framework.registry import PluginRegistry


@attrs.frozen(kw_only=True)
class FactoryContext:
    """What the core hands a plugin's factory, so that it never has to rediscover plugins.

    Operator factories receive it as :class:`~dei_framework.operators.OperatorSettings` (a
    subclass that adds the node and what the user typed).

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
