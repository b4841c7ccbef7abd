"""One node's Red Queen MAP-Elites loop: rounds of operator calls against a moving opponent pool.

Each round starts from a fresh archive, warm-started by re-evaluating the initial opponents and
past champions (and, through :class:`~dei_framework.node.Node`, the champions peers sent);
then the node spends its round quota of operator calls, ``new_fraction`` of them writing new
programs and the rest mutating a uniformly sampled elite. The round's best elite is its
champion and joins the node's opponents.

Calls go out in batches of the operator's ``max_in_flight``; results enter the archive in the
batch's order, and every random draw derives from ``(seed, node, round, slot)``, so a run is
reproducible whatever the timing, and a checkpoint taken between batches is consistent.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
import numpy as np

from dei_framework.archive import Elite, GridArchive
from dei_framework.budget import BudgetLedger
from dei_framework.descriptors import DescriptorSpace
from dei_framework.domain import Domain, Program
from dei_framework.errors import BudgetExhausted, OperatorError
from dei_framework.evaluation import Evaluator, Outcome
from dei_framework.operators import (
    Operator,
    OperatorReply,
    OperatorRequest,
    Parent,
    TransientOperatorFailure,
)
from dei_framework.opponents import Opponent, OpponentPool
from dei_framework.replay import Recording, messages_digest, recorded_usage, replayed_reply

#: Consecutive batches without one completed call after which a node gives up.
MAX_FAILED_BATCHES = 30


@attrs.frozen(kw_only=True)
class SearchSettings:
    """Knobs of one node's loop (DRQ defaults)."""

    #: Red Queen rounds.
    rounds: int = 3
    #: Share of calls that write a new program rather than mutate an elite.
    new_fraction: float = 0.1
    #: Run seed; the node's draws derive from it.
    seed: int = 0
    #: Elites besides the parent shown to the operator (for crossover or inspiration).
    others: int = 2
    #: Received champions join the opponent pool.
    peers_to_opponents: bool = True
    #: Received champions, re-evaluated locally, fill empty cells of the fresh archive.
    peers_seed_cells: bool = True


@attrs.frozen(kw_only=True)
class Received:
    """A program a peer shared, before local re-evaluation."""

    text: str
    node: str
    round: int
    operator: str


def derive_seed(*parts: int | str) -> int:
    """A 31-bit seed derived from parts (ints or strings), stable across Python versions."""
    import hashlib

    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFFFFFF


