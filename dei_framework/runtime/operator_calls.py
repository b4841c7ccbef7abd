"""One node's operator calls, made one way: a recorded reply served when there is one, the
budget reserved and billed, every made call logged the moment it completes, and one error
ladder (a transient failure or a cap is a failed call; an operator error stops the node; any
other exception is a plugin bug that stops the node, not the run).

A single call is a batch of one: an operator with the ``batch`` capability is asked through
``propose_batch``, any other one call at a time through ``propose``.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from dei_framework.contract.domain import Domain
from dei_framework.contract.errors import BudgetExhausted, OperatorError, ReplayMismatch
from dei_framework.contract.operators import (
    Operator,
    OperatorReply,
    OperatorRequest,
    TransientOperatorFailure,
)
from dei_framework.runtime.budget.call_meter import CallMeter
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.replay import Recording, messages_digest, recorded_usage, replayed_reply
from dei_framework.search.scheduler import WorkItem

#: Consecutive failed calls, per slot of concurrency, after which a node gives up.
MAX_FAILURES_PER_SLOT = 30

#: A call's outcome: its reply (``None``: it failed, or a cap refused it) and its seconds, or
#: a replay mismatch in the place of the reply.
CallOutcome = tuple[OperatorReply | BaseException | None, float]


class OperatorCalls:
    """The calls of node ``name`` to its operator (see the module's docstring).

    Args:
        name: The node.
        domain: The domain (the requests' prompts).
        operator: The node's operator.
        ledger: The run's budget ledger.
        replies: Recorded calls to serve by request key and messages hash (``None``: none).
        record: Logs events and call lines.
        batched: Ask several calls in one ``propose_batch`` (an offline generator); its lines
            then leave out the messages' hash.
    """

    def __init__(
        self,
        *,
        name: str,
        domain: Domain,
        operator: Operator,
        ledger: BudgetLedger,
        replies: Recording | None,
        record: Callable[[list[dict], list[dict]], None],
        batched: bool,
    ) -> None:
        self.name, self.domain, self.operator, self.ledger = name, domain, operator, ledger
        self.replies, self.record, self.batched = replies, record, batched
        #: Calls that failed in a row (a served or made reply resets it).
        self.failures = 0
        #: One per call in flight (early ones included): never more than the operator's limit.
        self.slots = asyncio.Semaphore(operator.max_in_flight)

    @property
    def gave_up(self) -> bool:
        """Too many calls failed in a row: the node stops."""
        return self.failures >= MAX_FAILURES_PER_SLOT * self.operator.max_in_flight

    def gave_up_error(self) -> OperatorError:
        return OperatorError(
            f"{self.name}: operator {self.operator.label!r} failed "
            f"{self.failures} calls in a row; stopping this node"
        )

    async def back_off(self) -> None:
        """Waits after a failed call: the exponent grows once per slot-width of consecutive
        failures."""
        rounds_failed = self.failures / self.operator.max_in_flight
        await asyncio.sleep(min(2.0 ** min(rounds_failed, 8) * 0.05, 10.0))

    async def call_in_slot(self, item: WorkItem) -> tuple[OperatorReply | None, float]:
        """:meth:`call`, holding one of the operator's slots."""
        async with self.slots:
            return await self.call(item)

    async def call_batch_in_slots(self, items: Sequence[WorkItem]) -> list[CallOutcome]:
        """:meth:`call_batch`, each call holding its slot of the operator's limit as it would
        alone; backs off once after it if a call failed, as a slot would."""
        held = 0
        try:
            for _ in items:
                await self.slots.acquire()
                held += 1
            outcomes = await self.call_batch(items)
        finally:
            for _ in range(held):
                self.slots.release()
        if any(reply is None for reply, _ in outcomes):
            await self.back_off()
        return outcomes

    async def call(self, item: WorkItem) -> tuple[OperatorReply | None, float]:
        """The item's call (or its recorded reply): :meth:`call_batch` of one.

        Raises:
            ReplayMismatch: The record holds a different call under the item's key.
            OperatorError: The operator failed for good (or has a bug): the node stops.
        """
        ((reply, seconds),) = await self.call_batch([item])
        if isinstance(reply, BaseException):
            raise reply
        return reply, seconds

    async def call_batch(self, items: Sequence[WorkItem]) -> list[CallOutcome]:
        """The items' calls, the operator asked once for those not recorded (``(None, 0.0)``
        for a failed or refused call, a :class:`ReplayMismatch` in place of an item whose
        recording differs). The calls made are logged together.

        Raises:
            OperatorError: The operator failed for good (or has a bug): the node stops.
        """
        outcomes: list[CallOutcome] = []
        asked: list[tuple[int, OperatorRequest, dict[str, Any], CallMeter]] = []
        for index, item in enumerate(items):
            request = call = None
            if self.replies is not None:  # a recorded reply is looked up by the request
                request, call = self.request_of(item)
                try:
                    recorded = self.recorded(item, request)
                except ReplayMismatch as exc:
                    outcomes.append((exc, 0.0))
                    continue
                if recorded is not None:
                    outcomes.append(recorded)
                    continue
            try:
                meter = self.ledger.reserve(self.name)
            except BudgetExhausted:  # a cap was reached while this slot was planned
                outcomes.append((None, 0.0))
                continue
            outcomes.append((None, 0.0))  # replaced by the reply below
            if request is None:
                request, call = self.request_of(item, meter=meter)
            else:  # built above already (its messages too, for the lookup)
                request = attrs.evolve(request, meter=meter)
            asked.append((index, request, call, meter))
        if asked:
            await self._ask(asked, outcomes)
        return outcomes

    async def _ask(
        self,
        asked: list[tuple[int, OperatorRequest, dict[str, Any], CallMeter]],
        outcomes: list[CallOutcome],
    ) -> None:
        """Asks the operator for the ``asked`` calls, puts their replies into ``outcomes``
        and logs them: the error ladder."""
        started = time.perf_counter()
        requests = [request for _, request, _, _ in asked]
        try:
            if self.batched:
                replies = await self.operator.propose_batch(requests)
                if len(replies) != len(asked):
                    raise ValueError(f"{len(replies)} replies to {len(asked)} requests")
            else:  # one call at a time (its slot holds it)
                replies = [await self.operator.propose(request) for request in requests]
        except (TransientOperatorFailure, BudgetExhausted) as exc:
            seconds = time.perf_counter() - started
            failed = []
            for _, request, call, meter in asked:
                meter.release(attempts=getattr(exc, "attempts", 0), seconds=seconds)
                if meter.usage.attempts:  # a call refused before its first attempt cost nothing
                    failed.append(call_line(call, request, meter, seconds, failed=str(exc)))
                if not isinstance(exc, BudgetExhausted):
                    self.failures += 1
            self.record([], failed)
            return
        except OperatorError:
            for _, _, _, meter in asked:
                meter.release(seconds=time.perf_counter() - started)
            raise
        except Exception as exc:  # an operator plugin's bug stops its node, not the run
            for _, _, _, meter in asked:
                meter.release(seconds=time.perf_counter() - started)
            raise self.operator_bug(exc) from exc
        seconds = time.perf_counter() - started
        records = []
        for (index, request, call, meter), reply in zip(asked, replies, strict=True):
            meter.commit(reply, seconds=seconds)
            records.append(call_line(call, request, meter, seconds, reply=reply))
            outcomes[index] = (reply, seconds)
        self.failures = 0
        self.record([], records)

    def operator_bug(self, exc: Exception) -> OperatorError:
        """The error that stops this node when its operator plugin raised something it should
        not (a bug in the plugin stops its node, not the run)."""
        return OperatorError(
            f"{self.name}: operator {self.operator.label!r} failed: {type(exc).__name__}: {exc}"
        )

    def request_of(
        self, item: WorkItem, *, meter: CallMeter | None = None
    ) -> tuple[OperatorRequest, dict[str, Any]]:
        """The item's operator request (with the call's ``meter``, if any) and the head of its
        ``calls.jsonl`` line.

        A batching operator is a generator that ignores the messages: its lines leave out
        the messages' hash, a cost per call; replay hashes the recorded messages instead
        (:func:`~dei_framework.runtime.replay.recorded_digest`).
        """
        request = item.request(self.domain, meter=meter)
        call = {
            "key": item.key,
            "node": self.name,
            "round": item.round,
            "kind": item.kind,
            "parent": item.parent.id if item.parent else None,
            "operator": self.operator.label,
            "id": item.id,
        }
        if not self.batched:
            call["messages_sha256"] = messages_digest(request.messages)
        return request, call

    def recorded(
        self, item: WorkItem, request: OperatorRequest
    ) -> tuple[OperatorReply | None, float] | None:
        """The recorded reply of the item's call (logged and charged unless it was
        already), or ``None`` when there is none to serve."""
        recorded = (
            self.replies.take(item.key, request.messages) if self.replies is not None else None
        )
        if recorded is None:
            return None
        reply = replayed_reply(recorded.record)
        if not recorded.logged:
            meter = self.ledger.reserve(self.name)
            meter.record(**recorded_usage(recorded.record))
            seconds = recorded.record.get("seconds", 0.0)
            if reply is None:
                meter.release(seconds=seconds)
            else:
                meter.commit(reply, seconds=seconds)
            self.record([], [{**recorded.record, "replayed": True}])
        if reply is None:
            self.failures += 1
            return None, 0.0
        self.failures = 0
        return reply, 0.0


def calls_out(calls: Mapping[asyncio.Task, Sequence[WorkItem]]) -> int:
    """Operator calls in flight in ``calls`` (a batch task holds several)."""
    return sum(len(items) for items in calls.values())


def call_outcomes(
    done: Sequence[asyncio.Task], calls: dict[asyncio.Task, list[WorkItem]]
) -> list[tuple[WorkItem, Any]]:
    """The finished call tasks' ``(item, outcome)`` pairs in slot order, taken out of
    ``calls``; an operator error or replay mismatch stands in the place of its item(s)."""
    outcomes: list[tuple[WorkItem, Any]] = []
    for task in done:
        items = calls.pop(task, None)
        if items is None:
            continue
        try:
            result = task.result()
        except (OperatorError, ReplayMismatch) as exc:
            outcomes.extend((item, exc) for item in items)
            continue
        if isinstance(result, list):  # a batch task
            outcomes.extend(zip(items, result, strict=True))
        else:
            outcomes.append((items[0], result))
    outcomes.sort(key=lambda pair: pair[0].order)
    return outcomes


def call_line(
    call: Mapping[str, Any],
    request: OperatorRequest,
    meter: CallMeter,
    seconds: float,
    *,
    reply: OperatorReply | None = None,
    failed: str | None = None,
) -> dict[str, Any]:
    """A ``calls.jsonl`` line of a made call: its reply, or why it failed (keys in the order
    the file has always had them: a resume compares lines)."""
    line = {**call, "messages": list(request.messages)}
    if failed is not None:
        line["failed"] = failed
    line["seconds"] = round(seconds, 6)
    if reply is not None:
        line["reply"] = reply_json(reply)
    line["usage"] = meter.to_json()
    return line


_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(field.name for field in attrs.fields(cls))


def reply_json(reply: OperatorReply) -> dict[str, Any]:
    """``attrs.asdict(reply)`` (the ``reply`` of a ``calls.jsonl`` line), without its general
    walk when every field holds a plain value, as they do (once per call)."""
    data = {name: getattr(reply, name) for name in _field_names(type(reply))}
    if all(type(value) in _PLAIN_TYPES for value in data.values()):
        return data
    return attrs.asdict(reply)
