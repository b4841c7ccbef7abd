"""A node scheduler's round end: the round's event and champion, the champion into the opponent
pool (``reset``), and the scheduler's round state turned over to the next round.

A friend of :class:`~dei_framework.search.scheduler.Scheduler`, like
:mod:`~dei_framework.search._scheduler_state`: it reads and writes the scheduler's private round
state, which is why it lives beside it.
"""

from __future__ import annotations

from typing import Any, Protocol

from dei_framework.contract.kinds import CandidateSource
from dei_framework.contract.records import Candidate
from dei_framework.search._scheduler_events import round_event
from dei_framework.search._work import RoundEnd
from dei_framework.search.archives import ArchiveBase
from dei_framework.search.events import RoundEvent
from dei_framework.search.opponents import OpponentPool
from dei_framework.search.selectors import ParentSelector


class EndingNode(Protocol):
    """What a round end reads and resets of a :class:`~dei_framework.search.scheduler.Scheduler`
    (which imports this module: it is not imported here)."""

    name: str
    lifecycle: str
    round: int
    started: bool
    completed: int
    archive: ArchiveBase
    previous_cells: set[tuple[int, ...]]
    pool: OpponentPool
    seeds: tuple[Candidate, ...]
    history: list[RoundEvent]
    selector: ParentSelector
    _warm: int
    _next_order: int
    _next_slot: int
    _novel: int
    _valid_received: int
    _opponents_fought: list[dict[str, Any]]

    def _new_archive(self, round_index: int) -> ArchiveBase: ...


def end_round(scheduler: EndingNode) -> RoundEnd:
    """Ends ``scheduler``'s current round (its last slot was admitted) and readies the next."""
    continual = scheduler.lifecycle == "continual"
    # A continual archive goes on changing next round: the round's end is a snapshot.
    finished = snapshot(scheduler) if continual else scheduler.archive
    champion = finished.best()
    # A champion that is an initial opponent or a seed (evaluated in the warm start) is no
    # work of the search: the event marks it.
    initial = {opponent.text for opponent in scheduler.pool.initial}
    initial.update(seed.text for seed in scheduler.seeds)
    event = round_event(
        node=scheduler.name,
        round_index=scheduler.round,
        calls=scheduler.completed,
        finished=finished,
        champion=champion,
        initial=initial,
        received=scheduler._valid_received,
        novel=scheduler._novel,
        opponents=scheduler._opponents_fought,
        selector=scheduler.selector.name,
    )
    scheduler.history.append(event)
    if champion is not None and not continual:
        scheduler.pool.add_champion(
            Candidate(
                text=champion.text,
                source=CandidateSource.OWN,
                node=scheduler.name,
                round=scheduler.round,
                operator=champion.operator,
            )
        )
    scheduler.previous_cells = {elite.cell for elite in finished}
    scheduler.round += 1
    scheduler.started = False
    scheduler.completed = scheduler._warm = scheduler._next_order = scheduler._next_slot = 0
    scheduler._novel = scheduler._valid_received = 0
    scheduler._opponents_fought = []
    if not continual:  # a continual node goes on with its archive and its selector's memory
        scheduler.archive = scheduler._new_archive(scheduler.round)
        scheduler.selector.reset()
    return RoundEnd(event=event, archive=finished, champion=champion)


def snapshot(scheduler: EndingNode) -> ArchiveBase:
    """A copy of the archive as it stands (once per round: its cost is the archive's)."""
    return scheduler._new_archive(scheduler.round).fill_from(scheduler.archive)
