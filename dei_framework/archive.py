"""The MAP-Elites archive: a grid of cells over descriptor axes, one elite per cell.

Follows pyribs' shape: :meth:`GridArchive.add` returns an explicit :class:`AddStatus`, and
:meth:`GridArchive.stats` returns an :class:`ArchiveStats` value.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs
import numpy as np

from dei_framework.descriptors import DescriptorSpace
from dei_framework.errors import ConfigError


class AddStatus(enum.IntEnum):
    """What :meth:`GridArchive.add` did; truthy when the candidate was added.

    Ordered by how good the outcome was: ``NOT_ADDED < IMPROVE_EXISTING < NEW``.
    """

    NOT_ADDED = 0
    IMPROVE_EXISTING = 1
    NEW = 2

    @property
    def label(self) -> str:
        """The lowercase name used in event logs (``new``, ``improve_existing``, ``not_added``)."""
        return self.name.lower()


@attrs.frozen(kw_only=True)
class Elite:
    """A program stored in the archive.

    Attributes:
        id: Candidate id (unique within a run).
        text: Program text.
        fitness: Fitness measured in the round of the archive.
        descriptor: Raw descriptor values by axis name.
        cell: Grid cell (one bin index per axis).
        node: Node that evaluated it.
        operator: Label of the operator that wrote it (or ``"initial"``, ``"peer:<node>"``...).
        round: Round of the archive it was evaluated for.
        parent: Id of the elite it was mutated from, if any.
    """

    id: str
    text: str
    fitness: float
    descriptor: Mapping[str, float]
    cell: tuple[int, ...] = attrs.field(converter=tuple)
    node: str = ""
    operator: str = ""
    round: int = 0
    parent: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self)
        data["cell"] = list(self.cell)
        data["descriptor"] = dict(self.descriptor)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Elite:
        return cls(**{**data, "cell": tuple(data["cell"])})


@attrs.frozen(kw_only=True)
class ArchiveStats:
    """Summary statistics of an archive."""

    #: Number of occupied cells.
    num_elites: int
    #: Number of cells in the grid.
    cells: int
    #: ``num_elites / cells``.
    coverage: float
    #: Sum over elites of ``fitness - offset`` (the offset keeps it non-negative).
    qd_score: float
    #: The offset subtracted from each fitness in ``qd_score``.
    qd_offset: float
    #: Best fitness, or ``None`` when empty.
    obj_max: float | None
    #: Mean elite fitness, or ``None`` when empty.
    obj_mean: float | None

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


class GridArchive:
    """A MAP-Elites grid archive.

    Args:
        space: The descriptor space defining the grid.
        qd_offset: Subtracted from every fitness when computing the QD-score; set it to the
            domain's lowest possible fitness so the score never decreases when a cell fills.
        seed: Seed of the generator used by :meth:`sample`.

    Example:
        >>> from dei_framework.descriptors import DescriptorSpace, ThresholdAxis
        >>> archive = GridArchive(space=DescriptorSpace([ThresholdAxis("x", (1, 10))]), seed=0)
        >>> archive.add(Elite(id="a", text="...", fitness=1.0, descriptor={"x": 5}, cell=()))
        <AddStatus.NEW: 2>
    """

    def __init__(self, *, space: DescriptorSpace, qd_offset: float = 0.0, seed: int | None = None):
        self.space = space
        self.qd_offset = float(qd_offset)
        self._fitness = np.full(space.cells, -np.inf)
        self._occupied = np.zeros(space.cells, dtype=bool)
        self._elites: dict[int, Elite] = {}
        self._rng = np.random.default_rng(seed)

    # --- queries --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._elites)

    def __iter__(self) -> Iterator[Elite]:
        return (self._elites[i] for i in sorted(self._elites))

    def __contains__(self, cell: tuple[int, ...]) -> bool:
        return bool(self._occupied[self._flat(cell)])

    def elite_at(self, cell: tuple[int, ...]) -> Elite | None:
        """The elite in ``cell``, or ``None``."""
        return self._elites.get(self._flat(cell))

    def cell_of(self, descriptor: Mapping[str, float]) -> tuple[int, ...]:
        """The grid cell of a raw descriptor."""
        return self.space.cell(descriptor)

    def best(self) -> Elite | None:
        """The elite with the highest fitness (ties: the lowest cell index), or ``None``."""
        if not self._elites:
            return None
        return self._elites[int(np.argmax(self._fitness))]

    def sample(self, n: int = 1) -> list[Elite]:
        """Draws ``n`` elites uniformly over occupied cells (with replacement).

        Raises:
            IndexError: the archive is empty.
        """
        if not self._elites:
            raise IndexError("cannot sample from an empty archive")
        occupied = np.flatnonzero(self._occupied)
        return [self._elites[int(i)] for i in self._rng.choice(occupied, size=n)]

    def fitness_grid(self) -> np.ndarray:
        """Fitness per cell shaped like the grid, ``nan`` where empty (for heatmaps)."""
        grid = np.where(self._occupied, self._fitness, np.nan)
        return grid.reshape(self.space.shape)

    def stats(self) -> ArchiveStats:
        """Current statistics."""
        n = len(self._elites)
        values = self._fitness[self._occupied]
        return ArchiveStats(
            num_elites=n,
            cells=self.space.cells,
            coverage=n / self.space.cells,
            qd_score=float(np.sum(values - self.qd_offset)) if n else 0.0,
            qd_offset=self.qd_offset,
            obj_max=float(values.max()) if n else None,
            obj_mean=float(values.mean()) if n else None,
        )

    # --- updates --------------------------------------------------------------------------------

    def add(self, elite: Elite) -> AddStatus:
        """Offers an elite; its ``cell`` is recomputed from its descriptor.

        It takes an empty cell (``NEW``) or replaces an elite of strictly lower fitness
        (``IMPROVE_EXISTING``); otherwise nothing changes (``NOT_ADDED``).
        """
        cell = self.space.cell(elite.descriptor)
        if cell != elite.cell:
            elite = attrs.evolve(elite, cell=cell)
        index = self._flat(cell)
        if not np.isfinite(elite.fitness):
            return AddStatus.NOT_ADDED
        if not self._occupied[index]:
            status = AddStatus.NEW
        elif elite.fitness > self._fitness[index]:
            status = AddStatus.IMPROVE_EXISTING
        else:
            return AddStatus.NOT_ADDED
        self._occupied[index] = True
        self._fitness[index] = elite.fitness
        self._elites[index] = elite
        return status

    def add_if_empty(self, elite: Elite) -> AddStatus:
        """Adds ``elite`` only when its cell is empty (how peer champions seed an archive)."""
        if self.space.cell(elite.descriptor) in self:
            return AddStatus.NOT_ADDED
        return self.add(elite)

    def _flat(self, cell: tuple[int, ...]) -> int:
        return int(np.ravel_multi_index(cell, self.space.shape))

    # --- merging and persistence ----------------------------------------------------------------

    @classmethod
    def merge(cls, archives: Iterable[GridArchive], *, seed: int | None = None) -> GridArchive:
        """The best elite per cell across ``archives`` (which must share one space).

        Ties keep the elite from the earliest archive, so merging is deterministic.

        Raises:
            ConfigError: the archives have different descriptor spaces, or there are none.
        """
        archives = list(archives)
        if not archives:
            raise ConfigError("nothing to merge")
        first = archives[0]
        merged = cls(space=first.space, qd_offset=first.qd_offset, seed=seed)
        for archive in archives:
            if archive.space != first.space:
                raise ConfigError("cannot merge archives over different descriptor spaces")
            for elite in archive:
                merged.add(elite)
        return merged

    def to_json(self) -> dict[str, Any]:
        """Lossless JSON form (floats round-trip exactly through Python's ``json``)."""
        return {
            "space": self.space.to_json(),
            "qd_offset": self.qd_offset,
            "elites": [elite.to_json() for elite in self],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, seed: int | None = None) -> GridArchive:
        """Rebuilds an archive from :meth:`to_json` output."""
        archive = cls(
            space=DescriptorSpace.from_json(data["space"]),
            qd_offset=data.get("qd_offset", 0.0),
            seed=seed,
        )
        for item in data["elites"]:
            archive.add(Elite.from_json(item))
        return archive
