"""A node scheduler's checkpoint: its state as JSON, and the scheduler put back from it.

A friend of :class:`~dei_framework.search.scheduler.Scheduler`: it reads and writes the
scheduler's private round state, which is why it lives beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from dei_framework.search._admission import Told
from dei_framework.search._work import WorkItem
from dei_framework.search.archives import ArchiveBase
from dei_framework.search.events import RoundEvent
from dei_framework.search.opponents import OpponentPool
from dei_framework.search.selectors import ParentSelector


class CheckpointedNode(Protocol):
    """What a checkpoint holds of a :class:`~dei_framework.search.scheduler.Scheduler` (which
    imports this module: it is not imported here)."""

    round: int
    started: bool
    lag: int
    completed: int
    archive: ArchiveBase
    previous_cells: set[tuple[int, ...]]
    pool: OpponentPool
    lineage_errors: dict[str, str]
    history: list[RoundEvent]
    stopped: str | None
    selector: ParentSelector
    allocated: bool
    round_quotas: dict[int, int]
    _warm: int
    _next_order: int
    _next_slot: int
    _novel: int
    _valid_received: int
    _opponents_fought: list[dict[str, Any]]
    _planned: list[WorkItem]
    _asked: dict[int, WorkItem]
    _buffer: dict[int, Told]

    def _new_archive(self, round_index: int) -> ArchiveBase: ...


def state_json(scheduler: CheckpointedNode) -> dict[str, Any]:
    """See :meth:`Scheduler.state_json <dei_framework.search.scheduler.Scheduler.state_json>`."""
    outstanding = sorted([*scheduler._asked.values(), *scheduler._planned], key=lambda i: i.order)
    state = {
        "round": scheduler.round,
        "started": scheduler.started,
        "lag": scheduler.lag,
        "completed": scheduler.completed,
        "warm": scheduler._warm,
        "next_order": scheduler._next_order,
        "next_slot": scheduler._next_slot,
        "novel": scheduler._novel,
        "valid_received": scheduler._valid_received,
        "opponents_fought": scheduler._opponents_fought,
        "outstanding": [item.to_json() for item in outstanding],
        "archive": scheduler.archive.to_json(),
        "previous_cells": [list(c) for c in sorted(scheduler.previous_cells)],
        "pool": scheduler.pool.to_json(),
        "lineage_errors": dict(scheduler.lineage_errors),
        "history": [entry.to_json() for entry in scheduler.history],
        "stopped": scheduler.stopped,
        "selector": scheduler.selector.state_json(),
    }
    if scheduler.allocated:  # a static run's checkpoint stays as it was
        state["round_quotas"] = {str(r): q for r, q in sorted(scheduler.round_quotas.items())}
    return state


def restore(scheduler: CheckpointedNode, state: Mapping[str, Any]) -> None:
    """See :meth:`Scheduler.restore <dei_framework.search.scheduler.Scheduler.restore>`."""
    scheduler.round = state["round"]
    scheduler.started = state["started"]
    scheduler.lag = state["lag"]
    scheduler.completed = state["completed"]
    scheduler._warm = state["warm"]
    scheduler._next_order = state["next_order"]
    scheduler._next_slot = state["next_slot"]
    scheduler._novel = state["novel"]
    scheduler._valid_received = state["valid_received"]
    scheduler._opponents_fought = list(state["opponents_fought"])
    scheduler._planned = [WorkItem.from_json(item) for item in state["outstanding"]]
    scheduler._asked, scheduler._buffer = {}, {}
    scheduler.archive = scheduler._new_archive(scheduler.round).fill_from_json(state["archive"])
    scheduler.previous_cells = {tuple(c) for c in state["previous_cells"]}
    scheduler.pool = OpponentPool.from_json(state["pool"])
    scheduler.lineage_errors = dict(state["lineage_errors"])
    scheduler.history = [RoundEvent.from_json(entry) for entry in state["history"]]
    scheduler.stopped = state["stopped"]
    scheduler.selector.restore(state["selector"])
    if "round_quotas" in state:
        scheduler.allocated = True
        scheduler.round_quotas = {int(r): int(q) for r, q in state["round_quotas"].items()}
