"""SelectorSpec: how a plugin registers a parent selector."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from dei_framework.contract.context import FactoryContext
from dei_framework.contract.registry import Kind
from dei_framework.search.selectors._parent_selector import ParentSelector


@attrs.frozen(kw_only=True)
class SelectorSpec:
    """A parent selector a plugin registers through ``dei_emitters`` (the hook, the
    ``--emitter`` flag and the ``emitter`` key keep the name they had when selectors were
    called emitters: they are the configuration and plugin contract).

    Attributes:
        name: What users type after ``--emitter``.
        factory: ``factory(ctx)`` builds one node's selector; ``ctx`` is a
            :class:`~dei_framework.contract.context.FactoryContext`, the mapping of the
            ``[emitter_options]`` table with the run's plugins and seed.
        description: One line for ``dei plugins``.
    """

    name: str
    factory: Callable[[FactoryContext], ParentSelector]
    description: str = ""


#: The parent selectors: ``registry.lookup(SELECTORS, name)`` is a :class:`SelectorSpec`.
SELECTORS: Kind[SelectorSpec] = Kind("dei_emitters")
