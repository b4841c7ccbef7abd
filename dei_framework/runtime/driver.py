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
import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from dei_framework.contract.domain import Domain, GenomeEvaluations, Program
from dei_framework.contract.errors import (
    BudgetExhausted,
    InvalidProgram,
    OperatorError,
    ReplayMismatch,
)
from dei_framework.contract.operators import (
    Operator,
    OperatorReply,
    OperatorRequest,
    TransientOperatorFailure,
)
from dei_framework.contract.records import Candidate
from dei_framework.evaluation.local import Evaluator, OpponentSet
from dei_framework.runtime.budget import BudgetLedger, CallMeter, NodeCaps
from dei_framework.runtime.replay import Recording, messages_digest, recorded_usage, replayed_reply
from dei_framework.search.archives import ArchiveBase
from dei_framework.search.scheduler import (
    Result,
    RoundEnd,
    Scheduler,
    TellReport,
    WorkItem,
    derive_seed,
)

#: Consecutive failed calls, per slot of concurrency, after which a node gives up.
MAX_FAILURES_PER_SLOT = 30
#: Most call items one array-path step takes (the lag rule usually allows fewer).
ARRAY_BATCH = 1024

__all__ = ["MAX_FAILURES_PER_SLOT", "RecordedCall", "SearchDriver", "derive_seed"]


@attrs.frozen(kw_only=True)
class RecordedCall:
    """A call found in a run's record, served instead of asking the operator again.

    Attributes:
        record: The ``calls.jsonl`` line.
        logged: The call is already in this run's log and budget (a resumed run's calls
            that completed before its checkpoint); otherwise it is logged and charged anew.
    """

    record: Mapping[str, Any]
    logged: bool = False


@attrs.frozen(kw_only=True)
class ArrayOutcome:
    """An array-path step's genomes and their evaluation, not yet counted or told.

    Attributes:
        items: The call items, in order.
        genomes: The operator's genome per item.
        fitness: Per item, its fitness (``None``: invalid).
        descriptors: Per item, its descriptors (or one value broadcast to all).
        errors: Per item, why it is invalid (``None``: valid).
        call_seconds: The operator's time for all the genomes.
        eval_seconds: The evaluation's time per genome.
    """

    items: Sequence[WorkItem]
    genomes: Sequence[Any]
    fitness: list[float | None]
    descriptors: np.ndarray | float
    errors: list[str | None]
    call_seconds: float
    eval_seconds: float


