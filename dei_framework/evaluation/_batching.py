"""How the evaluator batches: evaluations asked for in one turn of the event loop travel
together, cut into a few jobs per worker.

:class:`Batching` is a part of :class:`~dei_framework.evaluation.local.Evaluator` (one of its
base classes, never used alone): :meth:`Batching.evaluate` queues an evaluation by opponent set
and axes, and the next turn of the loop sends the queue, cut by :meth:`Batching._parts` into
at least one job per worker and, for dear evaluations, up to :data:`JOBS_PER_WORKER` per worker.
The evaluator supplies what a batch needs: ``install`` (the opponent set), ``_outcomes`` (a
batch job's outcomes), ``workers`` and ``_in_process``; its constructor sets the state used
here (``_pending``, ``_flush_scheduled``, ``_batches``, ``_eval_seconds``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Collection, Sequence
from typing import TypeVar

import attrs

from dei_framework.contract.domain import Program
from dei_framework.evaluation._opponent_sets import OpponentSet
from dei_framework.evaluation.outcome import Outcome

_T = TypeVar("_T")

#: Most evaluations one batch job carries (bounds a batch's latency and its pickled size).
MAX_BATCH = 256
#: A batch is cut into at most this many jobs per worker, so that a worker that finishes its
#: job early takes the next instead of the batch waiting on the slowest worker's share
#: (evaluations differ in cost: a battle ends when a warrior dies).
JOBS_PER_WORKER = 4
#: ... but each job carries at least this many seconds of evaluation (as measured on the
#: batches so far), so that moving it (a millisecond or a few) stays a few per cent of it:
#: evaluations of a cheap domain go one job per worker.
MIN_JOB_SECONDS = 0.1


@attrs.define(kw_only=True)
class _Job:
    """One evaluation waiting for its batch."""

    text: str
    seed: int
    opponents: OpponentSet
    future: asyncio.Future


class Batching:
    """The evaluator's batching (see the module docstring)."""

    async def evaluate(
        self,
        text: str,
        opponents: OpponentSet | Sequence[Program],
        *,
        seed: int,
        axes: Collection[str] = (),
    ) -> Outcome:
        """Parses and evaluates operator output; never raises for bad programs.

        Args:
            text: Operator output (or a program text).
            opponents: The round's :meth:`install`-ed opponent set (the job carries its id), or
                parsed opponents (installed here: pass a set to skip re-pickling them).
            seed: Evaluation seed.
            axes: Descriptor keys the caller's archive needs (a missing one is invalid).
        """
        if not isinstance(opponents, OpponentSet):
            opponents = self.install(opponents)
        loop = asyncio.get_running_loop()
        job = _Job(text=text, seed=seed, opponents=opponents, future=loop.create_future())
        self._pending.setdefault((opponents.id, tuple(axes)), []).append(job)
        if not self._flush_scheduled:
            # Every evaluation asked for before the loop turns joins this batch.
            self._flush_scheduled = True
            loop.call_soon(self._flush)
        return await job.future

    def _flush(self) -> None:
        """Sends the pending evaluations: per opponent set, cut into batch jobs by
        :meth:`_parts` (one per worker, or a few per worker for dear evaluations), so each job
        crosses the process boundary once."""
        self._flush_scheduled = False
        pending, self._pending = self._pending, {}
        for (_, axes), jobs in pending.items():
            jobs = [job for job in jobs if not job.future.done()]  # cancelled meanwhile
            for part in self._parts(jobs):
                task = asyncio.get_running_loop().create_task(self._send(part, axes))
                self._batches.add(task)
                task.add_done_callback(self._batches.discard)

    async def _send(self, jobs: list[_Job], axes: tuple[str, ...]) -> None:
        outcomes = await self._outcomes(
            jobs[0].opponents, [(job.text, job.seed) for job in jobs], axes
        )
        if outcomes is None:  # the run stops and checkpoints; these jobs are cancelled with it
            return
        for job, outcome in zip(jobs, outcomes, strict=True):
            if job.future.done():
                continue
            if isinstance(outcome, Exception):
                job.future.set_exception(outcome)
            else:
                job.future.set_result(outcome)

    async def evaluate_many(
        self,
        jobs: Sequence[tuple[str, int]],
        opponents: OpponentSet | Sequence[Program],
        *,
        axes: Collection[str] = (),
    ) -> list[Outcome]:
        """Parses and evaluates several pieces of operator output at once: :meth:`evaluate`
        for each ``(text, seed)`` job, sent as :meth:`evaluate`'s batches are (cut by
        :meth:`_parts`) without a future per job.

        Raises:
            Exception: What :meth:`evaluate` raises for a job (the first job's, in job order).
        """
        if not isinstance(opponents, OpponentSet):
            opponents = self.install(opponents)
        axes = tuple(axes)
        parts = self._parts(list(jobs))
        if len(parts) == 1:
            answers = [await self._outcomes(opponents, parts[0], axes)]
        else:
            answers = await asyncio.gather(
                *(self._outcomes(opponents, part, axes) for part in parts)
            )
        if any(answer is None for answer in answers):  # the run stops and checkpoints
            await asyncio.get_running_loop().create_future()  # cancelled with the run
        outcomes = [outcome for answer in answers for outcome in answer]
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                raise outcome
        return outcomes

    def _parts(self, jobs: list[_T]) -> list[list[_T]]:
        """A batch cut into jobs: at least one per worker (and at most :data:`MAX_BATCH`
        evaluations each); up to :data:`JOBS_PER_WORKER` per worker when the evaluations are
        dear enough that a job of :data:`MIN_JOB_SECONDS` holds few of them."""
        if not jobs:
            return []
        least = max(1, min(self.workers, len(jobs)), -(-len(jobs) // MAX_BATCH))
        chunks = least
        if self._eval_seconds > 0 and not self._in_process():
            per_job = max(1, math.ceil(MIN_JOB_SECONDS / self._eval_seconds))
            chunks = max(least, min(-(-len(jobs) // per_job), JOBS_PER_WORKER * self.workers))
        size = -(-len(jobs) // chunks)
        return [jobs[start : start + size] for start in range(0, len(jobs), size)]

    def _measured(self, outcomes: Sequence[Outcome | Exception]) -> None:
        """Follows the seconds an evaluation takes on a worker (half old, half new)."""
        seconds = [outcome.seconds for outcome in outcomes if isinstance(outcome, Outcome)]
        if seconds:
            latest = sum(seconds) / len(seconds)
            if self._eval_seconds:
                latest = (self._eval_seconds + latest) / 2
            self._eval_seconds = latest
