"""What a node's round starts with, prepared off the event loop: the peers' champions it
receives (junk dropped, each one let in logged as a ``received`` event) and the round's
opponents (parsed once per run, installed in the evaluation workers once per round).

Held by :class:`~dei_framework.runtime.driver.SearchDriver`.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

import attrs

from dei_framework.contract.domain import Program
from dei_framework.contract.kinds import EventKind
from dei_framework.contract.records import Candidate
from dei_framework.evaluation.local import Evaluator, OpponentSet
from dei_framework.evaluation.outcome import Parsed
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
