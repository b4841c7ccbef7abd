"""GridArchive: the paper's MAP-Elites grid (one bin range per descriptor axis)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.errors import ConfigError
from dei_framework.search.archives._archive_base import ArchiveBase


class GridArchive(ArchiveBase):
    """A MAP-Elites grid archive: the cells are the bins of the space's axes.

    An axis of the space may learn its bounds
    (:class:`~dei_framework.contract.descriptors.LearnedAxis`): placing a descriptor
    (:meth:`cell_of`, :meth:`index_of`, :meth:`place`, :meth:`add`) whose value lies outside
    what the axis has seen first widens the axis, and when its bounds move (by powers of two,
    :func:`~dei_framework.contract.descriptors.learned_bounds`) every elite is placed again,
    the best one keeping a cell two now share (ties: the one of the lower former cell).
    :attr:`rebins` counts those re-binnings. A space of fixed axes never pays for any of this
    beyond one test per placement.

    Args:
        space: The descriptor space defining the grid.
        qd_offset: Subtracted from every fitness when computing the QD-score.
        seed: Seed of the generator used by :meth:`sample`.

    Example:
        >>> from dei_framework.contract.descriptors import DescriptorSpace, ThresholdAxis
        >>> from dei_framework.contract.records import Candidate
        >>> archive = GridArchive(space=DescriptorSpace([ThresholdAxis("x", (1, 10))]), seed=0)
        >>> print(archive.add(Candidate(text="...", fitness=1.0, descriptor={"x": 5})))
        NEW
    """

    kind = "grid"

    def __init__(
        self, *, space: DescriptorSpace, qd_offset: float = 0.0, seed: int | None = None
    ) -> None:
        super().__init__(space=space, qd_offset=qd_offset, seed=seed)
        self._learned = space.learned
        #: How many times the elites were placed again because learned bounds moved.
        self.rebins = 0

    @property
    def cells(self) -> int:
        return self.space.cells

    @property
    def learns_bounds(self) -> bool:
        return bool(self._learned)

    def index_of(self, descriptor: Mapping[str, float]) -> int:
        if self._learned:
            self._learn(descriptor)
        return self.flat_index(self.space.cell(descriptor))

    def cell_of(self, descriptor: Mapping[str, float]) -> tuple[int, ...]:
        if self._learned:
            self._learn(descriptor)
        return self.space.cell(descriptor)

    def learn_from(self, space: DescriptorSpace) -> bool:
        """Widens the learned axes to what the same-named learned axes of ``space`` saw (see
        :meth:`DescriptorSpace.joined`); returns whether the bounds moved (elites re-binned)."""
        return bool(self._learned) and self._regrid(self.space.joined([space]))

    def _learn(self, descriptor: Mapping[str, float]) -> None:
        axes = self.space.axes
        widened = None
        for k in self._learned:
            value = float(descriptor[axes[k].name])
            if not axes[k].covers(value, value):  # type: ignore[attr-defined]
                widened = widened or list(axes)
                widened[k] = widened[k].widened(value, value)  # type: ignore[attr-defined]
        if widened is not None:
            self._regrid(DescriptorSpace(widened))

    def _learn_values(self, values: np.ndarray) -> None:
        axes = self.space.axes
        widened = None
        for k in self._learned:
            column = values[:, k]
            column = column[np.isfinite(column)]
            if not len(column):
                continue
            low, high = float(column.min()), float(column.max())
            if not axes[k].covers(low, high):  # type: ignore[attr-defined]
                widened = widened or list(axes)
                widened[k] = widened[k].widened(low, high)  # type: ignore[attr-defined]
        if widened is not None:
            self._regrid(DescriptorSpace(widened))

    def _regrid(self, space: DescriptorSpace) -> bool:
        """Takes ``space`` (this space, its learned axes widened); re-bins when bounds moved."""
        before, self.space = self.space, space
        moved = any(
            (axis.low, axis.high) != (was.low, was.high)  # type: ignore[attr-defined]
            for axis, was in ((space.axes[k], before.axes[k]) for k in self._learned)
        )
        if not moved:
            return False
        self.rebins += 1
        elites = list(self._occupied)  # in the former cell order: ties keep the lower cell
        self._elites.clear()
        self._order.clear()
        self._best, self._stats, self._top = None, None, None
        for elite in elites:
            self.add(elite)
        return True

    def fill_from(self, other: ArchiveBase) -> GridArchive:
        if self._learned:
            self.learn_from(other.space)
        if type(other) is type(self) and other.space == self.space and not self._elites:
            # The same cells: the elites, their order and the best carry over as they are (what
            # adding them one by one gives, without placing each again).
            self._elites.update(other._elites)
            self._order[:] = other._order
            self._best, self._stats, self._top = other._best, None, None
            return self
        if type(other) is type(self) and other.space == self.space:
            for index in other._order:  # the same cells: by index, without placing each again
                self.add_at(other._elites[index], index)
            return self
        return super().fill_from(other)  # type: ignore[return-value]

    def place(self, values: np.ndarray) -> tuple[list[tuple[int, ...]], list[int]]:
        """The cells and flat indices of many raw descriptors, in one vectorised pass (the
        same bins as :meth:`cell_of`, value for value)."""
        if self._learned and len(values):
            self._learn_values(np.asarray(values, dtype=float))
        bins = self.space.indices(values)
        flat = np.ravel_multi_index(bins.T, self.space.shape) if len(bins) else bins[:, 0]
        return list(map(tuple, bins.tolist())), flat.tolist()

    def flat_index(self, cell: tuple[int, ...]) -> int:
        """The row-major flat index of a grid cell (see :meth:`ArchiveBase.flat_index`)."""
        # Row-major flat index, as np.ravel_multi_index gives, without its per-call overhead.
        strides = self.__dict__.get("_strides")
        if strides is None:
            shape = self.space.shape
            strides = self._strides = tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape)))
        if len(cell) != len(strides):
            raise ValueError(f"cell {cell} has {len(cell)} indices, the grid {len(strides)} axes")
        flat = 0
        for index, stride, bins in zip(cell, strides, self.space.shape, strict=True):
            if not 0 <= index < bins:
                raise ValueError(f"cell {cell} is outside the grid {self.space.shape}")
            flat += int(index) * stride
        return flat

    @classmethod
    def merge(cls, archives: Iterable[ArchiveBase], *, seed: int | None = None) -> GridArchive:
        """The best elite per grid cell across ``archives``, in the first archive's space.

        Archives of other kinds or over other axes are projected into that space (every
        elite's descriptor carries the values of the run's axes). Ties keep the elite from the
        earliest archive, so merging is deterministic. Learned axes take the union of what
        every archive's axes saw before any elite is placed (one common grid).

        Raises:
            ConfigError: there is nothing to merge, or an elite lacks a value of the space.
        """
        archives = list(archives)
        if not archives:
            raise ConfigError("nothing to merge")
        first = archives[0]
        space = first.space.joined(archive.space for archive in archives)
        merged = cls(space=space, qd_offset=first.qd_offset, seed=seed)
        for archive in archives:
            if archive.space == merged.space:  # its elites have every axis: fill_from places them
                merged.fill_from(archive)
                continue
            for elite in archive:
                missing = [name for name in first.space.names if name not in elite.descriptor]
                if missing:
                    raise ConfigError(
                        f"cannot merge: elite {elite.id} has no value for axis {missing[0]!r}"
                    )
                merged.add(elite)
        return merged

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, seed: int | None = None) -> GridArchive:
        """Rebuilds a grid from :meth:`to_json` output (another kind's is projected onto it)."""
        archive = cls(
            space=DescriptorSpace.from_json(data["space"]),
            qd_offset=data.get("qd_offset", 0.0),
            seed=seed,
        )
        archive.fill_from_json(data)
        return archive

    def fill_from_json(self, data: Mapping[str, Any]) -> GridArchive:
        """Adds the elites of :meth:`to_json` output; learned axes first take the bounds it
        records (a checkpoint restores them exactly, values seen by no elite included)."""
        if self._learned and "space" in data:
            self.learn_from(DescriptorSpace.from_json(data["space"]))
        return super().fill_from_json(data)  # type: ignore[return-value]
