"""UniformSelector: the paper's parent choice, uniform over occupied cells."""

from __future__ import annotations

import numpy as np

from dei_framework.contract.records import Candidate
from dei_framework.search.archives import ArchiveBase
from dei_framework.search.selectors._parent_selector import ParentSelector
from dei_framework.search.slot_random import draw_indices


class UniformSelector(ParentSelector):
    """Draws every parent uniformly (with replacement) from the occupied cells (DRQ / DEI)."""

    name = "uniform"

    def select(self, archive: ArchiveBase, rng: np.random.Generator, count: int) -> list[Candidate]:
        occupied = archive.occupied  # O(1) per draw: no copy of the archive
        return [occupied[i] for i in draw_indices(rng, len(occupied), count)]
