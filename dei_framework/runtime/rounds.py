"""What a node's round starts with and the generality it ends with, both prepared off the event
loop.

:class:`RoundInputs`: the peers' champions a round receives (junk dropped, each one let in
logged as a ``received`` event) and the round's opponents (parsed once per run, installed in
the evaluation workers once per round). :class:`RoundGenerality`: each round's champion
measured against the domain's reference programs, and every round's figure taken over the
same references (those the node fought or produced in the whole run left out).
:class:`~dei_framework.runtime.driver.SearchDriver` holds one of each.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

import attrs

from dei_framework.contract.domain import Program
from dei_framework.contract.kinds import EventKind
from dei_framework.contract.records import Candidate
from dei_framework.evaluation.local import Evaluator, OpponentSet
from dei_framework.evaluation.outcome import Parsed
from dei_framework.search.events import RoundEvent
from dei_framework.search.scheduler import Scheduler


class RoundInputs:
    """A node's received champions and opponents, round after round.

    Args:
        scheduler: The node's scheduler (the round, its opponents; starts the round).
        evaluator: The shared evaluation pool (parses, holds the opponents).
        receive: Returns the peer champions to take in at a round's start (or an awaitable of
            them).
        record: Called with finished events and call records (the run log).
    """

    def __init__(
        self,
        *,
        scheduler: Scheduler,
        evaluator: Evaluator,
        receive: Callable[[int], Sequence[Candidate] | Awaitable[Sequence[Candidate]]],
        record: Callable[[list[dict], list[dict]], None],
    ) -> None:
        self.scheduler = scheduler
        self.evaluator = evaluator
        self.receive = receive
        self.record = record
        #: The round's opponents as installed in the evaluation workers.
        self.opponents: OpponentSet | None = None
        self._known: dict[str, Parsed] = {}

    async def start_round(self) -> None:
        """Validates received champions off the event loop, then starts the round."""
        received = []
        champions = self.receive(self.scheduler.round)
        if inspect.isawaitable(champions):
            champions = await champions
        for champion in champions:
            parsed = await self.evaluator.parse(champion.text)
            if parsed.program is not None:  # junk never enters the pool
                received.append(attrs.evolve(champion, text=parsed.program.text))
        accepted = self.scheduler.start_round(received)
        self.record(
            [
                {
                    "event": EventKind.RECEIVED,
                    "node": self.scheduler.name,
                    "round": self.scheduler.round,
                    "from": c.node,
                    "from_round": c.round,
                    "program": c.text,
                    "operator": c.operator,
                }
                for c in accepted
            ],
            [],
        )
        await self.load_opponents()

    async def load_opponents(self) -> None:
        """Parses the round's opponents once per run (off the event loop) and installs them in
        the evaluation workers once per round."""
        opponents: list[Program] = []
        for opponent in self.scheduler.opponents:
            if opponent.text not in self._known:
                self._known[opponent.text] = await self.evaluator.parse(opponent.text)
            program = self._known[opponent.text].program
            if program is not None:
                opponents.append(program)
        self.opponents = self.evaluator.install(opponents)


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
