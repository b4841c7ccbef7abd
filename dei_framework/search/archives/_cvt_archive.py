"""CVTArchive: cells are Voronoi regions around centroids (scales to three or more axes)."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dei_framework.contract.descriptors import Axis, DescriptorSpace
from dei_framework.contract.errors import ConfigError
from dei_framework.search.archives._archive_base import ArchiveBase


def unit_value(axis: Axis, value: float) -> float:
    """Maps a raw descriptor value into ``[0, 1]`` along ``axis``.

    Continuous axes (with ``low``/``high``) map linearly (logarithmically for log axes) and
    clip; threshold axes map to the middle of the value's bin.
    """
    low, high = getattr(axis, "low", None), getattr(axis, "high", None)
    if low is None or high is None:
        return (axis.index(value) + 0.5) / axis.bins
    if type(axis).__name__ == "LogAxis":
        value, low, high = (math.log(max(v, 1e-300)) for v in (value, low, high))
    return min(max((value - low) / (high - low), 0.0), 1.0)


class CVTArchive(ArchiveBase):
    """A centroidal Voronoi tessellation archive (Vassiliades et al., 2018).

    The centroids come from k-means over uniform samples of the unit cube, drawn from
    ``centroid_seed`` (not from ``seed``): every round, node and resumed or replayed run of
    the same settings has the same cells, so cells can be compared across rounds (niche
    novelty) and nodes (merges). Each descriptor is mapped to the unit cube axis by axis
    (see :func:`unit_value`) and falls in the cell of its nearest centroid.

    Args:
        space: The descriptor space (its axes give the names and ranges; any number of axes).
        cells: Number of centroids.
        samples: Uniform samples k-means runs on (more gives more even cells).
        centroid_seed: Seed of the centroids.
        qd_offset: Subtracted from every fitness in the QD-score.
        seed: Seed of :meth:`sample`.

    Raises:
        ConfigError: ``cells`` is not a positive integer or exceeds ``samples``.
    """

    kind = "cvt"

    def __init__(
        self,
        *,
        space: DescriptorSpace,
        cells: int = 128,
        samples: int = 10_000,
        centroid_seed: int = 0,
        qd_offset: float = 0.0,
        seed: int | None = None,
    ) -> None:
        if not isinstance(cells, int) or cells < 1:
            raise ConfigError(f"cvt archive: cells must be a positive integer, got {cells!r}")
        if samples < cells:
            raise ConfigError(f"cvt archive: samples ({samples}) must be at least cells ({cells})")
        if space.learned:
            raise ConfigError(
                "cvt archive: its centroids need fixed bounds; axes "
                f"{', '.join(space.names[k] for k in space.learned)} learn theirs (fix them, or "
                "use the grid archive)"
            )
        super().__init__(space=space, qd_offset=qd_offset, seed=seed)
        self.centroids = _kmeans(len(space.axes), cells, samples, centroid_seed)

    @property
    def cells(self) -> int:
        return len(self.centroids)

    def unit(self, descriptor: Mapping[str, float]) -> np.ndarray:
        """The descriptor's point in the unit cube."""
        return np.array([unit_value(axis, descriptor[axis.name]) for axis in self.space.axes])

    def index_of(self, descriptor: Mapping[str, float]) -> int:
        distances = np.sum((self.centroids - self.unit(descriptor)) ** 2, axis=1)
        return int(np.argmin(distances))

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "cells": self.cells}


@functools.lru_cache(maxsize=16)
def _kmeans(dims: int, cells: int, samples: int, seed: int, iterations: int = 20) -> np.ndarray:
    """Lloyd's k-means over seeded uniform samples (cached: every round reuses the cells)."""
    rng = np.random.default_rng(seed)
    points = rng.random((samples, dims))
    centroids = points[rng.choice(samples, size=cells, replace=False)].copy()
    for _ in range(iterations):
        distances = (points**2).sum(1)[:, None] - 2 * points @ centroids.T + (centroids**2).sum(1)
        nearest = np.argmin(distances, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, points)
        counts = np.bincount(nearest, minlength=cells)[:, None]
        centroids = np.where(counts > 0, sums / np.maximum(counts, 1), centroids)
    centroids.flags.writeable = False
    return centroids
