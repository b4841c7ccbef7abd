"""A node's generality figures: each round's champion measured against the domain's reference
programs off the event loop, and every round's figure taken over the same references (those
the node fought or produced in the whole run left out).

:class:`~dei_framework.runtime.driver.SearchDriver` holds one :class:`RoundGenerality`;
:func:`generality_subject` is importable from :mod:`dei_framework.runtime.driver` as well.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

import attrs

from dei_framework.evaluation.local import Evaluator
from dei_framework.search.events import RoundEvent


class RoundGenerality:
    """The generality measurements of one node's rounds.

    Args:
        evaluator: The shared evaluation pool the measurements run in.
    """

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator
        #: Each round's measurement in flight (or done), by round.
        self.tasks: dict[int, asyncio.Task] = {}
        #: Generality reference programs this node fought or produced (by the domain's
        #: :meth:`~dei_framework.contract.domain.Domain.reference_matches`): left out of its
        #: generality.
        self.excluded: set[str] = set()

    def resume(self, history: Iterable[RoundEvent]) -> None:
        """Starts again the measurements of rounds whose generality a crash interrupted."""
        for entry in history:
            subject = generality_subject(entry)
            if entry.generality is None and subject is not None:
                self.start(entry.round, subject)

    def start(self, round_index: int, text: str) -> None:
        """Starts measuring round ``round_index``'s champion ``text``."""
        self.tasks[round_index] = asyncio.create_task(self._outcomes(text))

    async def fill(self, history: list[RoundEvent]) -> None:
        """Waits for every measurement and fills in each round's ``generality`` (the round's
        event in ``history`` is replaced by one that has it)."""
        # Every round's figure leaves out the same reference programs: all that this node
        # fought or produced in the whole run, so that its figures compare across rounds.
        for round_index, task in self.tasks.items():
            value = self.share(await task)
            for i, entry in enumerate(history):
                if entry.round == round_index:
                    history[i] = attrs.evolve(entry, generality=value)

    def share(self, outcomes: Mapping[str, bool] | float | None) -> float | None:
        """Generality from per-reference outcomes, leaving out the excluded programs."""
        if not isinstance(outcomes, Mapping):
            return outcomes
        kept = [beaten for name, beaten in outcomes.items() if name not in self.excluded]
        return sum(kept) / len(kept) if kept else None

    async def _outcomes(self, text: str) -> Mapping[str, bool] | float | None:
        parsed = await self.evaluator.parse(text)
        if parsed.program is None:
            return None
        return await self.evaluator.generality_outcomes(parsed.program)


def generality_subject(entry: RoundEvent) -> str | None:
    """The program whose generality a ``round`` event reports: its champion, or, when that is an
    initial opponent, the round's best other elite (``None``: nothing to measure)."""
    subject = entry.subject
    return subject.text if subject is not None else None
