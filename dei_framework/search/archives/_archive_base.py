"""ArchiveBase: what every archive offers (one elite per cell, explicit add statuses)."""

from __future__ import annotations

import abc
import bisect
import heapq
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

import attrs
import numpy as np

from dei_framework.contract.archive_stats import ArchiveStats
from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.records import Candidate
from dei_framework.search.archives._add_status import AddStatus


class OccupiedElites(Sequence[Candidate]):
    """A live, read-only view of an archive's elites in cell order, with O(1) indexed access.

    ``archive.occupied[i]`` is the elite of the ``i``-th occupied cell (ascending flat cell
    index) and ``len(archive.occupied)`` the number of occupied cells; neither copies the
    archive, so a parent selector draws a parent in constant time whatever the archive's size. The
    view follows the archive: an index drawn before an :meth:`ArchiveBase.add` may name another
    elite after it.
    """

    __slots__ = ("_elites", "_order")

    def __init__(self, elites: Mapping[int, Candidate], order: list[int]) -> None:
        self._elites = elites
        self._order = order

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, index: int) -> Candidate: ...

    @overload
    def __getitem__(self, index: slice) -> list[Candidate]: ...

    def __getitem__(self, index: int | slice) -> Candidate | list[Candidate]:
        if isinstance(index, slice):
            return [self._elites[cell] for cell in self._order[index]]
        return self._elites[self._order[index]]

    def __iter__(self) -> Iterator[Candidate]:
        elites = self._elites
        return (elites[cell] for cell in self._order)


