"""ImprovementSelector: parents whose children improved the archive are drawn more often."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dei_framework.contract.errors import ConfigError
from dei_framework.contract.records import Candidate
from dei_framework.search.archives import AddStatus, ArchiveBase
from dei_framework.search.selectors._parent_selector import ParentSelector


class ImprovementSelector(ParentSelector):
    """Curiosity-style parent choice (Cully & Demiris, 2018): a parent's weight is
    ``(prior + successes) / (prior + children)``, where a success is a child that filled a new
    cell or improved one. Unknown parents start at weight 1, so fresh elites get tried.

    Args:
        prior: Pseudo-counts that keep the weights from collapsing after one outcome.

    Raises:
        ConfigError: ``prior`` is not positive.
    """

    name = "improvement"
    capabilities = frozenset({"learns"})

    def __init__(self, *, prior: float = 1.0) -> None:
        if not isinstance(prior, int | float) or prior <= 0:
            raise ConfigError(f"improvement emitter: prior must be positive, got {prior!r}")
        self.prior = float(prior)
        self._children: dict[str, int] = {}
        self._successes: dict[str, int] = {}

    def weight(self, elite: Candidate) -> float:
        """The elite's current selection weight."""
        children = self._children.get(elite.id, 0)
        return (self.prior + self._successes.get(elite.id, 0)) / (self.prior + children)

    def select(self, archive: ArchiveBase, rng: np.random.Generator, count: int) -> list[Candidate]:
        occupied = archive.occupied  # indexed in place: the archive is not copied
        weights = np.fromiter(
            (self.weight(elite) for elite in occupied), dtype=float, count=len(occupied)
        )
        picks = rng.choice(len(occupied), size=count, p=weights / weights.sum())
        return [occupied[int(i)] for i in picks]

    def tell(self, parent: Candidate | None, child: Candidate | None, status: AddStatus) -> None:
        if parent is None:
            return
        self._children[parent.id] = self._children.get(parent.id, 0) + 1
        if status:
            self._successes[parent.id] = self._successes.get(parent.id, 0) + 1

    def reset(self) -> None:
        self._children.clear()
        self._successes.clear()

    def state_json(self) -> dict[str, Any]:
        return {"children": dict(self._children), "successes": dict(self._successes)}

    def restore(self, state: Mapping[str, Any]) -> None:
        self._children = dict(state.get("children", {}))
        self._successes = dict(state.get("successes", {}))
