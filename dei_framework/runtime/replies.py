"""A node's replies: evaluated in batches, the next round's calls made early, and the tasks that
bring them in.

:func:`evaluate_replies` resolves each operator reply against its parent into the text its
domain parses (a reply that does not resolve is refused as invalid), then scores every text in
one batch of the shared evaluation pool; the driver uses it for the replies that came in
together and for the scheduler's items that need no call. :class:`EarlyCalls`: while a round
drains, the next round's calls that depend on nothing in it (its from-scratch slots) are made
ahead, so the call slots do not idle; the next round's slots pick the replies up by request
key. :class:`FinishedTasks`: tasks that report themselves as they finish, so that a wait for
the next finished one costs the same however many are in flight (``asyncio.wait`` would hook
and unhook every one of them each time).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from dei_framework.contract.domain import Domain
from dei_framework.contract.errors import InvalidProgram
from dei_framework.contract.operators import OperatorReply
from dei_framework.evaluation.local import Evaluator, OpponentSet
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.operator_calls import OperatorCalls
from dei_framework.search.scheduler import Result, Scheduler, WorkItem


async def evaluate_replies(
    batch: Sequence[tuple[WorkItem, str, str, Mapping[str, Any]]],
    *,
    domain: Domain,
    evaluator: Evaluator,
    opponents: OpponentSet | None,
    axes: Sequence[str],
) -> list[Result]:
    """Evaluates ``(item, program text, operator, timings)`` entries in the shared pool,
    in one batch (an operator's reply first made the text its domain parses, knowing the
    parent: :meth:`~dei_framework.contract.domain.Domain.resolve_reply`).

    Args:
        batch: The entries; an item that needed no call carries its program's text as is.
        domain: The node's domain (resolves the replies).
        evaluator: The shared evaluation pool.
        opponents: The round's opponents, installed in the pool.
        axes: Descriptor keys every evaluation must report.

    Returns:
        The refused replies' results first, then the evaluated entries' in batch order.
    """
    refused: list[Result] = []
    entries = []
    for item, text, operator, info in batch:
        if item.needs_call:
            try:
                text = domain.resolve_reply(text, parent=item.parent)
            except InvalidProgram as exc:  # a diff that does not apply, say: invalid
                refused.append(
                    Result(
                        item=item,
                        error=str(exc),
                        operator=operator,
                        info={"timings": {"eval_s": 0.0, **info}},
                    )
                )
                continue
            except Exception as exc:  # noqa: BLE001 - a domain bug on hostile input
                refused.append(
                    Result(
                        item=item,
                        operator=operator,
                        info={"timings": {"eval_s": 0.0, **info}},
                        error=f"resolving the reply failed: {type(exc).__name__}: {exc}",
                    )
                )
                continue
        entries.append((item, text, operator, info))
    if not entries:
        return refused
    outcomes = await evaluator.evaluate_many(
        [(text, item.eval_seed) for item, text, _, _ in entries], opponents, axes=axes
    )
    return refused + [
        outcome.result(
            item, operator=operator, timings={"eval_s": round(outcome.seconds, 6), **info}
        )
        for (item, _, operator, info), outcome in zip(entries, outcomes, strict=True)
    ]


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


class FinishedTasks:
    """Watched tasks that finished, and the future a waiter waits on for the next one."""

    def __init__(self) -> None:
        self._done: list[asyncio.Task] = []
        self._wakeup: asyncio.Future | None = None

    def watch(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task:
        """A task for ``coroutine`` whose completion :meth:`next` reports."""
        task = asyncio.create_task(coroutine)
        task.add_done_callback(self._on_done)
        return task

    def _on_done(self, task: asyncio.Task) -> None:
        self._done.append(task)
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    async def next(self) -> list[asyncio.Task]:
        """The watched tasks that finished since the last call (waits for one if none has)."""
        if not self._done:
            self._wakeup = asyncio.get_running_loop().create_future()
            try:
                await self._wakeup
            finally:
                self._wakeup = None
        done, self._done = self._done, []
        return done
