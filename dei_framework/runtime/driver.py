"""The built-in asynchronous driver of one node: a
:class:`~dei_framework.search.scheduler.Scheduler`
kept busy with operator calls and evaluations.

The driver keeps the operator's ``max_in_flight`` call slots busy. A slot is held only while
its call is out; the reply's evaluation runs beside the calls and is told on its own — no
batch barrier — and the scheduler admits results in slot order, so a seeded run is
reproducible whatever the timing. While a round drains, the next round's from-scratch calls
(which depend on nothing in this round) are made early, within the same ``max_in_flight``.
Calls are logged the moment they complete and admissions the moment they happen; a checkpoint
(the scheduler's :meth:`~dei_framework.search.scheduler.Scheduler.state_json`, the ledger and the
log offsets, taken together between two awaits) is therefore consistent at any moment.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from dei_framework.contract.domain import Domain
from dei_framework.contract.errors import OperatorError, ReplayMismatch
from dei_framework.contract.kinds import CALL_KINDS, EventKind
from dei_framework.contract.operators import Operator
from dei_framework.contract.records import Candidate
from dei_framework.evaluation.local import Evaluator
from dei_framework.runtime.array_path import (
    ARRAY_BATCH,
    ArrayOutcome,
    array_path_columns,
    array_step,
    tell_arrays,
)
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.budget.usage import NodeCaps
from dei_framework.runtime.operator_calls import OperatorCalls, call_outcomes, calls_out
from dei_framework.runtime.replay import Recording
from dei_framework.runtime.replies import EarlyCalls, FinishedTasks, evaluate_replies
from dei_framework.runtime.rounds import RoundGenerality, RoundInputs, generality_subject
from dei_framework.search.archives import ArchiveBase
from dei_framework.search.events import EvaluatedEvent, RoundEvent
from dei_framework.search.scheduler import Result, RoundEnd, Scheduler, TellReport, WorkItem


class DriverSink:
    """Where a :class:`SearchDriver` sends what happens and asks for what comes from outside
    its node; each method here does nothing (a node alone: no log, no peers). A run overrides
    what it needs."""

    def record(self, events: list[dict], calls: list[dict]) -> None:
        """Takes finished events and call records, as JSON (the run log)."""

    def receive(self, round_index: int) -> Sequence[Candidate] | Awaitable[Sequence[Candidate]]:
        """The peer champions to take in at round ``round_index``'s start (or an awaitable of
        them: virtual-time delivery may wait for peers)."""
        return ()

    async def publish(self, archive: ArchiveBase, round_index: int) -> None:
        """Shares a finished round's archive (called only when it has a champion)."""

    def round_ended(self, event: RoundEvent, archive: ArchiveBase) -> None:
        """Takes a round's event and its finished archive when the round ends."""

    def evaluated(self, events: Sequence[EvaluatedEvent]) -> None:
        """Takes the ``evaluated`` events of each batch of admitted items (every kind, in slot
        order), after they were logged."""

    def candidate_logged(self, line: dict[str, Any]) -> None:
        """Takes the logged ``evaluated`` line of each operator-made candidate (the live
        display's input)."""

    def checkpoint(self) -> None:
        """Called when a round has ended (a good moment to write a checkpoint)."""


