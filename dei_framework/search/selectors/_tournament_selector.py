"""TournamentSelector: each parent is the fittest of a few elites drawn uniformly."""

from __future__ import annotations

import numpy as np

from dei_framework.contract.errors import ConfigError
from dei_framework.contract.records import Candidate
from dei_framework.search.archives import ArchiveBase
from dei_framework.search.selectors._parent_selector import ParentSelector
from dei_framework.search.slot_random import draw_indices


class TournamentSelector(ParentSelector):
    """Tournament selection over the occupied cells: every pick draws ``size`` elites
    uniformly (with replacement) and keeps the fittest, so fitter elites are parents more
    often while every elite keeps a chance (an elite that never wins is still an inspiration
    when drawn as one of the others). ``size=1`` is the uniform selector.

    The draws come from the slot's generator alone (``count * size`` bounded integers), so a
    seeded run is reproducible; the selector learns nothing and has no state to checkpoint.
    Ties keep the first drawn, so the choice does not depend on the archive's order beyond
    what the draws index.

    Args:
        size: Elites per tournament (the selection pressure), at least 1.

    Raises:
        ConfigError: ``size`` is not a positive integer.
    """

    name = "tournament"

    def __init__(self, *, size: int = 3) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"tournament selector: size must be a positive integer, got {size!r}")
        self.size = size

    def select(self, archive: ArchiveBase, rng: np.random.Generator, count: int) -> list[Candidate]:
        occupied = archive.occupied  # O(1) per draw: no copy of the archive
        draws = count * self.size
        picks = draw_indices(rng, len(occupied), draws)
        chosen = []
        for start in range(0, draws, self.size):
            # max keeps the first of equal fitnesses: a deterministic tie-break.
            entrants = (occupied[i] for i in picks[start : start + self.size])
            chosen.append(max(entrants, key=lambda elite: elite.fitness))
        return chosen
