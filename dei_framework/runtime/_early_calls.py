"""A node's early calls: while a round drains, the next round's calls that depend on nothing in
it (its from-scratch slots) are made ahead, so the call slots do not idle; the next round's
slots pick the replies up by request key.

Held by :class:`~dei_framework.runtime.driver.SearchDriver`.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio

from dei_framework.contract.operators import OperatorReply
from dei_framework.runtime.budget import BudgetLedger
from dei_framework.runtime.finished_tasks import FinishedTasks
from dei_framework.runtime.operator_calls import OperatorCalls
from dei_framework.search.scheduler import Scheduler, WorkItem


class EarlyCalls:
    """The next round's calls made while this one drains, by request key.

    Args:
        scheduler: The node's scheduler (which calls the next round makes).
        ledger: The shared budget ledger (early calls stay within the node's budget).
        calls: The node's operator calls.
        finished: The driver's finished-task watch (an early call's end wakes the driver).
    """

    def __init__(
        self,
        *,
        scheduler: Scheduler,
        ledger: BudgetLedger,
        calls: OperatorCalls,
        finished: FinishedTasks,
    ) -> None:
        self.scheduler = scheduler
        self.ledger = ledger
        self.calls = calls
        self.finished = finished
        #: The calls made early, by request key, until the next round's slot takes one.
        self.tasks: dict[str, asyncio.Task[tuple[OperatorReply | None, float]]] = {}
        self._next_calls: tuple[int, list[WorkItem]] = (-1, [])

    def __contains__(self, key: str) -> bool:
        return key in self.tasks

    def pop(self, key: str) -> asyncio.Task[tuple[OperatorReply | None, float]] | None:
        """The early call of request ``key``, handed over to its slot (``None``: none made)."""
        return self.tasks.pop(key, None)

    def running(self) -> int:
        """How many early calls are still out."""
        return sum(1 for task in self.tasks.values() if not task.done())

    def start(self, free: int) -> None:
        """Starts up to ``free`` of the next round's calls that do not depend on this round
        (its from-scratch slots), so the slots do not idle while this round drains. They are
        the calls the next round makes anyway; its slots pick up the replies by key."""
        name = self.scheduler.name
        remaining = self.ledger.remaining(name)
        if remaining is not None:
            free = min(free, remaining - self.running())
        if free <= 0:
            return
        if self._next_calls[0] != self.scheduler.round:
            self._next_calls = (self.scheduler.round, self.scheduler.next_round_calls())
        for item in self._next_calls[1]:
            if free <= 0:
                break
            if item.key not in self.tasks:
                self.tasks[item.key] = self.finished.watch(self.calls.call_in_slot(item))
                free -= 1

    async def cancel(self) -> None:
        """Cancels the calls of a round the node will not run, and waits for them to end."""
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        self.tasks.clear()
