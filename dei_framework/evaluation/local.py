"""Evaluation off the event loop: parsing and evaluating candidates in worker processes.

The domain is installed once per worker, and each round's opponents once per worker too: an
evaluation job carries the text, the seed and the id of an :class:`OpponentSet`, never the
opponents. A candidate that
crashes the domain, or even kills its worker process, becomes an invalid candidate with a
message; it never takes the node down. So does a domain answer that breaks the contract (a
descriptor that is not a mapping, a missing or unknown descriptor key, a fitness or descriptor
value that is not a finite number): the message names the problem and the run goes on.

Workers belong to the process that started them: they ignore Ctrl-C and SIGTERM (a terminal
sends Ctrl-C to the whole process group; the main process decides when evaluation stops and
kills them itself), and a watcher thread ends each worker within
:data:`PARENT_POLL_SECONDS` when its parent is gone, even when the parent died by ``kill -9``.

The parts live in modules of their own, whose names this module re-exports: the jobs a
backend runs (:mod:`~dei_framework.evaluation._jobs`), the local pool
(:mod:`~dei_framework.evaluation._local_backend`) and its worker processes
(:mod:`~dei_framework.evaluation._pool_worker`), opponent sets
(:mod:`~dei_framework.evaluation._opponent_sets`) and the evaluator's batching
(:mod:`~dei_framework.evaluation._batching`).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import pickle
from collections.abc import Callable, Collection, Sequence
from typing import Any

from dei_framework.contract.backend import EvaluationBackend, EvaluatorLost, WorkerDied
from dei_framework.contract.domain import Domain, GenomeEvaluations, Program
from dei_framework.contract.records import Candidate
from dei_framework.evaluation import _pool_worker
from dei_framework.evaluation._batching import Batching
from dei_framework.evaluation._jobs import (
    _generality,
    _generality_outcomes,
    _parse,
    _parse_and_evaluate,
    _parse_and_evaluate_batch,
    _sandboxed_batch,
    _timed_batch,
    _timed_genomes,
)
from dei_framework.evaluation._local_backend import LocalBackend
from dei_framework.evaluation._opponent_sets import OpponentSet
from dei_framework.evaluation.outcome import Outcome, Parsed
from dei_framework.evaluation.sandbox.policy import SandboxPolicy

# isort: split
# Re-exported: the names this module held before its parts moved (tests, benchmarks and
# plugins import them from here).
from dei_framework.evaluation._batching import _T, JOBS_PER_WORKER, MAX_BATCH, MIN_JOB_SECONDS, _Job  # noqa: F401
from dei_framework.evaluation._local_backend import (  # noqa: F401
    GENERALITY_NICENESS,
    _worker_processes,
    make_local_backend,
)
from dei_framework.evaluation._opponent_sets import SETS_PREFIX, _alive, remove_orphaned_set_dirs  # noqa: F401
from dei_framework.evaluation._pool_worker import (  # noqa: F401
    _STOP_SIGNALS,
    _WORKER_OPPONENTS,
    PARENT_POLL_SECONDS,
    WORKER_OPPONENT_SETS,
    _install,
    _QuietSpawnContext,
    _QuietSpawnProcess,
    _stop_signals_blocked,
    _watch_parent,
    _worker_opponents,
)
from dei_framework.evaluation.outcome import check_evaluation  # noqa: F401
from dei_framework.evaluation.semaphores import release_semaphores  # noqa: F401

#: A worker's state that moved to :mod:`~dei_framework.evaluation._pool_worker`, read there:
#: it is set in a worker after this module is imported, so a copy here would stay stale.
_WORKER_STATE = ("_WORKER_DOMAIN", "_WORKER_SETS_DIR")


def __getattr__(name: str) -> Any:
    """The worker state named in :data:`_WORKER_STATE`, as it is now (PEP 562)."""
    if name in _WORKER_STATE:
        return getattr(_pool_worker, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def evaluate(
    domain: Domain,
    text: str,
    opponents: Sequence[Program | Candidate],
    *,
    seed: int,
    axes: Collection[str] = (),
    known: Collection[str] | None = None,
) -> Outcome:
    """Parses and evaluates ``text`` in this process; never raises for a bad program or a
    domain answer that breaks the contract (see :func:`check_evaluation`).

    Args:
        domain: The domain.
        text: Operator output or program text.
        opponents: The opponents: parsed programs, or :class:`Candidate` records (such as
            ``Scheduler.opponents``), which are parsed here (parse them once yourself to
            evaluate many programs against the same pool).
        seed: Evaluation seed.
        axes: Descriptor keys that must be present.
        known: Every descriptor key allowed (``None``: any).

    Raises:
        InvalidProgram: An opponent given as a ``Candidate`` does not parse.
    """
    parsed = [domain.parse(o.text) if isinstance(o, Candidate) else o for o in opponents]
    return _parse_and_evaluate(domain, text, parsed, seed, tuple(axes), known)


#: The outcome of a job whose worker process died under it.
WORKER_DIED = "evaluation failed: the worker process died"
#: Times a job of a batch whose worker died is tried alone before it is blamed for the death.
ALONE_ATTEMPTS = 2
#: Jobs in a row whose worker died under them, each alone, that make evaluation itself broken
#: (three programs, each tried twice): the run stops with :class:`WorkersKeepDying` instead of
#: marking every candidate invalid.
DEATHS_BEFORE_LOST = 6


class WorkersKeepDying(EvaluatorLost):
    """Evaluation is broken, not a program: every worker dies, whatever it evaluates (a worker
    that cannot start, a domain that crashes its process). The run stops and checkpoints, as
    for a lost backend."""


#: Without worker processes (``workers=0``), a batch expected to take less CPU time than this
#: is evaluated on the event loop itself: for a cheap domain, handing it to a thread and back
#: costs more than evaluating it, and the loop is held no longer than by its own bookkeeping.
INLINE_SECONDS = 0.002
#: How fast the per-evaluation estimate behind :data:`INLINE_SECONDS` forgets a dearer batch
#: (a factor per batch): slowly, so that a domain seldom slow stays off the loop.
INLINE_DECAY = 0.9


def _cpu_estimate(estimate: float, cpu: float, count: int) -> float:
    """The CPU seconds one evaluation is expected to take, after a batch of ``count`` took
    ``cpu``. The estimate follows a dearer batch at once and a cheaper one slowly, so that a
    run of cheap outcomes (programs that did not parse) does not bring a slow domain back onto
    the event loop."""
    per_item = cpu / max(count, 1)
    return per_item if math.isinf(estimate) else max(per_item, estimate * INLINE_DECAY)


class Evaluator(Batching):
    """Parses and evaluates a domain's candidates off the event loop, for the nodes of a
    process, on an evaluation backend (by default :class:`LocalBackend`, a process pool).

    Evaluations asked for in the same turn of the event loop travel together: one batch job
    per worker, which parses them and calls :meth:`Domain.evaluate_batch` once, so a batch
    crosses the process boundary once (and a vectorised domain evaluates it in one pass). What
    a job computes does not depend on the backend, so every backend gives the same outcomes.

    Args:
        domain: The domain (must be picklable when ``workers > 0``).
        workers: Worker processes of the default backend; ``0`` runs in this process (for
            cheap domains and tests: in threads, or on the event loop for a batch expected to
            take less CPU than :data:`INLINE_SECONDS`), ``None`` uses one per CPU core.
        descriptor_keys: Every descriptor key the domain may report (its axes and the plugin
            axes of the run); another key makes the candidate invalid. ``None`` accepts any.
        backend: Where jobs run (default: a :class:`LocalBackend` with ``workers``).
        sandbox: Isolation and limits per candidate (default: none, the domain's code runs in
            the worker itself); see :mod:`dei_framework.evaluation.sandbox`.
    """

    def __init__(
        self,
        domain: Domain,
        *,
        workers: int | None = None,
        descriptor_keys: Collection[str] | None = None,
        backend: EvaluationBackend | None = None,
        sandbox: SandboxPolicy | None = None,
    ) -> None:
        self.domain = domain
        self.sandbox = sandbox if sandbox is not None else SandboxPolicy()
        # Suspects of a batch whose worker died are evaluated one at a time (see _culprit).
        self._alone = asyncio.Lock()
        # Jobs in a row whose worker died under them, alone: at DEATHS_BEFORE_LOST the
        # evaluation is broken, not the programs (see _outcomes).
        self._deaths_in_a_row = 0
        self.descriptor_keys = None if descriptor_keys is None else frozenset(descriptor_keys)
        self.backend = backend if backend is not None else LocalBackend(domain, workers=workers)
        #: Called with the :class:`EvaluatorLost` error when the backend is gone, instead of
        #: failing the jobs: a run sets it to checkpoint and stop (the jobs then stay pending
        #: until the run cancels them, as on Ctrl-C).
        self.on_lost: Callable[[EvaluatorLost], None] | None = None
        self._started: tuple[asyncio.AbstractEventLoop, asyncio.Task] | None = None
        self._sets: dict[str, OpponentSet] = {}
        # Evaluations asked for in the same turn of the event loop, by (opponent set, axes):
        # sent together, cut into jobs by _parts (see evaluate()).
        self._pending: dict[tuple[str, tuple[str, ...]], list[_Job]] = {}
        self._flush_scheduled = False
        self._batches: set[asyncio.Task] = set()
        # CPU seconds one in-process evaluation is expected to take (see _in_this_process);
        # unknown at first, so the first batch runs in a thread and is measured there.
        self._job_cpu = math.inf
        self._genome_cpu = math.inf  # the same, for array-path genomes
        # Seconds one evaluation took on a worker lately (0: none measured yet): how finely a
        # batch is cut into jobs (see _parts).
        self._eval_seconds = 0.0

    @property
    def local(self) -> bool:
        """Whether evaluations run on this machine's built-in backend (any worker count): an
        array-path evaluation then runs in this process (see :meth:`evaluate_genomes`)."""
        return type(self.backend) is LocalBackend

    async def evaluate_genomes(self, genomes: Any, seeds: Sequence[int]) -> GenomeEvaluations:
        """The domain's :meth:`~dei_framework.contract.domain.Domain.evaluate_genomes` in this
        process: on the event loop when the batch should take less CPU than :data:`INLINE_SECONDS`,
        otherwise in a thread (the estimate, per genome, as for in-process batches)."""
        if self._genome_cpu * len(seeds) < INLINE_SECONDS:
            evaluations, cpu = _timed_genomes(self.domain, genomes, seeds)
        else:
            evaluations, cpu = await asyncio.to_thread(_timed_genomes, self.domain, genomes, seeds)
        self._genome_cpu = _cpu_estimate(self._genome_cpu, cpu, len(seeds))
        return evaluations

    @property
    def workers(self) -> int:
        """How many jobs the backend runs at once (``0``: threads of this process)."""
        return self.backend.workers

    async def start(self) -> None:
        """Connects the backend (once; later calls wait for the first). Also done by the first
        job; a run calls it first so that a backend that cannot start stops it at once."""
        loop = asyncio.get_running_loop()
        if self._started is None or self._started[0] is not loop:  # per event loop
            self._started = (loop, loop.create_task(self.backend.start()))
        await asyncio.shield(self._started[1])

    def install(self, opponents: Sequence[Program]) -> OpponentSet:
        """Makes ``opponents`` available to the workers once; evaluation jobs then carry only
        the set's id. Installing the same programs again returns the same set.

        The programs are pickled once; the backend keeps them where its workers load them once
        (the local pool: a file of a private temporary directory, removed by :meth:`close`,
        that each worker reads the first time a job names it, keeping the
        :data:`WORKER_OPPONENT_SETS` most recently used).
        """
        data = pickle.dumps(list(opponents), protocol=pickle.HIGHEST_PROTOCOL)
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        known = self._sets.get(digest)
        if known is not None:
            return known
        path = self.backend.install(digest, data)
        self._sets[digest] = OpponentSet(
            id=digest, path=path, programs=tuple(opponents), size=len(data)
        )
        return self._sets[digest]

    async def _run(self, function, *args: Any, lane: str = "candidates") -> Any:
        await self.start()
        return await self.backend.run(function, *args, lane=lane)

    async def _lost(self, error: EvaluatorLost) -> None:
        """Hands a lost backend to :attr:`on_lost` and waits to be cancelled, or raises."""
        if self.on_lost is None:
            raise error
        self.on_lost(error)
        await asyncio.get_running_loop().create_future()  # cancelled with the run

    async def _outcomes(
        self, opponents: OpponentSet, jobs: list[tuple[str, int]], axes: tuple[str, ...]
    ) -> list[Outcome | Exception] | None:
        """One batch's outcomes, or the exception in a job's place; ``None`` when the backend
        was lost and :attr:`on_lost` took it."""
        try:
            await self.start()
            if self._in_process():
                return await self._in_this_process(opponents, jobs, axes)
            sent = await self.backend.ship(opponents.id, opponents.programs)
            if self.sandbox.sandboxed:
                outcomes = await self._run(
                    _sandboxed_batch, jobs, sent, axes, self.descriptor_keys, self.sandbox
                )
            else:
                outcomes = await self._run(
                    _parse_and_evaluate_batch, jobs, sent, axes, self.descriptor_keys
                )
            self._measured(outcomes)
        except WorkerDied:
            if len(jobs) > 1:
                return await self._culprit(opponents, jobs, axes)
            self._deaths_in_a_row += 1
            if self._deaths_in_a_row < DEATHS_BEFORE_LOST:
                return [Outcome(error=WORKER_DIED)]
            lost = WorkersKeepDying(
                f"every evaluation worker died: {self._deaths_in_a_row} evaluations in a row, "
                "each alone, lost their worker process. A worker that cannot start is the "
                'usual cause: a script whose run is not under `if __name__ == "__main__":` '
                "(workers are started with spawn, which imports the script again), or a domain "
                "that does not import in a fresh process; else the domain crashes its process "
                "(see the worker's traceback above)"
            )
        except EvaluatorLost as exc:
            lost = exc
        except Exception as exc:  # the pool itself failed: every job of the batch hears it
            return [exc] * len(jobs)
        else:
            self._deaths_in_a_row = 0
            return outcomes
        if self.on_lost is None:
            return [lost] * len(jobs)
        self.on_lost(lost)
        return None

    async def _culprit(
        self, opponents: OpponentSet, jobs: list[tuple[str, int]], axes: tuple[str, ...]
    ) -> list[Outcome | Exception] | None:
        """The outcomes of a batch whose worker died: its jobs again, one at a time, so that
        only the program that kills its worker is invalid (the others get the outcome they
        would have had alone). A lone job's worker may also die of another batch's culprit
        on the same pool, so it is tried :data:`ALONE_ATTEMPTS` times before it is blamed."""
        outcomes: list[Outcome | Exception] = []
        async with self._alone:
            for job in jobs:
                for _ in range(ALONE_ATTEMPTS):
                    answer = await self._outcomes(opponents, [job], axes)
                    if answer is None:
                        return None
                    died = isinstance(answer[0], Outcome) and answer[0].error == WORKER_DIED
                    if not died:
                        break
                outcomes.extend(answer)
        return outcomes

    def _in_process(self) -> bool:
        """Whether jobs run in this process: the local backend itself without worker processes
        (a plugin's subclass runs every job through its own ``run``), and no sandbox."""
        return (
            type(self.backend) is LocalBackend
            and self.backend.workers == 0
            and not self.sandbox.sandboxed
        )

    async def _in_this_process(
        self, opponents: OpponentSet, jobs: list[tuple[str, int]], axes: tuple[str, ...]
    ) -> list[Outcome | Exception]:
        """A batch evaluated in this process: on the event loop when it should take less CPU
        than :data:`INLINE_SECONDS` (a cheap domain: the hop to a thread and back would cost
        more than the evaluations), otherwise in a thread."""
        programs = list(opponents.programs)
        if self._job_cpu * len(jobs) < INLINE_SECONDS:
            outcomes, cpu = _timed_batch(self.domain, jobs, programs, axes, self.descriptor_keys)
        else:
            outcomes, cpu = await self.backend.run(
                _timed_batch, jobs, programs, axes, self.descriptor_keys
            )
        self._job_cpu = _cpu_estimate(self._job_cpu, cpu, len(jobs))
        return outcomes

    async def parse(self, text: str) -> Parsed:
        """Parses a program off the event loop.

        Returns:
            The :class:`~dei_framework.evaluation.outcome.Parsed` record: ``program`` when the
            text parsed, else ``error`` saying why (``parsed.valid`` tells which).
        """
        try:
            return await self._run(_parse, text)
        except WorkerDied:
            return Parsed(error="parse failed: the worker process died")
        except EvaluatorLost as exc:
            await self._lost(exc)
            raise  # not reached: _lost raises or waits to be cancelled

    async def generality(self, program: Program) -> float | None:
        """The domain's generality of a champion (``None`` if the domain has none or it fails)."""
        try:
            return await self._run(_generality, program, lane="generality")
        except EvaluatorLost as exc:
            await self._lost(exc)
            raise  # not reached
        except Exception:
            return None

    async def generality_outcomes(self, program: Program) -> dict[str, bool] | float | None:
        """Per reference program, whether a champion beats or ties it
        (:meth:`Domain.generality_outcomes`); the domain's share when it gives no outcomes;
        ``None`` if it has neither or it fails."""
        try:
            return await self._run(_generality_outcomes, program, lane="generality")
        except EvaluatorLost as exc:
            await self._lost(exc)
            raise  # not reached
        except Exception:
            return None

    def close(self, *, wait: bool = True) -> None:
        """Stops the workers.

        Args:
            wait: Let the evaluations under way finish (the end of a run). ``False`` (an
                interrupt) kills the workers at once and reaps them: nothing they compute
                could still be used.
        """
        self.backend.close(wait=wait)
        if self.sandbox.sandboxed:  # warm processes of this process's threads (workers=0)
            from dei_framework.evaluation.sandbox.client import close_all

            close_all()
        self._sets.clear()
        self._started = None

    def kill_workers(self) -> None:
        """Kills the worker processes at once, without touching the pool's bookkeeping.

        Safe to call from a signal handler just before the process exits.
        """
        self.backend.kill()
