"""Archives: where a node keeps its elites, one per cell.

* :class:`ArchiveBase` — what every archive offers (``add`` returns an :class:`AddStatus`,
  ``stats`` an :class:`ArchiveStats`, ``occupied`` an :class:`OccupiedElites` view with O(1)
  indexed access); subclass it to write your own.
* :class:`GridArchive` — the paper's grid over binned descriptor axes.
* :class:`CVTArchive` — Voronoi cells around seeded centroids, for three or more axes.
* :class:`ArchiveSpec` — how a plugin registers an archive (hook ``dei_archives``).

May import: what ``search`` may import (:mod:`dei_framework.contract`) and the other modules of
``search``.

Modules:
    _archive_base.py     ArchiveBase, OccupiedElites: one elite per cell, explicit add statuses
    _grid_archive.py     GridArchive: the paper's grid, one bin range per descriptor axis
    _cvt_archive.py      CVTArchive: Voronoi cells around seeded centroids (three or more axes)
    _add_status.py       AddStatus: what offering a candidate to an archive did
    _archive_spec.py     ArchiveSpec: how a plugin registers an archive
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from dei_framework.contract.archive_stats import ArchiveStats
from dei_framework.contract.errors import ConfigError
from dei_framework.search.archives._add_status import AddStatus
from dei_framework.search.archives._archive_base import ArchiveBase, OccupiedElites
from dei_framework.search.archives._archive_spec import ARCHIVES, ArchiveFactory, ArchiveSpec
from dei_framework.search.archives._cvt_archive import CVTArchive
from dei_framework.search.archives._grid_archive import GridArchive


def _cvt(options: Mapping[str, Any]) -> ArchiveFactory:
    unknown = set(options) - {"cells", "samples", "centroid_seed"}
    if unknown:
        raise ConfigError(
            f"cvt archive: unknown options {sorted(unknown)} (known: cells, samples, centroid_seed)"
        )
    return partial(CVTArchive, **options)


def _grid(options: Mapping[str, Any]) -> ArchiveFactory:
    if options:
        raise ConfigError(f"grid archive takes no options, got {sorted(options)}")
    return GridArchive


#: The archives the core registers through its built-in plugin.
BUILTIN_ARCHIVES = (
    ArchiveSpec(
        name="grid",
        factory=_grid,
        description="the paper's MAP-Elites grid over the binned descriptor axes",
    ),
    ArchiveSpec(
        name="cvt",
        factory=_cvt,
        description="Voronoi cells for 3+ axes (options cells, samples, centroid_seed)",
    ),
)

__all__ = [
    "ARCHIVES",
    "BUILTIN_ARCHIVES",
    "AddStatus",
    "ArchiveBase",
    "ArchiveFactory",
    "ArchiveSpec",
    "ArchiveStats",
    "CVTArchive",
    "GridArchive",
    "OccupiedElites",
]
