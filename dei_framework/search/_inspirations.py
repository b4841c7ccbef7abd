"""The elites a domain's prompt shows besides the parent (its
:class:`~dei_framework.contract.domain.PromptNeeds`): the best by fitness, and elites of other
cells drawn with the slot's generator, so a seeded run shows the same whatever the timing.

Cost per planned slot: O(k) for the top ones (:meth:`ArchiveBase.top
<dei_framework.search.archives.ArchiveBase.top>` keeps its list on every insertion) and O(k)
draws for the diverse ones, whatever the archive's size.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from dei_framework.contract.domain import PromptNeeds
from dei_framework.contract.records import Candidate
from dei_framework.search.archives import ArchiveBase
from dei_framework.search.slot_random import draw_indices

#: Draws per diverse elite wanted (a draw may hit the parent or one already shown).
_DRAWS_PER_DIVERSE = 3


def inspirations(
    archive: ArchiveBase,
    rng: np.random.Generator,
    needs: PromptNeeds,
    *,
    parent: Candidate | None,
    others: Sequence[Candidate],
) -> tuple[Candidate, ...]:
    """The top elites (best first, not the parent), then the diverse ones (uniform over the
    occupied cells, not the parent, the top ones nor ``others``; fewer when the archive is
    small). Fewer top elites than ``needs.top`` means the archive holds no other elite, so
    none is diverse: the first ``needs.top`` are always the top ones.

    Args:
        archive: The node's archive at the slot's planning.
        rng: The slot's generator (drawn from after the parent selector).
        needs: How many of each.
        parent: The parent of the slot, if any.
        others: The elites the parent selector handed over with it (shown already).
    """
    if not len(archive) or not needs.inspirations:
        return ()
    skip = {parent.id} if parent is not None else set()
    top = [elite for elite in archive.top(needs.top + 1) if elite.id not in skip][: needs.top]
    shown = skip | {elite.id for elite in top} | {elite.id for elite in others}
    diverse: list[Candidate] = []
    occupied = archive.occupied
    if needs.diverse:
        draws = needs.diverse * _DRAWS_PER_DIVERSE
        picks = draw_indices(rng, len(occupied), draws)
        # Random draws first; when they keep hitting elites shown already (a small archive),
        # a scan from the last draw finds the rest: at most len(shown) more steps.
        size, start = len(occupied), picks[-1]
        scan = ((start + step) % size for step in range(1, size))  # lazy: stops when found
        for pick in itertools.chain(picks, scan):
            elite = occupied[pick]
            if elite.id not in shown:
                shown.add(elite.id)
                diverse.append(elite)
                if len(diverse) == needs.diverse:
                    break
    return (*top, *diverse)
