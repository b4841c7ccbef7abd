"""EmitterSpec: how a plugin registers an emitter."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from dei_framework.search.emitters._emitter_base import EmitterBase


@attrs.frozen(kw_only=True)
class EmitterSpec:
    """An emitter a plugin registers through ``dei_emitters``.

    Attributes:
        name: What users type after ``--emitter``.
        factory: ``factory(options)`` builds one node's emitter; ``options`` is a
            :class:`~dei_framework.contract.context.FactoryContext`, the mapping of the
            ``[emitter_options]`` table with the run's plugins and seed.
        description: One line for ``dei plugins``.
    """

    name: str
    factory: Callable[[Mapping[str, Any]], EmitterBase]
    description: str = ""
