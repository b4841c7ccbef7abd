"""ArchiveBase: what every archive offers (one elite per cell, explicit add statuses)."""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import numpy as np

from dei_framework.archives._add_status import AddStatus
from dei_framework.archives._archive_stats import ArchiveStats
from dei_framework.descriptors import DescriptorSpace
from dei_framework.records import Candidate


class ArchiveBase(abc.ABC):
    """A MAP-Elites archive: a fixed set of cells over a descriptor space, one elite per cell.

    Subclasses say how many cells there are (:attr:`cells`) and which cell a descriptor falls
    in (:meth:`index_of`); insertion, queries, statistics and persistence are shared.

    Args:
        space: The descriptor space (its axes name the descriptor values used; a grid archive
            also uses its binning).
        qd_offset: Subtracted from every fitness in the QD-score; set it to the domain's lowest
            possible fitness so the score never decreases when a cell fills.
        seed: Seed of the archive's own generator (used by :meth:`sample` and, for CVT
            archives, to place the centroids).
    """

    #: Short name recorded in the archive's JSON (``"grid"``, ``"cvt"``).
    kind: str = ""

    def __init__(self, *, space: DescriptorSpace, qd_offset: float = 0.0, seed: int | None = None):
        self.space = space
        self.qd_offset = float(qd_offset)
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        self._elites: dict[int, Candidate] = {}

    # --- what subclasses define -----------------------------------------------------------------

    @property
    @abc.abstractmethod
    def cells(self) -> int:
        """Number of cells."""

    @abc.abstractmethod
    def index_of(self, descriptor: Mapping[str, float]) -> int:
        """The flat cell index of a raw descriptor."""

    def cell_of(self, descriptor: Mapping[str, float]) -> tuple[int, ...]:
        """The cell of a raw descriptor, as recorded on elites (a tuple)."""
        return (self.index_of(descriptor),)

    def _flat(self, cell: tuple[int, ...]) -> int:
        return int(cell[0])

    # --- queries --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._elites)

    def __iter__(self) -> Iterator[Candidate]:
        """Elites in cell order."""
        return (self._elites[i] for i in sorted(self._elites))

    def __contains__(self, cell: tuple[int, ...]) -> bool:
        return self._flat(tuple(cell)) in self._elites

    def elite_at(self, cell: tuple[int, ...]) -> Candidate | None:
        """The elite in ``cell``, or ``None``."""
        return self._elites.get(self._flat(tuple(cell)))

    def best(self) -> Candidate | None:
        """The elite with the highest fitness (ties: the lowest cell index), or ``None``."""
        if not self._elites:
            return None
        return max(self, key=lambda elite: elite.fitness)

    def sample(self, n: int = 1) -> list[Candidate]:
        """Draws ``n`` elites uniformly over occupied cells (with replacement).

        Raises:
            IndexError: the archive is empty.
        """
        if not self._elites:
            raise IndexError("cannot sample from an empty archive")
        occupied = sorted(self._elites)
        return [self._elites[occupied[int(i)]] for i in self._rng.integers(len(occupied), size=n)]

    def fitness_grid(self) -> np.ndarray:
        """Best fitness per grid cell of :attr:`space`, ``nan`` where empty (for heatmaps).

        Archives whose cells are not the grid's project their elites onto it.
        """
        grid = np.full(self.space.shape, np.nan)
        for elite in self:
            cell = self.space.cell(elite.descriptor)
            if not grid[cell] >= elite.fitness:
                grid[cell] = elite.fitness
        return grid

    def stats(self) -> ArchiveStats:
        """Current statistics."""
        values = np.array([elite.fitness for elite in self], dtype=float)
        n = len(values)
        return ArchiveStats(
            num_elites=n,
            cells=self.cells,
            coverage=n / self.cells,
            qd_score=float(np.sum(values - self.qd_offset)) if n else 0.0,
            qd_offset=self.qd_offset,
            obj_max=float(values.max()) if n else None,
            obj_mean=float(values.mean()) if n else None,
        )

    # --- updates --------------------------------------------------------------------------------

    def add(self, elite: Candidate) -> AddStatus:
        """Offers an elite; its ``cell`` is recomputed from its descriptor.

        It takes an empty cell (``NEW``) or replaces an elite of strictly lower fitness
        (``IMPROVE_EXISTING``); otherwise nothing changes (``NOT_ADDED``, also for a missing or
        non-finite fitness).
        """
        if elite.fitness is None or not np.isfinite(elite.fitness):
            return AddStatus.NOT_ADDED
        index = self.index_of(elite.descriptor)
        cell = self.cell_of(elite.descriptor)
        if cell != elite.cell:
            elite = attrs.evolve(elite, cell=cell)
        current = self._elites.get(index)
        if current is None:
            status = AddStatus.NEW
        elif elite.fitness > current.fitness:
            status = AddStatus.IMPROVE_EXISTING
        else:
            return AddStatus.NOT_ADDED
        self._elites[index] = elite
        return status

    def add_if_empty(self, elite: Candidate) -> AddStatus:
        """Adds ``elite`` only when its cell is empty (how peer champions seed an archive)."""
        if self.index_of(elite.descriptor) in self._elites:
            return AddStatus.NOT_ADDED
        return self.add(elite)

    # --- persistence ----------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """JSON form: kind, space, offset, elites (floats round-trip exactly)."""
        return {
            "type": self.kind,
            "space": self.space.to_json(),
            "qd_offset": self.qd_offset,
            "elites": [elite.to_json() for elite in self],
        }

    def fill_from_json(self, data: Mapping[str, Any]) -> ArchiveBase:
        """Adds the elites of :meth:`to_json` output (of any archive kind); returns ``self``."""
        for item in data["elites"]:
            self.add(Candidate.from_json(item))
        return self
