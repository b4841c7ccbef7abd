"""A node scheduler's call-slot planning: the lag rule (slot ``s`` is planned once every slot
before ``s - lag`` is admitted), each slot's parents drawn from its own generator, and the next
round's calls that nothing in this round decides.

A friend of :class:`~dei_framework.search.scheduler.Scheduler`, like
:mod:`~dei_framework.search._scheduler_state`: it reads and writes the scheduler's private round
state, which is why it lives beside it.
"""

from __future__ import annotations

from typing import Protocol

from dei_framework.contract.domain import PromptNeeds
from dei_framework.search._inspirations import inspirations
from dei_framework.search._slots import NodeSlots
from dei_framework.search._work import MUTATE, NEW, WorkItem
from dei_framework.search.archives import ArchiveBase
from dei_framework.search.selectors import ParentSelector


class PlanningNode(Protocol):
    """What planning reads and writes of a :class:`~dei_framework.search.scheduler.Scheduler`
    (which imports this module: it is not imported here)."""

    round: int
    rounds: int
    lag: int
    new_fraction: float
    others: int
    completed: int
    archive: ArchiveBase
    selector: ParentSelector
    lineage_errors: dict[str, str]
    prompt_needs: PromptNeeds
    allocated: bool
    round_quotas: dict[int, int]
    _slots: NodeSlots
    _warm: int
    _next_order: int
    _next_slot: int
    _planned: list[WorkItem]

    @property
    def finished(self) -> bool: ...

    def round_quota(self, round_index: int) -> int: ...


def plan(scheduler: PlanningNode) -> None:
    """Plans every call slot the lag rule and the quota allow now (deterministic point)."""
    if scheduler._next_order < scheduler._warm:
        return  # the archive is still warming up
    quota = scheduler.round_quota(scheduler.round)
    while True:
        slot = scheduler._next_slot
        admitted = scheduler._next_order - scheduler._warm  # call slots admitted
        if slot - scheduler.lag > admitted or scheduler.completed + slot - admitted >= quota:
            return
        scheduler._planned.append(_plan_slot(scheduler, slot, quota))
        scheduler._next_slot += 1


def _plan_slot(scheduler: PlanningNode, slot: int, quota: int) -> WorkItem:
    rng = scheduler._slots.generator(scheduler.round, slot, quota)
    parent, others, feedback, kind = None, (), None, NEW
    if len(scheduler.archive) and rng.random() >= scheduler.new_fraction:
        parent, *drawn = scheduler.selector.select(scheduler.archive, rng, 1 + scheduler.others)
        others = tuple([o for o in drawn if o.id != parent.id])
        feedback, kind = scheduler.lineage_errors.get(parent.id), MUTATE
    shown = ()
    # Drawn after the parent, so a domain that asks for none draws as before; mutations only:
    # a new program's request is one nothing in the round decides (next_round_calls).
    if parent is not None and scheduler.prompt_needs.inspirations:
        shown = inspirations(
            scheduler.archive, rng, scheduler.prompt_needs, parent=parent, others=others
        )
    return scheduler._slots.item(
        scheduler.round,
        f"s{slot}",
        kind=kind,
        order=scheduler._warm + slot,
        parent=parent,
        others=others,
        feedback=feedback,
        inspirations=shown,
    )


def next_round_calls(scheduler: PlanningNode) -> list[WorkItem]:
    """See :meth:`Scheduler.next_round_calls
    <dei_framework.search.scheduler.Scheduler.next_round_calls>`."""
    following = scheduler.round + 1
    if scheduler.finished or following >= scheduler.rounds:
        return []
    if scheduler.allocated and following not in scheduler.round_quotas:
        return []  # its quota is decided at the round boundary, from this round's outcome
    quota = scheduler.round_quota(following)
    # The draw _plan_slot makes first.
    return [
        scheduler._slots.item(following, f"s{slot}", kind=NEW, order=-1)
        for slot in range(quota)
        if scheduler._slots.generator(following, slot, quota).random() < scheduler.new_fraction
    ]