class ArchiveBase(abc.ABC):
    """A MAP-Elites archive: a fixed set of cells over a descriptor space, one elite per cell.

    Subclasses say how many cells there are (:attr:`cells`) and which cell a descriptor falls
    in (:meth:`index_of`); insertion, queries, statistics and persistence are shared.

    Besides the elites, an archive keeps the sorted list of its occupied cells (the index
    behind :attr:`occupied`) and its best elite, both updated on every insertion: drawing a
    parent and finding the champion cost the same in an empty and in a full archive.

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
        self._order: list[int] = []  # occupied flat indices, ascending
        self._occupied = OccupiedElites(self._elites, self._order)
        self._stats: ArchiveStats | None = None  # cached until the next insertion
        self._best: int | None = None  # flat index of best(): highest fitness, lowest cell
        # The flat indices of the best elites, best first (top()): built on first use, then
        # kept by add_at in O(k); None until a prompt asks for top programs.
        self._top: list[int] | None = None
        self._top_size = 0

    # --- what subclasses define -----------------------------------------------------------------

    @property
    @abc.abstractmethod
    def cells(self) -> int:
        """Number of cells."""

    @abc.abstractmethod
    def index_of(self, descriptor: Mapping[str, float]) -> int:
        """The flat cell index of a raw descriptor."""

    @property
    def learns_bounds(self) -> bool:
        """Whether placing a descriptor may move the cells (learned axes): a cell placed
        earlier may then be stale, so callers place just before they add."""
        return False

    def cell_of(self, descriptor: Mapping[str, float]) -> tuple[int, ...]:
        """The cell of a raw descriptor, as recorded on elites (a tuple)."""
        return (self.index_of(descriptor),)

    def flat_index(self, cell: tuple[int, ...]) -> int:
        """The flat index of a cell as elites record it (the key :meth:`add_at` and
        :meth:`status_at` take): what :meth:`index_of` gives for a descriptor in that cell.

        Raises:
            ValueError: The cell is not one of this archive's.
        """
        index = int(cell[0])
        if len(cell) != 1 or not 0 <= index < self.cells:
            raise ValueError(f"cell {cell} is not one of the archive's {self.cells} cells")
        return index

    def place(self, values: np.ndarray) -> tuple[list[tuple[int, ...]], list[int]]:
        """The cells of many raw descriptors at once, and their flat indices.

        Args:
            values: One row per descriptor, one column per axis of :attr:`space` (in its
                order).

        Returns:
            The cells (as :meth:`cell_of` gives them) and their flat indices (the keys
            :meth:`add_at` and :meth:`status_at` take). This default goes row by row; a grid
            archive computes them in one vectorised pass.
        """
        names = self.space.names
        cells = [
            self.cell_of(dict(zip(names, row, strict=True)))
            for row in np.asarray(values, dtype=float).tolist()
        ]
        return cells, [self.flat_index(cell) for cell in cells]

    # --- queries --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._elites)

    def __iter__(self) -> Iterator[Candidate]:
        """Elites in cell order."""
        return iter(self._occupied)

    @property
    def occupied(self) -> OccupiedElites:
        """The elites in cell order as a sequence view: ``occupied[i]`` in O(1), no copy.

        The public index parent selectors draw through (``occupied[rng.integers(len(occupied))]``
        is a uniform draw over occupied cells).
        """
        return self._occupied

    def __contains__(self, cell: tuple[int, ...]) -> bool:
        return self.flat_index(tuple(cell)) in self._elites

    def elite_at(self, cell: tuple[int, ...]) -> Candidate | None:
        """The elite in ``cell``, or ``None``."""
        return self._elites.get(self.flat_index(tuple(cell)))

    def best(self) -> Candidate | None:
        """The elite with the highest fitness (ties: the lowest cell index), or ``None``."""
        return None if self._best is None else self._elites[self._best]

    def top(self, k: int) -> list[Candidate]:
        """The ``k`` best elites, best first (equal fitnesses: the lower cell first).

        The first call sorts the archive once (O(n log k)); from then on every insertion keeps
        the list in O(k) (an elite only ever gives way to a fitter one in its cell), so asking
        costs O(k) whatever the archive's size.
        """
        if k <= 0:
            return []
        if self._top is None or k > self._top_size:
            self._top_size = max(k, self._top_size)
            self._top = heapq.nsmallest(self._top_size, self._elites, key=self._rank)
        return [self._elites[index] for index in self._top[:k]]

    def _rank(self, index: int) -> tuple[float, int]:
        return (-float(self._elites[index].fitness), index)  # type: ignore[arg-type]

    def _keep_top(self, index: int) -> None:
        """Keeps :meth:`top`'s list after the elite of ``index`` was added or improved."""
        top = self._top
        assert top is not None
        if index not in top:
            if len(top) >= self._top_size and self._rank(index) >= self._rank(top[-1]):
                return
            top.append(index)
        top.sort(key=self._rank)
        del top[self._top_size :]

    def sample(self, n: int = 1) -> list[Candidate]:
        """Draws ``n`` elites uniformly over occupied cells (with replacement).

        Raises:
            IndexError: the archive is empty.
        """
        if not self._elites:
            raise IndexError("cannot sample from an empty archive")
        occupied = self._occupied
        return [occupied[int(i)] for i in self._rng.integers(len(occupied), size=n)]

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
        """Current statistics (computed once per change of the archive, then cached).

        Count, coverage and the best fitness are kept up to date by every insertion; the sums
        (QD-score, mean) are one vectorised pass over the elites in cell order, the summation
        every earlier release used, so a seeded run reports the same figures to the last bit.
        """
        if self._stats is None:
            n = len(self._order)
            values = np.fromiter((elite.fitness for elite in self._occupied), dtype=float, count=n)
            best = self.best()
            self._stats = ArchiveStats(
                num_elites=n,
                cells=self.cells,
                coverage=n / self.cells,
                qd_score=float(np.sum(values - self.qd_offset)) if n else 0.0,
                qd_offset=self.qd_offset,
                obj_max=float(best.fitness) if best is not None else None,
                obj_mean=float(values.mean()) if n else None,
            )
        return self._stats

    # --- updates --------------------------------------------------------------------------------

    def status_at(self, index: int, fitness: float | None) -> AddStatus:
        """What :meth:`add_at` would do with an elite of ``fitness`` in the cell of flat index
        ``index`` (nothing changes): lets a caller skip building records the archive would
        turn down."""
        if fitness is None or not math.isfinite(fitness):
            return AddStatus.NOT_ADDED
        current = self._elites.get(index)
        if current is None:
            return AddStatus.NEW
        return AddStatus.IMPROVE_EXISTING if fitness > current.fitness else AddStatus.NOT_ADDED

    def add(self, elite: Candidate) -> AddStatus:
        """Offers an elite; its ``cell`` is recomputed from its descriptor.

        It takes an empty cell (``NEW``) or replaces an elite of strictly lower fitness
        (``IMPROVE_EXISTING``); otherwise nothing changes (``NOT_ADDED``, also for a missing or
        non-finite fitness).
        """
        if elite.fitness is None or not math.isfinite(elite.fitness):
            return AddStatus.NOT_ADDED
        cell = self.cell_of(elite.descriptor)  # once: the index is the cell's flat form
        index = self.flat_index(cell)
        if cell != elite.cell:
            elite = attrs.evolve(elite, cell=cell)
        return self.add_at(elite, index)

    def add_at(self, elite: Candidate, index: int) -> AddStatus:
        """:meth:`add` for an elite already placed: its ``cell`` is its descriptor's cell and
        ``index`` that cell's flat index (as :meth:`place` gives them); nothing is recomputed.
        """
        if elite.fitness is None or not math.isfinite(elite.fitness):
            return AddStatus.NOT_ADDED
        current = self._elites.get(index)
        fitness = float(elite.fitness)
        if current is None:
            status = AddStatus.NEW
            bisect.insort(self._order, index)
        elif fitness > current.fitness:
            status = AddStatus.IMPROVE_EXISTING
        else:
            return AddStatus.NOT_ADDED
        self._elites[index] = elite
        self._stats = None
        if self._top is not None:
            self._keep_top(index)
        best = None if self._best is None else self._elites[self._best]
        if (
            best is None
            or fitness > best.fitness
            or (fitness == best.fitness and index < self._best)
        ):
            self._best = index
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

    def fill_from(self, other: ArchiveBase) -> ArchiveBase:
        """Adds the elites of another archive (of any kind); returns ``self``.

        The same elites as ``fill_from_json(other.to_json())``, without the round trip: texts
        not yet written (:class:`~dei_framework.contract.records.DeferredText`) stay unwritten, and
        ``data`` stays on the elites.
        """
        for elite in other:
            self.add(elite)
        return self

    def fill_from_json(self, data: Mapping[str, Any]) -> ArchiveBase:
        """Adds the elites of :meth:`to_json` output (of any archive kind); returns ``self``."""
        for item in data["elites"]:
            self.add(Candidate.from_json(item))
        return self
