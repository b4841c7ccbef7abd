"""ArchiveSpec: how a plugin registers an archive."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from dei_framework.search.archives._archive_base import ArchiveBase

#: Builds an empty archive: ``factory(space=..., qd_offset=..., seed=...)``.
ArchiveFactory = Callable[..., ArchiveBase]


@attrs.frozen(kw_only=True)
class ArchiveSpec:
    """An archive a plugin registers through ``dei_archives``.

    Attributes:
        name: What users type after ``--archive``.
        factory: ``factory(options)`` returns an :data:`ArchiveFactory`; ``options`` is a
            :class:`~dei_framework.contract.context.FactoryContext`, the mapping of the
            ``[archive_options]`` table with the run's plugins and seed.
        description: One line for ``dei plugins``.
    """

    name: str
    factory: Callable[[Mapping[str, Any]], ArchiveFactory]
    description: str = ""