class SearchDriver:
    """Runs one node's scheduler with an operator and an evaluator, asynchronously.

    Args:
        scheduler: The node's ask/tell core (restored already on resume).
        domain: The domain (prompts).
        operator: The node's operator.
        evaluator: Shared evaluation pool.
        ledger: Shared budget ledger.
        sink: Where the node's events go and its peers' champions come from.
        replies: Recorded calls served by request key and messages hash (resume and replay).
        axes: Descriptor keys every evaluation must report (default: the scheduler's axes;
            an ensemble adds the run's common axes, into which reports map every node).
        array_path: Whether the array path may be used where it applies (see
            :attr:`array_path`).
    """

    def __init__(
        self,
        *,
        scheduler: Scheduler,
        domain: Domain,
        operator: Operator,
        evaluator: Evaluator,
        ledger: BudgetLedger,
        sink: DriverSink | None = None,
        replies: Recording | None = None,
        axes: Sequence[str] | None = None,
        array_path: bool = True,
    ) -> None:
        self.scheduler = scheduler
        self.name = scheduler.name
        self.domain = domain
        self.operator = operator
        self.evaluator = evaluator
        self.ledger = ledger
        self.sink = sink = sink or DriverSink()
        self.replies = replies
        self.axes = tuple(axes if axes is not None else scheduler.space.names)
        self.generality = RoundGenerality(evaluator)
        # The same dict and set under the driver's names: a resume fills the set in, the
        # summary reads it.
        self.generality_tasks = self.generality.tasks
        self.generality_excluded = self.generality.excluded
        # An offline operator with its own batch method answers a turn's calls in one call of
        # it (one task, one log write); others (LLM operators: per-call concurrency, retries
        # and ledger) keep one task per call.
        self.calls = OperatorCalls(
            name=self.name,
            domain=domain,
            operator=operator,
            ledger=ledger,
            replies=replies,
            record=sink.record,
            batched=operator.offline and "batch" in operator.capabilities,
        )
        self._inputs = RoundInputs(
            scheduler=scheduler, evaluator=evaluator, receive=sink.receive, record=sink.record
        )
        self._round_end: RoundEnd | None = None
        # The array path (docs/performance.md): genomes from the operator straight to the
        # domain's vectorised evaluation and to Scheduler.tell_batch, with no text written
        # or parsed (only the elites' texts, when read) and no calls.jsonl line.
        self._array_columns = (
            array_path_columns(
                operator=operator,
                domain=domain,
                scheduler=scheduler,
                evaluator=evaluator,
                recorded=bool(replies),
                capped=ledger.caps[self.name] != NodeCaps(),
                axes=self.axes,
            )
            if array_path
            else None
        )
        self._finished = FinishedTasks()
        # Calls of the next round made while this one drains, by request key.
        self._early = EarlyCalls(
            scheduler=scheduler, ledger=ledger, calls=self.calls, finished=self._finished
        )

    @property
    def array_path(self) -> bool:
        """Whether this node's calls go through the array path (docs/performance.md)."""
        return self._array_columns is not None

    @property
    def history(self) -> list[RoundEvent]:
        """The round events so far (with generality filled in when measured)."""
        return self.scheduler.history

    @property
    def stopped(self) -> str | None:
        return self.scheduler.stopped

    def state_json(self) -> dict[str, Any]:
        """The node's checkpoint state: the scheduler's, plus its usage."""
        usage = self.ledger.usage[self.name].to_json()
        return {
            **self.scheduler.state_json(),
            "usage": {**usage, "in_flight": 0},
            "generality_excluded": sorted(self.generality_excluded),
        }

    # --- the loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Runs the remaining rounds (all of them for a new node)."""
        self.generality.resume(self.history)  # rounds whose generality a crash interrupted
        scheduler = self.scheduler
        if scheduler.started:  # resumed mid-round
            await self._load_opponents()
        # A slot is busy only while its operator call (or the back-off after a failed one) is
        # in flight: evaluations run beside the calls, so the operator keeps max_in_flight
        # calls going while earlier replies are evaluated and admitted. The replies that came
        # in together are evaluated together (one task, one batch for the evaluator).
        # The call tasks in flight and their items (several for a batch task).
        calls: dict[asyncio.Task, list[WorkItem]] = {}
        evaluations: set[asyncio.Task] = set()
        fatal: BaseException | None = None
        while True:
            if (
                fatal is None
                and not scheduler.finished
                and not scheduler.started
                and not calls
                and not evaluations
            ):
                await self._start_round()
            if fatal is None and not scheduler.finished:
                self._fill(calls, evaluations)
                if scheduler.draining and self._array_columns is None:
                    self._call_early(
                        self.operator.max_in_flight - calls_out(calls) - self._early.running()
                    )
            if not calls and not evaluations:
                if fatal is not None or scheduler.finished:
                    break
                self._handle(scheduler.tell([]))  # a round with nothing to do ends here
                if self._round_end is None:
                    raise RuntimeError(f"{self.name}: the scheduler has no work and no round end")
                await self._finish_round()
                continue
            fatal = await self._take_done(await self._finished.next(), calls, evaluations, fatal)
            if self._round_end is not None:
                await self._finish_round()
        await self._wind_up(fatal)

    async def _take_done(
        self,
        done: list[asyncio.Task],
        calls: dict[asyncio.Task, list[WorkItem]],
        evaluations: set[asyncio.Task],
        fatal: BaseException | None,
    ) -> BaseException | None:
        """Takes in the finished tasks: replies go to evaluation (those that came in together
        in one batch), evaluations and failed calls are told; returns the error that stops
        the node, if one has.

        Raises:
            ReplayMismatch: A call does not match the record (every task settled first).
        """
        scheduler = self.scheduler
        mismatches = []
        replies: list[tuple[WorkItem, str, str, dict[str, Any]]] = []
        for item, outcome in call_outcomes(done, calls):
            if isinstance(outcome, OperatorError):
                fatal = fatal or outcome
            elif isinstance(outcome, ReplayMismatch):
                mismatches.append(outcome)
            elif isinstance(outcome, Result):  # the call failed: nothing to evaluate
                self._handle(scheduler.tell([outcome]))
            else:
                replies.append((item, *outcome))
        if replies:
            evaluations.add(self._finished.watch(self._evaluate(replies)))
        if mismatches:
            # Stops the run: settle every task first so none is left unretrieved. The
            # lowest slot's mismatch is the one reported (slots start in order).
            await self._cancel_all((*calls, *evaluations, *self._early.tasks.values()))
            raise mismatches[0]
        for task in done:
            if task in evaluations:
                evaluations.discard(task)
                try:
                    results = task.result()
                except OperatorError as exc:  # an array-path call failed
                    fatal = fatal or exc
                    continue
                if isinstance(results, ArrayOutcome):
                    self._tell_arrays(results)
                elif results:
                    self._handle(scheduler.tell(results))
        if self.calls.gave_up:
            fatal = fatal or self.calls.gave_up_error()
        return fatal

    async def _wind_up(self, fatal: BaseException | None) -> None:
        """Ends the node's run: early calls of a round it will not run cancelled, the error
        that stopped it logged, and every round's generality filled in."""
        await self._early.cancel()  # calls of a round the node will not run
        if fatal is not None:
            self.scheduler.stop(str(fatal))
            self.sink.record(
                [
                    {
                        "event": EventKind.NODE_STOPPED,
                        "node": self.name,
                        "round": self.scheduler.round,
                        "reason": self.scheduler.stopped,
                    }
                ],
                [],
            )
        await self.generality.fill(self.history)

    async def _start_round(self) -> None:
        """Takes in the received champions and starts the round (:class:`RoundInputs`)."""
        await self._inputs.start_round()

    async def _load_opponents(self) -> None:
        await self._inputs.load_opponents()

    def _handle(self, report: TellReport) -> None:
        events = [event for a in report.admitted if (event := a.event()) is not None]
        events.extend(report.events)
        for admission in report.admitted:
            self.generality_excluded.update(admission.result.info.get("generality_matches", ()))
        lines = [event.to_json() for event in events]
        sink = self.sink
        sink.record(lines, [])
        sink.evaluated(events)
        for line in lines:
            if line["kind"] in CALL_KINDS:  # progress counts operator-made candidates
                sink.candidate_logged(line)
        if report.round_end is not None:
            self._round_end = report.round_end

    async def _finish_round(self) -> None:
        end, self._round_end = self._round_end, None
        self.sink.round_ended(end.event, end.archive)
        self.sink.record([end.event.to_json()], [])
        subject = generality_subject(end.event)
        if subject is not None:
            self.generality.start(end.event.round, subject)
        if end.champion is not None:
            # Published before the checkpoint, so that a resumed run has it (virtual-time
            # delivery checkpoints what was published).
            await self.sink.publish(end.archive, end.event.round)
        self.sink.checkpoint()

    def _call_early(self, free: int) -> None:
        """Starts up to ``free`` of the next round's calls early (:meth:`EarlyCalls.start`)."""
        self._early.start(free)

    def _fill(
        self, calls: dict[asyncio.Task, list[WorkItem]], evaluations: set[asyncio.Task]
    ) -> None:
        """Hands the scheduler's next items to free call slots (items without a call go
        straight to evaluation; a batching operator's calls go out together)."""
        scheduler = self.scheduler
        remaining = self.ledger.remaining(self.name)
        programs: list[tuple[WorkItem, str, str, dict[str, Any]]] = []  # evaluated as they are
        batch: list[WorkItem] = []
        arrays: list[WorkItem] = []
        busy = calls_out(calls)
        # The array path holds no call slot: it takes whatever the lag rule lets be planned.
        limit = ARRAY_BATCH if self._array_columns is not None else self.operator.max_in_flight
        while scheduler.stopped is None and (free := limit - busy) > 0:
            items = scheduler.ask(free)
            if not items:
                break
            for item in items:
                if not item.needs_call:
                    programs.append((item, item.program.text if item.program else "", "", {}))
                    continue
                # Made early, or completed before a resume's checkpoint: charged already (a
                # node whose quota is used up may still be owed their admission).
                paid = item.key in self._early or (
                    self.replies is not None and self.replies.charged(item.key)
                )
                if not paid and remaining is not None and remaining <= 0:
                    reason = self.ledger.exhausted(self.name)
                    scheduler.stop(
                        reason and f"{self.name}: {reason}" or f"{self.name}: call budget used up"
                    )
                    break
                busy += 1
                if self._array_columns is not None:
                    arrays.append(item)
                elif self.calls.batched and not paid:
                    batch.append(item)
                else:
                    calls[self._finished.watch(self._reply_of(item))] = [item]
        if batch:
            calls[self._finished.watch(self._replies_of(batch))] = batch
        if arrays:
            evaluations.add(
                self._finished.watch(
                    array_step(
                        arrays,
                        operator=self.operator,
                        evaluator=self.evaluator,
                        columns=self._array_columns,
                        operator_bug=self.calls.operator_bug,
                    )
                )
            )
        if programs:
            evaluations.add(self._finished.watch(self._evaluate(programs)))

    @staticmethod
    async def _cancel_all(tasks: Sequence[asyncio.Task]) -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _reply_of(self, item: WorkItem) -> tuple[str, str, dict[str, Any]] | Result:
        """One slot's operator call: the program text to evaluate, or the failed call's result
        (after a back-off)."""
        early = self._early.pop(item.key)
        if early is not None:
            reply, seconds = await early
        else:
            async with self.calls.slots:  # (as call_in_slot, one coroutine less per call)
                reply, seconds = await self.calls.call(item)
        if reply is None:
            await self.calls.back_off()
            return Result(item=item, call_failed=True)
        return reply.text, self.operator.label, {"call_s": round(seconds, 6)}

    async def _replies_of(
        self, items: Sequence[WorkItem]
    ) -> list[tuple[str, str, dict[str, Any]] | Result | BaseException]:
        """What :meth:`_reply_of` gives for each item, its calls made in one call of the
        operator's ``propose_batch`` (a replay mismatch or operator error in an item's
        place)."""
        replies = await self.calls.call_batch_in_slots(items)
        label = self.operator.label
        return [
            reply
            if isinstance(reply, BaseException)
            else Result(item=item, call_failed=True)
            if reply is None
            else (reply.text, label, {"call_s": round(seconds, 6)})
            for item, (reply, seconds) in zip(items, replies, strict=True)
        ]

    def _tell_arrays(self, outcome: ArrayOutcome) -> None:
        """Counts an array step's calls and tells its results (:func:`tell_arrays`)."""
        report = tell_arrays(
            outcome,
            scheduler=self.scheduler,
            ledger=self.ledger,
            domain=self.domain,
            operator=self.operator.label,
            columns=self._array_columns,
        )
        if report is not None:
            self._handle(report)

    async def _evaluate(
        self, batch: Sequence[tuple[WorkItem, str, str, Mapping[str, Any]]]
    ) -> list[Result]:
        """Evaluates replies and programs in one batch (:func:`evaluate_replies`)."""
        return await evaluate_replies(
            batch,
            domain=self.domain,
            evaluator=self.evaluator,
            opponents=self._inputs.opponents,
            axes=self.axes,
        )