class SearchDriver:
    """Runs one node's scheduler with an operator and an evaluator, asynchronously.

    Args:
        scheduler: The node's ask/tell core (restored already on resume).
        domain: The domain (prompts).
        operator: The node's operator.
        evaluator: Shared evaluation pool.
        ledger: Shared budget ledger.
        record: Called with finished events and call records (the run log).
        receive: Returns the peer champions to take in at a round's start (or an awaitable of
            them: virtual-time delivery may wait for peers).
        publish: Called with a finished round's archive and its round (sharing).
        replies: Recorded calls served by request key and messages hash (resume and replay).
        on_round: Called with the round event and the finished archive when a round ends.
        on_event: Called with the ``evaluated`` event of each operator-made candidate.
        checkpoint: Called when a round has ended (a good moment to write a checkpoint).
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
        record: Callable[[list[dict], list[dict]], None] = lambda events, calls: None,
        receive: Callable[[int], Sequence[Candidate] | Awaitable[Sequence[Candidate]]] = (
            lambda round_index: ()
        ),
        publish: Callable[[ArchiveBase, int], Awaitable[None]] | None = None,
        replies: Recording | None = None,
        on_round: Callable[[dict, ArchiveBase], None] = lambda event, archive: None,
        on_event: Callable[[dict], None] = lambda event: None,
        checkpoint: Callable[[], None] = lambda: None,
        axes: Sequence[str] | None = None,
        array_path: bool = True,
    ) -> None:
        self.scheduler = scheduler
        self.name = scheduler.name
        self.domain = domain
        self.operator = operator
        self.evaluator = evaluator
        self.ledger = ledger
        self.record = record
        self.receive = receive
        self.publish = publish
        self.replies = replies
        self.on_round = on_round
        self.on_event = on_event
        self.checkpoint = checkpoint
        self.axes = tuple(axes if axes is not None else scheduler.space.names)
        self.generality_tasks: dict[int, asyncio.Task] = {}
        #: Generality reference programs this node fought or produced (by the domain's
        #: :meth:`~dei_framework.contract.domain.Domain.reference_matches`): left out of its
        #: generality.
        self.generality_excluded: set[str] = set()
        self._failures = 0
        self._known: dict[str, Program | str] = {}
        self._opponents: OpponentSet | None = None
        self._round_end: RoundEnd | None = None
        # Calls of the next round made while this one drains, by request key.
        self._early: dict[str, asyncio.Task[tuple[OperatorReply | None, float]]] = {}
        self._next_calls: tuple[int, list[WorkItem]] = (-1, [])
        # Operator calls in flight, early ones included, never exceed the operator's limit.
        self._calling = asyncio.Semaphore(operator.max_in_flight)
        # An offline operator with its own batch method answers a turn's calls in one call of
        # it (one task, one log write); others (LLM operators: per-call concurrency, retries
        # and ledger) keep one task per call.
        self._batched = operator.offline and "batch" in operator.capabilities
        # The array path (docs/performance.md): genomes from the operator straight to the
        # domain's vectorised evaluation and to Scheduler.tell_batch, with no text written
        # or parsed (only the elites' texts, when read) and no calls.jsonl line.
        self._array_columns = self._array_path_columns() if array_path else None
        # Watched tasks that finished, and the future the loop waits on for the next one.
        self._done: list[asyncio.Task] = []
        self._wakeup: asyncio.Future | None = None

    def _array_path_columns(self) -> list[int] | None:
        """The domain's descriptor columns of this node's axes when the array path applies,
        else ``None``: an offline operator and a domain that both have the array form, the
        built-in local evaluator, nothing recorded to serve, no cap but the call quota, the
        scheduler's own axes and an archive without its own ``add`` (the conditions under
        which it gives what the text path gives)."""
        operator, domain, scheduler = self.operator, self.domain, self.scheduler
        axis_names = [axis.name for axis in domain.descriptor_axes()]
        if not (operator.offline
                and "array" in operator.capabilities and "array" in domain.capabilities
                and self.evaluator.local and not self.replies
                and self.ledger.caps[self.name] == NodeCaps()
                and set(self.axes) == set(scheduler.space.names) <= set(axis_names)
                and type(scheduler.archive).add is ArchiveBase.add):
            return None
        return [axis_names.index(name) for name in scheduler.space.names]

    @property
    def array_path(self) -> bool:
        """Whether this node's calls go through the array path (docs/performance.md)."""
        return self._array_columns is not None

    @property
    def history(self) -> list[dict[str, Any]]:
        """The round events so far (with generality filled in when measured)."""
        return self.scheduler.history

    @property
    def stopped(self) -> str | None:
        return self.scheduler.stopped

    def state_json(self) -> dict[str, Any]:
        """The node's checkpoint state: the scheduler's, plus its usage."""
        usage = self.ledger.usage[self.name].to_json()
        return {**self.scheduler.state_json(), "usage": {**usage, "in_flight": 0},
                "generality_excluded": sorted(self.generality_excluded)}  # fmt: skip

    # --- the loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Runs the remaining rounds (all of them for a new node)."""
        for entry in self.history:  # rounds whose generality a crash interrupted
            subject = generality_subject(entry)
            if entry["generality"] is None and subject is not None:
                self._start_generality(entry["round"], subject)
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
            if (fatal is None and not scheduler.finished and not scheduler.started
                    and not calls and not evaluations):
                await self._start_round()
            if fatal is None and not scheduler.finished:
                self._fill(calls, evaluations)
                if scheduler.draining and self._array_columns is None:
                    self._call_early(self.operator.max_in_flight - _calls_out(calls)
                                     - self._early_running())  # fmt: skip
            if not calls and not evaluations:
                if fatal is not None or scheduler.finished:
                    break
                self._handle(scheduler.tell([]))  # a round with nothing to do ends here
                if self._round_end is None:
                    raise RuntimeError(f"{self.name}: the scheduler has no work and no round end")
                await self._finish_round()
                continue
            done = await self._next_done()
            mismatches = []
            replies: list[tuple[WorkItem, str, str, dict[str, Any]]] = []
            for item, outcome in _call_outcomes(done, calls):
                if isinstance(outcome, OperatorError):
                    fatal = fatal or outcome
                elif isinstance(outcome, ReplayMismatch):
                    mismatches.append(outcome)
                elif isinstance(outcome, Result):  # the call failed: nothing to evaluate
                    self._handle(scheduler.tell([outcome]))
                else:
                    replies.append((item, *outcome))
            if replies:
                evaluations.add(self._watch(self._evaluate(replies)))
            if mismatches:
                # Stops the run: settle every task first so none is left unretrieved. The
                # lowest slot's mismatch is the one reported (slots start in order).
                await self._cancel_all((*calls, *evaluations, *self._early.values()))
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
            if self._failures >= MAX_FAILURES_PER_SLOT * self.operator.max_in_flight:
                fatal = fatal or OperatorError(
                    f"{self.name}: operator {self.operator.label!r} failed {self._failures} "
                    "calls in a row; stopping this node"
                )
            if self._round_end is not None:
                await self._finish_round()
        for task in self._early.values():  # calls of a round the node will not run
            task.cancel()
        await asyncio.gather(*self._early.values(), return_exceptions=True)
        self._early.clear()
        if fatal is not None:
            scheduler.stop(str(fatal))
            self.record([{"event": "node_stopped", "node": self.name, "round": scheduler.round,
                          "reason": scheduler.stopped}], [])  # fmt: skip
        # Every round's figure leaves out the same reference programs: all that this node
        # fought or produced in the whole run, so that its figures compare across rounds.
        for round_index, task in self.generality_tasks.items():
            value = self._share(await task)
            for entry in self.history:
                if entry["round"] == round_index:
                    entry["generality"] = value

    def _watch(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task:
        """A task for ``coroutine`` whose completion :meth:`_next_done` reports."""
        task = asyncio.create_task(coroutine)
        task.add_done_callback(self._on_done)
        return task

    def _on_done(self, task: asyncio.Task) -> None:
        self._done.append(task)
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    async def _next_done(self) -> list[asyncio.Task]:
        """The watched tasks that finished since the last call (waits for one if none has).

        Each task reports itself as it finishes, so a wait costs the same however many tasks
        are in flight (``asyncio.wait`` would hook and unhook every one of them each time).
        """
        if not self._done:
            self._wakeup = asyncio.get_running_loop().create_future()
            try:
                await self._wakeup
            finally:
                self._wakeup = None
        done, self._done = self._done, []
        return done

    def _share(self, outcomes: Mapping[str, bool] | float | None) -> float | None:
        """Generality from per-reference outcomes, leaving out the excluded programs."""
        if not isinstance(outcomes, Mapping):
            return outcomes
        kept = [beaten for name, beaten in outcomes.items()
                if name not in self.generality_excluded]  # fmt: skip
        return sum(kept) / len(kept) if kept else None

    async def _start_round(self) -> None:
        """Validates received champions off the event loop, then starts the round."""
        received = []
        champions = self.receive(self.scheduler.round)
        if inspect.isawaitable(champions):
            champions = await champions
        for champion in champions:
            parsed = await self.evaluator.parse(champion.text)
            if isinstance(parsed, Program):  # junk never enters the pool
                received.append(attrs.evolve(champion, text=parsed.text))
        accepted = self.scheduler.start_round(received)
        self.record([{"event": "received", "node": self.name, "round": self.scheduler.round,
                      "from": c.node, "from_round": c.round, "program": c.text,
                      "operator": c.operator} for c in accepted], [])  # fmt: skip
        await self._load_opponents()

    async def _load_opponents(self) -> None:
        """Parses the round's opponents once per run (off the event loop) and installs them in
        the evaluation workers once per round."""
        opponents = []
        for opponent in self.scheduler.opponents:
            if opponent.text not in self._known:
                self._known[opponent.text] = await self.evaluator.parse(opponent.text)
            if isinstance(self._known[opponent.text], Program):
                opponents.append(self._known[opponent.text])
        self._opponents = self.evaluator.install(opponents)

    def _handle(self, report: TellReport) -> None:
        events = [event for a in report.admitted if (event := a.event()) is not None]
        events.extend(report.events)
        for admission in report.admitted:
            self.generality_excluded.update(admission.result.info.get("generality_matches", ()))
        self.record(events, [])
        for event in events:
            if event["kind"] in ("new", "mutate"):  # progress counts operator-made candidates
                self.on_event(event)
        if report.round_end is not None:
            self._round_end = report.round_end

    async def _finish_round(self) -> None:
        end, self._round_end = self._round_end, None
        self.on_round(end.event, end.archive)
        self.record([end.event], [])
        subject = generality_subject(end.event)
        if subject is not None:
            self._start_generality(end.event["round"], subject)
        if end.champion is not None and self.publish is not None:
            # Published before the checkpoint, so that a resumed run has it (virtual-time
            # delivery checkpoints what was published).
            await self.publish(end.archive, end.event["round"])
        self.checkpoint()

    def _early_running(self) -> int:
        return sum(1 for task in self._early.values() if not task.done())

    def _call_early(self, free: int) -> None:
        """Starts up to ``free`` of the next round's calls that do not depend on this round
        (its from-scratch slots), so the slots do not idle while this round drains. They are
        the calls the next round makes anyway; its slots pick up the replies by key."""
        remaining = self.ledger.remaining(self.name)
        if remaining is not None:
            free = min(free, remaining - self._early_running())
        if free <= 0:
            return
        if self._next_calls[0] != self.scheduler.round:
            self._next_calls = (self.scheduler.round, self.scheduler.next_round_calls())
        for item in self._next_calls[1]:
            if free <= 0:
                break
            if item.key not in self._early:
                self._early[item.key] = self._watch(self._slot_call(item))
                free -= 1

    def _fill(self, calls: dict[asyncio.Task, list[WorkItem]],
              evaluations: set[asyncio.Task]) -> None:  # fmt: skip
        """Hands the scheduler's next items to free call slots (items without a call go
        straight to evaluation; a batching operator's calls go out together)."""
        scheduler = self.scheduler
        remaining = self.ledger.remaining(self.name)
        programs: list[tuple[WorkItem, str, str, dict[str, Any]]] = []  # evaluated as they are
        batch: list[WorkItem] = []
        arrays: list[WorkItem] = []
        busy = _calls_out(calls)
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
                paid = item.key in self._early or (self.replies is not None
                                                   and self.replies.charged(item.key))
                if not paid and remaining is not None and remaining <= 0:
                    reason = self.ledger.exhausted(self.name)
                    scheduler.stop(reason and f"{self.name}: {reason}"
                                   or f"{self.name}: call budget used up")  # fmt: skip
                    break
                busy += 1
                if self._array_columns is not None:
                    arrays.append(item)
                elif self._batched and not paid:
                    batch.append(item)
                else:
                    calls[self._watch(self._reply_of(item))] = [item]
        if batch:
            calls[self._watch(self._replies_of(batch))] = batch
        if arrays:
            evaluations.add(self._watch(self._array_step(arrays)))
        if programs:
            evaluations.add(self._watch(self._evaluate(programs)))

    @staticmethod
    async def _cancel_all(tasks: Sequence[asyncio.Task]) -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _reply_of(self, item: WorkItem) -> tuple[str, str, dict[str, Any]] | Result:
        """One slot's operator call: the program text to evaluate, or the failed call's result
        (after a back-off)."""
        early = self._early.pop(item.key, None)
        if early is not None:
            reply, seconds = await early
        else:
            async with self._calling:  # (what _slot_call does, one coroutine less per call)
                reply, seconds = await self._call(item)
        if reply is None:
            # Back off as the old batch loop did: the exponent grows once per slot-width
            # of consecutive failures.
            rounds_failed = self._failures / self.operator.max_in_flight
            await asyncio.sleep(min(2.0 ** min(rounds_failed, 8) * 0.05, 10.0))
            return Result(item=item, call_failed=True)
        return reply.text, self.operator.label, {"call_s": round(seconds, 6)}

    async def _replies_of(
        self, items: Sequence[WorkItem]
    ) -> list[tuple[str, str, dict[str, Any]] | Result | BaseException]:
        """What :meth:`_reply_of` gives for each item, its calls made in one call of the
        operator's ``propose_batch`` (a replay mismatch or operator error in an item's
        place)."""
        held = 0
        try:
            for _ in items:  # each call holds its slot of the operator's limit, as alone
                await self._calling.acquire()
                held += 1
            replies = await self._call_batch(items)
        finally:
            for _ in range(held):
                self._calling.release()
        if any(reply is None for reply, _ in replies):  # back off once, as a slot would
            rounds_failed = self._failures / self.operator.max_in_flight
            await asyncio.sleep(min(2.0 ** min(rounds_failed, 8) * 0.05, 10.0))
        label = self.operator.label
        return [reply if isinstance(reply, BaseException)
                else Result(item=item, call_failed=True) if reply is None
                else (reply.text, label, {"call_s": round(seconds, 6)})
                for item, (reply, seconds) in zip(items, replies, strict=True)]  # fmt: skip

    async def _call_batch(
        self, items: Sequence[WorkItem]
    ) -> list[tuple[OperatorReply | BaseException | None, float]]:
        """:meth:`_call` for several items, the operator asked once for those not recorded
        (``(None, 0.0)`` for a failed or refused call, a :class:`ReplayMismatch` in place of
        an item whose recording differs). The calls are logged together."""
        outcomes: list[tuple[OperatorReply | BaseException | None, float]] = []
        asked: list[tuple[int, OperatorRequest, dict[str, Any], CallMeter]] = []
        for index, item in enumerate(items):
            if self.replies is not None:  # a recorded reply is looked up by the request
                request, call = self._request_of(item)
                try:
                    recorded = self._recorded(item, request)
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
            if self.replies is None:
                request, call = self._request_of(item, meter=meter)
            else:  # built above already (its messages too, for the lookup)
                request = attrs.evolve(request, meter=meter)
            asked.append((index, request, call, meter))
        if not asked:
            return outcomes
        started = time.perf_counter()
        try:
            replies = await self.operator.propose_batch([request for _, request, _, _ in asked])
            if len(replies) != len(asked):
                raise ValueError(f"{len(replies)} replies to {len(asked)} requests")
        except (TransientOperatorFailure, BudgetExhausted) as exc:
            seconds = time.perf_counter() - started
            failed = []
            for _, request, call, meter in asked:
                meter.release(attempts=getattr(exc, "attempts", 0), seconds=seconds)
                if meter.usage.attempts:
                    failed.append(_call_line(call, request, meter, seconds, failed=str(exc)))
                if not isinstance(exc, BudgetExhausted):
                    self._failures += 1
            self.record([], failed)
            return outcomes
        except OperatorError:
            for _, _, _, meter in asked:
                meter.release(seconds=time.perf_counter() - started)
            raise
        except Exception as exc:  # an operator plugin's bug stops its node, not the run
            for _, _, _, meter in asked:
                meter.release(seconds=time.perf_counter() - started)
            raise self._operator_bug(exc) from exc
        seconds = time.perf_counter() - started
        records = []
        for (index, request, call, meter), reply in zip(asked, replies, strict=True):
            meter.commit(reply, seconds=seconds)
            records.append(_call_line(call, request, meter, seconds, reply=reply))
            outcomes[index] = (reply, seconds)
        self._failures = 0
        self.record([], records)
        return outcomes

    async def _array_step(self, items: Sequence[WorkItem]) -> ArrayOutcome:
        """Call items through the array path: the operator's genomes for all of them and the
        domain's vectorised evaluation, for :meth:`_tell_arrays` to count and tell. Raises
        :class:`OperatorError` when the operator fails."""
        started = time.perf_counter()
        try:
            genomes = self.operator.propose_genomes(items)
            if len(genomes) != len(items):
                raise ValueError(f"{len(genomes)} genomes for {len(items)} requests")
        except OperatorError:
            raise
        except Exception as exc:  # an operator plugin's bug stops its node, not the run
            raise self._operator_bug(exc) from exc
        call_seconds = time.perf_counter() - started
        started = time.perf_counter()
        try:
            scores = await self.evaluator.evaluate_genomes(genomes, [i.eval_seed for i in items])
            fitness, descriptors, errors = _told_columns(scores, len(items), self._array_columns)
        except Exception as exc:  # noqa: BLE001 - a domain's bug: the batch is invalid, with why
            reason = f"domain's evaluate_genomes failed: {type(exc).__name__}: {exc}"
            fitness, descriptors, errors = [None] * len(items), 0.0, [reason] * len(items)
        return ArrayOutcome(items=items, genomes=genomes, fitness=fitness,
                            descriptors=descriptors, errors=errors, call_seconds=call_seconds,
                            eval_seconds=(time.perf_counter() - started) / len(items))

    def _tell_arrays(self, outcome: ArrayOutcome) -> None:
        """Counts an array step's calls and tells its results (one
        :meth:`Scheduler.tell_batch`).

        Here, in the driver's loop, and not in the step's own task: a checkpoint taken after
        the scheduler ended a round but before :meth:`_finish_round` wrote the round's file
        would send a resume looking for a file that is not there, and calls counted before
        their results were told would be counted again when a resume asks for them anew.
        """
        items = outcome.items
        try:
            self.ledger.count_free_calls(self.name, len(items), seconds=outcome.call_seconds)
        except BudgetExhausted as exc:  # a quota the scheduler's plan did not foresee
            self.scheduler.stop(str(exc))
            return
        timings = {"eval_s": round(outcome.eval_seconds, 6),
                   "call_s": round(outcome.call_seconds, 6)}  # fmt: skip
        self._handle(self.scheduler.tell_batch(
            items, texts=self.domain.genome_texts(outcome.genomes), fitness=outcome.fitness,
            descriptors=np.broadcast_to(outcome.descriptors,
                                        (len(items), len(self._array_columns))),
            data=list(outcome.genomes), errors=outcome.errors, operator=self.operator.label,
            info={"timings": timings},
        ))  # fmt: skip

    async def _evaluate(self, batch: Sequence[tuple[WorkItem, str, str, Mapping[str, Any]]]
                        ) -> list[Result]:  # fmt: skip
        """Evaluates ``(item, program text, operator, timings)`` entries in the shared pool,
        in one batch (an operator's reply first made the text its domain parses, knowing the
        parent: :meth:`~dei_framework.contract.domain.Domain.resolve_reply`)."""
        refused: list[Result] = []
        entries = []
        for item, text, operator, info in batch:
            if item.needs_call:
                try:
                    text = self.domain.resolve_reply(text, parent=item.parent)
                except InvalidProgram as exc:  # a diff that does not apply, say: invalid
                    refused.append(Result(item=item, error=str(exc), operator=operator,
                                          info={"timings": {"eval_s": 0.0, **info}}))
                    continue
                except Exception as exc:  # noqa: BLE001 - a domain bug on hostile input
                    refused.append(Result(
                        item=item, operator=operator, info={"timings": {"eval_s": 0.0, **info}},
                        error=f"resolving the reply failed: {type(exc).__name__}: {exc}"))
                    continue
            entries.append((item, text, operator, info))
        if not entries:
            return refused
        outcomes = await self.evaluator.evaluate_many(
            [(text, item.eval_seed) for item, text, _, _ in entries], self._opponents,
            axes=self.axes,
        )
        return refused + [outcome.result(item, operator=operator,
                                         timings={"eval_s": round(outcome.seconds, 6), **info})
                          for (item, _, operator, info), outcome
                          in zip(entries, outcomes, strict=True)]  # fmt: skip

    def _operator_bug(self, exc: Exception) -> OperatorError:
        """The error that stops this node when its operator plugin raised something it should
        not (a bug in the plugin stops its node, not the run)."""
        return OperatorError(
            f"{self.name}: operator {self.operator.label!r} failed: {type(exc).__name__}: {exc}"
        )

    async def _slot_call(self, item: WorkItem) -> tuple[OperatorReply | None, float]:
        async with self._calling:
            return await self._call(item)

    async def _call(self, item: WorkItem) -> tuple[OperatorReply | None, float]:
        """The slot's operator call (or its recorded reply); ``None`` when it failed
        transiently or a cap refused it. Calls are logged at once, failed ones with what they
        were billed."""
        request, call = self._request_of(item)
        recorded = self._recorded(item, request)
        if recorded is not None:
            return recorded
        try:
            meter = self.ledger.reserve(self.name)
        except BudgetExhausted:  # a cap was reached while this slot was planned
            return None, 0.0
        request = attrs.evolve(request, meter=meter)
        started = time.perf_counter()
        try:
            reply = await self.operator.propose(request)
        except (TransientOperatorFailure, BudgetExhausted) as exc:
            seconds = time.perf_counter() - started
            meter.release(attempts=getattr(exc, "attempts", 0), seconds=seconds)
            if meter.usage.attempts:  # a call refused before its first attempt cost nothing
                self.record([], [_call_line(call, request, meter, seconds, failed=str(exc))])
            if not isinstance(exc, BudgetExhausted):
                self._failures += 1
            return None, 0.0
        except OperatorError:
            meter.release(seconds=time.perf_counter() - started)
            raise
        except Exception as exc:  # an operator plugin's bug stops its node, not the run
            meter.release(seconds=time.perf_counter() - started)
            raise self._operator_bug(exc) from exc
        seconds = time.perf_counter() - started
        meter.commit(reply, seconds=seconds)
        self._failures = 0
        self.record([], [_call_line(call, request, meter, seconds, reply=reply)])
        return reply, seconds

    def _request_of(self, item: WorkItem, *, meter: CallMeter | None = None
                    ) -> tuple[OperatorRequest, dict[str, Any]]:  # fmt: skip
        """The item's operator request (with the call's ``meter``, if any) and the head of its
        ``calls.jsonl`` line.

        A batching operator is a generator that ignores the messages: its lines leave out
        the messages' hash, a cost per call; replay hashes the recorded messages instead
        (:func:`~dei_framework.runtime.replay.recorded_digest`).
        """
        request = item.request(self.domain, meter=meter)
        call = {"key": item.key, "node": self.name, "round": item.round, "kind": item.kind,
                "parent": item.parent.id if item.parent else None, "operator": self.operator.label,
                "id": item.id}  # fmt: skip
        if not self._batched:
            call["messages_sha256"] = messages_digest(request.messages)
        return request, call

    def _recorded(self, item: WorkItem, request: OperatorRequest
                  ) -> tuple[OperatorReply | None, float] | None:  # fmt: skip
        """The recorded reply of the item's call (logged and charged unless it was
        already), or ``None`` when there is none to serve."""
        recorded = (self.replies.take(item.key, request.messages)
                    if self.replies is not None else None)  # fmt: skip
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
            self._failures += 1
            return None, 0.0
        self._failures = 0
        return reply, 0.0

    def _start_generality(self, round_index: int, text: str) -> None:
        self.generality_tasks[round_index] = asyncio.create_task(self._generality(text))

    async def _generality(self, text: str) -> Mapping[str, bool] | float | None:
        parsed = await self.evaluator.parse(text)
        if not isinstance(parsed, Program):
            return None
        return await self.evaluator.generality_outcomes(parsed)


def _calls_out(calls: Mapping[asyncio.Task, Sequence[WorkItem]]) -> int:
    """Operator calls in flight in ``calls`` (a batch task holds several)."""
    return sum(len(items) for items in calls.values())


def _call_outcomes(done: Sequence[asyncio.Task], calls: dict[asyncio.Task, list[WorkItem]]
                   ) -> list[tuple[WorkItem, Any]]:  # fmt: skip
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


_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(field.name for field in attrs.fields(cls))


def _told_columns(scores: GenomeEvaluations, count: int, columns: Sequence[int]
                   ) -> tuple[list[float | None], np.ndarray, list[str | None]]:  # fmt: skip
    """``tell_batch``'s fitness, descriptor and error columns from the domain's array
    evaluation (a row with a value that is not a finite number is invalid, with why).

    Raises:
        ValueError: the arrays do not have one row per genome.
    """
    fitness = np.asarray(scores.fitness, dtype=float)
    descriptors = np.asarray(scores.descriptors, dtype=float)
    if fitness.shape != (count,) or descriptors.ndim != 2 or len(descriptors) != count:
        raise ValueError(f"fitness of shape {fitness.shape} and descriptors of shape "
                         f"{descriptors.shape} for {count} genomes")  # fmt: skip
    descriptors = descriptors[:, columns]
    valid = np.isfinite(fitness) & np.isfinite(descriptors).all(axis=1)
    if valid.all():
        return fitness.tolist(), descriptors, [None] * count
    errors = [None if ok else "the domain's evaluation is not a finite number"
              for ok in valid.tolist()]  # fmt: skip
    scores = [value if ok else None
              for value, ok in zip(fitness.tolist(), valid.tolist(), strict=True)]  # fmt: skip
    return scores, np.where(valid[:, None], descriptors, 0.0), errors


def _call_line(
    call: Mapping[str, Any], request: OperatorRequest, meter: CallMeter, seconds: float, *,
    reply: OperatorReply | None = None, failed: str | None = None,
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


def reply_json(reply: OperatorReply) -> dict[str, Any]:
    """``attrs.asdict(reply)`` (the ``reply`` of a ``calls.jsonl`` line), without its general
    walk when every field holds a plain value, as they do (once per call)."""
    data = {name: getattr(reply, name) for name in _field_names(type(reply))}
    if all(type(value) in _PLAIN_TYPES for value in data.values()):
        return data
    return attrs.asdict(reply)


def generality_subject(entry: Mapping[str, Any]) -> str | None:
    """The program whose generality a ``round`` event reports: its champion, or, when that is an
    initial opponent, the round's best other elite (``None``: nothing to measure)."""
    subject = entry.get("generality_champion" if entry.get("champion_initial") else "champion")
    return subject["text"] if subject else None