class SearchLoop:
    """The search of one node.

    Args:
        name: Node name.
        domain: The domain.
        operator: This node's operator.
        evaluator: Shared evaluation pool.
        ledger: Shared budget ledger (holds this node's quota).
        space: The descriptor space.
        settings: Loop settings.
        pool: The opponent pool (restored on resume), or ``None`` for the domain's initial one.
        max_champions: Champions kept in a new opponent pool.
        record: Called with finished events and call records after each batch (the run log).
        receive: Returns the peer champions to take in at a round's start (may be empty).
        publish: Called with the round's elites to share, the round and the champion.
        replies: Recorded calls to serve, by request key, before asking the operator (replay
            and resume).
        on_round: Called with the round event and the finished archive when a round ends.
        on_event: Called with each ``evaluated`` event.
        checkpoint: Called when a round has ended and the node's state moved on (a good moment
            to write a checkpoint).
    """

    def __init__(
        self,
        *,
        name: str,
        domain: Domain,
        operator: Operator,
        evaluator: Evaluator,
        ledger: BudgetLedger,
        space: DescriptorSpace,
        settings: SearchSettings,
        pool: OpponentPool | None = None,
        max_champions: int = 20,
        record: Callable[[list[dict], list[dict]], None] = lambda events, calls: None,
        receive: Callable[[int], Sequence[Received]] = lambda round_index: (),
        publish: Callable[[GridArchive, int], Awaitable[None]] | None = None,
        replies: Recording | None = None,
        on_round: Callable[[dict, GridArchive], None] = lambda event, archive: None,
        on_event: Callable[[dict], None] = lambda event: None,
        checkpoint: Callable[[], None] = lambda: None,
    ) -> None:
        self.name = name
        self.domain = domain
        self.operator = operator
        self.evaluator = evaluator
        self.ledger = ledger
        self.space = space
        self.settings = settings
        self.pool = pool or OpponentPool(domain.initial_opponents(), max_champions=max_champions)
        self._record = record
        self._receive = receive
        self._publish = publish
        self._replies = replies
        self._failed_calls: list[dict] = []
        self._on_round = on_round
        self._on_event = on_event
        self._checkpoint = checkpoint
        # Resumable state.
        self.round = 0
        self.seq = 0
        self.completed = 0
        self.warm = False
        self.archive = self._new_archive(0)
        self.previous_cells: set[tuple[int, ...]] = set()
        self.lineage_errors: dict[str, str] = {}
        self.history: list[dict[str, Any]] = []
        self.stopped: str | None = None
        self._generality_tasks: dict[int, asyncio.Task] = {}
        self._failed_batches = 0
        self._novelty = (0, 0)
        self._known: dict[str, Program | None] = {}
        self.boundary: dict[str, Any] = {}
        self._mark_boundary()

    # --- state ----------------------------------------------------------------------------------

    def _new_archive(self, round_index: int) -> GridArchive:
        return GridArchive(
            space=self.space,
            qd_offset=self.domain.fitness_floor,
            seed=derive_seed(self.settings.seed, self.name, round_index, "archive"),
        )

    @property
    def finished(self) -> bool:
        return self.stopped is not None or self.round >= self.settings.rounds

    def round_quota(self, round_index: int) -> int | None:
        """Calls this node makes in ``round_index``: its quota spread evenly over rounds
        (``None``: not counted in calls; a tokens or cost budget is spread by the ledger)."""
        quota = self.ledger.quotas[self.name]
        if quota is None:
            return None
        base, extra = divmod(quota, self.settings.rounds)
        return base + (1 if round_index < extra else 0)

    def state_json(self) -> dict[str, Any]:
        """Everything needed to continue this node later (taken between batches)."""
        return {
            "round": self.round,
            "seq": self.seq,
            "completed": self.completed,
            "warm": self.warm,
            "archive": self.archive.to_json(),
            "previous_cells": [list(c) for c in sorted(self.previous_cells)],
            "pool": self.pool.to_json(),
            "lineage_errors": self.lineage_errors,
            "history": self.history,
            "stopped": self.stopped,
            "novelty": list(self._novelty),
            "usage": self.ledger.usage[self.name].to_json(),
        }

    def _mark_boundary(self) -> None:
        """Snapshots the state: between batches the node's state, its usage and the run log agree,
        so a checkpoint (which may be taken at any await) uses this snapshot."""
        self.boundary = self.state_json()

    def restore(self, state: dict[str, Any]) -> None:
        """Continues from :meth:`state_json` output."""
        self.round = state["round"]
        self.seq = state["seq"]
        self.completed = state["completed"]
        self.warm = state["warm"]
        self.archive = GridArchive.from_json(
            state["archive"], seed=derive_seed(self.settings.seed, self.name, self.round, "archive")
        )
        self.previous_cells = {tuple(c) for c in state["previous_cells"]}
        self.pool = OpponentPool.from_json(state["pool"])
        self.lineage_errors = dict(state["lineage_errors"])
        self.history = list(state["history"])
        self.stopped = state["stopped"]
        self._novelty = tuple(state.get("novelty", (0, 0)))
        self._mark_boundary()

    # --- the loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Runs the remaining rounds (all of them for a new node)."""
        for entry in self.history:  # rounds whose generality a crash interrupted
            if entry["generality"] is None and entry["champion"] is not None:
                self._start_generality(entry["round"], entry["champion"]["text"])
        try:
            while not self.finished:
                await self._run_round()
        except OperatorError as exc:
            self.stopped = str(exc)
            self._record([{"event": "node_stopped", "node": self.name, "round": self.round,
                           "reason": self.stopped}], [])  # fmt: skip
        for round_index, task in self._generality_tasks.items():
            value = await task
            for entry in self.history:
                if entry["round"] == round_index:
                    entry["generality"] = value

    def _parse_known(self, text: str) -> Program | None:
        """Parses a program the node already holds (an opponent or champion), once per run.

        These parses run on the event loop, so they are cached rather than repeated each round.
        """
        if text not in self._known:
            try:
                self._known[text] = self.domain.parse(text)
            except Exception:  # a program that no longer parses is simply left out
                self._known[text] = None
        return self._known[text]

    def _opponent_programs(self) -> list[Program]:
        parsed = (self._parse_known(opponent.text) for opponent in self.pool.opponents())
        return [program for program in parsed if program is not None]

    def _eval_seed(self) -> int:
        # One seed per node and round: every candidate of a round meets the same conditions.
        return derive_seed(self.settings.seed, self.name, self.round, "eval")

    async def _run_round(self) -> None:
        opponents = self._opponent_programs()
        if not self.warm:
            await self._warm_start(opponents)
        quota = self.round_quota(self.round)
        while quota is None or self.completed < quota:
            if self._budget_spent():
                break
            slots = self.operator.max_in_flight
            if quota is not None:
                slots = min(slots, quota - self.completed)
            remaining = self.ledger.remaining(self.name)
            if remaining is not None:
                slots = min(slots, remaining)
            if slots <= 0:
                break
            await self._batch(slots, opponents)
        await self._end_round()

    def _budget_spent(self) -> bool:
        """Whether the round's share on a tokens/cost axis is spent or a cap stops the node."""
        reason = self.ledger.exhausted(self.name)
        if reason is not None:
            if self.stopped is None:
                self.stopped = f"{self.name}: {reason}"
                self._record([{"event": "node_stopped", "node": self.name, "round": self.round,
                               "reason": self.stopped}], [])  # fmt: skip
            return True
        return self.ledger.round_done(self.name, self.round, self.settings.rounds)

    async def _warm_start(self, opponents: list[Program]) -> None:
        """Fresh archive: re-evaluate initial opponents, past champions and peers' champions."""
        own = [(o.text, "initial" if o.source == "initial" else f"{o.source}:{o.node}")
               for o in self.pool.opponents()]  # fmt: skip
        received = list(self._receive(self.round))
        received_events: list[dict] = []
        for item in received:
            received_events.append({"event": "received", "node": self.name, "round": self.round,
                                    "from": item.node, "from_round": item.round,
                                    "program": item.text, "operator": item.operator})  # fmt: skip
            if self.settings.peers_to_opponents:
                self.pool.add_champion(Opponent(text=item.text, source="peer", node=item.node,
                                                round=item.round, operator=item.operator))
        opponents[:] = self._opponent_programs()
        seed = self._eval_seed()
        texts = [text for text, _ in own] + [item.text for item in received]
        outcomes = await asyncio.gather(
            *(self.evaluator.evaluate(text, opponents, seed=seed) for text in texts)
        )
        events: list[dict] = list(received_events)
        novel = valid_received = 0
        for index, outcome in enumerate(outcomes):
            if index < len(own):
                elite_id = f"{self.name}-r{self.round}-w{index}"
                event = self._admit(outcome, elite_id, own[index][1], None, "warm",
                                    seed_only=False)
            else:
                item = received[index - len(own)]
                elite_id = f"{self.name}-r{self.round}-p{index - len(own)}"
                if outcome.evaluation is not None:
                    valid_received += 1
                    if self.space.cell(outcome.evaluation.descriptor) not in self.previous_cells:
                        novel += 1
                if not self.settings.peers_seed_cells:
                    outcome = attrs.evolve(outcome, evaluation=None,
                                           error="not admitted (sharing policy)")
                event = self._admit(outcome, elite_id, f"peer:{item.node}", None, "peer",
                                    seed_only=True)
            events.append(event)
        self.warm = True
        self._novelty = (novel, valid_received)
        self._record(events, [])
        self._mark_boundary()

    def _admit(
        self,
        outcome: Outcome,
        elite_id: str,
        operator: str,
        parent: str | None,
        kind: str,
        *,
        seed_only: bool,
        timings: dict[str, float] | None = None,
    ) -> dict:
        """Offers an outcome to the archive and returns its ``evaluated`` event."""
        event: dict[str, Any] = {
            "event": "evaluated", "id": elite_id, "node": self.name, "round": self.round,
            "operator": operator, "kind": kind, "parent": parent,
        }  # fmt: skip
        if outcome.evaluation is None:
            event.update(status="invalid", error=outcome.error, fitness=None, descriptor=None,
                         cell=None)  # fmt: skip
            if parent is not None and outcome.error:
                self.lineage_errors[parent] = outcome.error
        else:
            evaluation = outcome.evaluation
            elite = Elite(
                id=elite_id, text=outcome.program.text, fitness=float(evaluation.fitness),
                descriptor=dict(evaluation.descriptor), cell=self.space.cell(evaluation.descriptor),
                node=self.name, operator=operator, round=self.round, parent=parent,
            )  # fmt: skip
            status = self.archive.add_if_empty(elite) if seed_only else self.archive.add(elite)
            event.update(status=status.label, fitness=elite.fitness,
                         descriptor=dict(elite.descriptor), cell=list(elite.cell))  # fmt: skip
        event["timings"] = {"eval_s": round(outcome.seconds, 6), **(timings or {})}
        return event

    def _plan(self, slot_seq: int) -> tuple[str, Parent | None, list[Parent]]:
        rng = np.random.default_rng(derive_seed(self.settings.seed, self.name, self.round,
                                                slot_seq))  # fmt: skip
        if len(self.archive) == 0 or rng.random() < self.settings.new_fraction:
            return "new", None, []
        occupied = list(self.archive)
        picks = rng.integers(len(occupied), size=1 + self.settings.others)
        parent, *others = (occupied[int(i)] for i in picks)

        def as_parent(elite: Elite) -> Parent:
            return Parent(id=elite.id, text=elite.text, fitness=elite.fitness,
                          descriptor=elite.descriptor)  # fmt: skip

        return "mutate", as_parent(parent), [as_parent(o) for o in others if o.id != parent.id]

    async def _call(
        self, seq: int, kind: str, parent: Parent | None, others: list[Parent]
    ) -> tuple[dict, OperatorReply, float] | None:
        """One operator call (or a recorded reply); ``None`` when it failed transiently (its
        record then waits in ``_failed_calls`` for the batch to log it)."""
        feedback = self.lineage_errors.get(parent.id) if parent else None
        messages = self.domain.messages(kind, parent=parent, others=others, feedback=feedback)
        key = f"{self.name}/r{self.round}/s{seq}"
        call = {"key": key, "node": self.name, "round": self.round, "kind": kind,
                "parent": parent.id if parent else None, "operator": self.operator.label,
                "messages_sha256": messages_digest(messages)}  # fmt: skip
        try:
            meter = self.ledger.reserve(self.name)
        except BudgetExhausted:  # a cap was reached while this batch was planned
            return None
        recorded = self._replies.take(key, messages) if self._replies is not None else None
        if recorded is not None:
            meter.record(**recorded_usage(recorded))
            reply = replayed_reply(recorded)
            seconds = recorded.get("seconds", 0.0)
            if reply is None:
                meter.release(seconds=seconds)
                self._failed_calls.append({**recorded, "replayed": True})
                return None
            meter.commit(reply, seconds=seconds)
            return {**call, "messages": recorded.get("messages"), "replayed": True}, reply, 0.0
        request = OperatorRequest(
            key=key, kind=kind, messages=messages, parent=parent, others=others,
            feedback=feedback, seed=derive_seed(self.settings.seed, key), meter=meter,
        )  # fmt: skip
        started = time.perf_counter()
        try:
            reply = await self.operator.propose(request)
        except (TransientOperatorFailure, BudgetExhausted) as exc:
            seconds = time.perf_counter() - started
            meter.release(attempts=getattr(exc, "attempts", 0), seconds=seconds)
            if meter.usage.attempts:  # a call refused before its first attempt cost nothing
                self._failed_calls.append({**call, "messages": list(messages),
                                           "failed": str(exc), "seconds": round(seconds, 6),
                                           "usage": meter.to_json()})  # fmt: skip
            return None
        except OperatorError:
            meter.release(seconds=time.perf_counter() - started)
            raise
        except Exception as exc:  # an operator plugin's bug stops its node, not the run
            meter.release(seconds=time.perf_counter() - started)
            raise OperatorError(
                f"{self.name}: operator {self.operator.label!r} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        seconds = time.perf_counter() - started
        meter.commit(reply, seconds=seconds)
        call["usage"] = meter.to_json()
        return {**call, "messages": list(messages)}, reply, seconds

    async def _batch(self, slots: int, opponents: list[Program]) -> None:
        seqs = list(range(self.seq, self.seq + slots))
        plans = [self._plan(seq) for seq in seqs]
        results = await asyncio.gather(
            *(self._call(seq, *plan) for seq, plan in zip(seqs, plans, strict=True)),
            return_exceptions=True,
        )
        fatal = next((r for r in results if isinstance(r, BaseException)), None)
        done = [(seq, r) for seq, r in zip(seqs, results, strict=True)
                if r is not None and not isinstance(r, BaseException)]  # fmt: skip
        seed = self._eval_seed()
        outcomes = await asyncio.gather(
            *(self.evaluator.evaluate(reply.text, opponents, seed=seed)
              for _, (_, reply, _) in done)
        )
        events, calls = [], self._failed_calls
        self._failed_calls = []
        for (seq, (call, reply, seconds)), outcome in zip(done, outcomes, strict=True):
            elite_id = f"{self.name}-r{self.round}-s{seq}"
            event = self._admit(outcome, elite_id, self.operator.label, call["parent"],
                                   call["kind"], seed_only=False,
                                   timings={"call_s": round(seconds, 6)})  # fmt: skip
            events.append(event)
            calls.append({**call, "id": elite_id, "seconds": round(seconds, 6),
                          "reply": attrs.asdict(reply)})  # fmt: skip
        self.seq += slots
        self.completed += len(done)
        self._failed_batches = 0 if done else self._failed_batches + 1
        self._record(events, calls)
        self._mark_boundary()
        for event in events:
            self._on_event(event)
        if fatal is not None:
            raise fatal
        if self._failed_batches >= MAX_FAILED_BATCHES:
            raise OperatorError(
                f"{self.name}: operator {self.operator.label!r} failed "
                f"{MAX_FAILED_BATCHES} batches in a row; stopping this node"
            )
        if self._failed_batches:
            await asyncio.sleep(min(2.0**self._failed_batches * 0.05, 10.0))

    async def _end_round(self) -> None:
        stats = self.archive.stats()
        champion = self.archive.best()
        novel, received = self._novelty
        entry = {
            "event": "round", "node": self.name, "round": self.round,
            "calls": self.completed, "stats": stats.to_json(),
            "champion": champion.to_json() if champion else None,
            "received": received,
            "niche_novelty": novel / received if received else None,
            "generality": None,
        }  # fmt: skip
        finished = self.archive
        # The round's files are written before its event is logged, and the state moves to the
        # next round in the same step as the log, so a checkpoint never sees a half-ended round.
        self._on_round(entry, finished)
        self.history.append(entry)
        if champion is not None:
            self.pool.add_champion(Opponent(text=champion.text, source="own", node=self.name,
                                            round=self.round, operator=champion.operator))
            self._start_generality(self.round, champion.text)
        self.previous_cells = {elite.cell for elite in finished}
        self.round += 1
        self.seq = self.completed = 0
        self.warm = False
        self._novelty = (0, 0)
        self.archive = self._new_archive(self.round)
        self._record([entry], [])
        self._mark_boundary()
        self._checkpoint()
        if champion is not None and self._publish is not None:
            await self._publish(finished, self.round - 1)

    def _start_generality(self, round_index: int, text: str) -> None:
        program = self._parse_known(text)
        if program is None:
            return
        self._generality_tasks[round_index] = asyncio.create_task(
            self.evaluator.generality(program)
        )
