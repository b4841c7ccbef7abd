"""ArchiveSpec: how a plugin registers an archive."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from dei_framework.contract.context import FactoryContext
from dei_framework.contract.registry import Kind
from dei_framework.search.archives._archive_base import ArchiveBase

#: Builds an empty archive: ``factory(space=..., qd_offset=..., seed=...)``.
ArchiveFactory = Callable[..., ArchiveBase]


@attrs.frozen(kw_only=True)
class ArchiveSpec:
    """An archive a plugin registers through ``dei_archives``.

    Attributes:
        name: What users type after ``--archive``.
        factory: ``factory(ctx)`` returns an :data:`ArchiveFactory`; ``ctx`` is a
            :class:`~dei_framework.contract.context.FactoryContext`, the mapping of the
            ``[archive_options]`` table with the run's plugins and seed.
        description: One line for ``dei plugins``.
    """

    name: str
    factory: Callable[[FactoryContext], ArchiveFactory]
    description: str = ""


#: The archives: ``registry.lookup(ARCHIVES, name)`` is an :class:`ArchiveSpec`.
ARCHIVES: Kind[ArchiveSpec] = Kind("dei_archives")
