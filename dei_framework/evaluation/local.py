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
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import concurrent.futures.process  # BrokenProcessPool lives here; the package does not import it
import contextlib
import hashlib
import math
import multiprocessing
import multiprocessing.context
import os
import pickle
import shutil
import signal
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, TypeVar

import attrs

from dei_framework.contract.backend import (
    EvaluationBackend,
    EvaluatorLost,
    EvaluatorOptions,
    WorkerDied,
)
from dei_framework.contract.domain import Domain, Evaluation, GenomeEvaluations, Program
from dei_framework.contract.errors import InvalidProgram
from dei_framework.contract.records import Candidate
from dei_framework.evaluation.outcome import (
    Outcome,
    check_evaluation,
    evaluate_parsed,
    reference_matches,
)
from dei_framework.evaluation.sandbox.policy import SandboxPolicy
from dei_framework.evaluation.semaphores import release_semaphores

_WORKER_DOMAIN: Domain | None = None
#: Opponent sets a worker keeps loaded (most recently used first out last): a node uses one set
#: per round, so this covers that many nodes on different rounds before a set is read again.
WORKER_OPPONENT_SETS = 16
_WORKER_OPPONENTS: OrderedDict[str, list[Program]] = OrderedDict()


@attrs.frozen(kw_only=True)
class OpponentSet:
    """A round's parsed opponents, installed in the evaluation workers once
    (:meth:`Evaluator.install`).

    Attributes:
        id: What jobs carry instead of the programs: a digest of the pickled programs, naming
            the file in the evaluator's set directory that workers load on first use.
        path: That file.
        programs: The programs (used directly when evaluating in threads).
        size: Bytes of the pickled programs, i.e. what every job would carry without the set.
    """

    id: str
    path: str
    programs: tuple[Program, ...]
    size: int


_WORKER_SETS_DIR = ""


def _worker_opponents(set_id: str) -> list[Program]:
    """The worker's copy of an opponent set, read from its file the first time it is used."""
    programs = _WORKER_OPPONENTS.get(set_id)
    if programs is None:
        with open(os.path.join(_WORKER_SETS_DIR, f"{set_id}.pickle"), "rb") as file:
            programs = pickle.load(file)
        _WORKER_OPPONENTS[set_id] = programs
        while len(_WORKER_OPPONENTS) > WORKER_OPPONENT_SETS:
            _WORKER_OPPONENTS.popitem(last=False)
    _WORKER_OPPONENTS.move_to_end(set_id)
    return programs

#: How often a worker checks that the process that started it is still alive.
PARENT_POLL_SECONDS = 0.5


_STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextlib.contextmanager
def _stop_signals_blocked() -> Iterator[None]:
    """Defers Ctrl-C and SIGTERM in this thread; children started meanwhile inherit the block.

    A child must not die of the Ctrl-C a terminal sends to the whole process group while it
    is still importing, before :func:`_install` can ignore the signal (it would print a
    traceback and break the pool). The parent only receives its signal a moment later.
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class _QuietSpawnProcess(multiprocessing.context.SpawnProcess):
    """A spawned process that starts with Ctrl-C and SIGTERM blocked."""

    def start(self) -> None:
        with _stop_signals_blocked():
            super().start()


class _QuietSpawnContext(multiprocessing.context.SpawnContext):
    """The spawn start method, with :class:`_QuietSpawnProcess` as its process class."""

    Process = _QuietSpawnProcess


#: Niceness added to the generality lane's worker: the OS runs candidate evaluations first when
#: the cores are busy.
GENERALITY_NICENESS = 10


def _install(domain: Domain, parent: int, sets_dir: str = "", niceness: int = 0) -> None:
    """Worker initializer: ignore stop signals, watch the parent, install the domain, note
    where opponent sets are, and lower this worker's CPU priority by ``niceness``."""
    for number in _STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    _watch_parent(parent)
    global _WORKER_DOMAIN, _WORKER_SETS_DIR
    _WORKER_DOMAIN = domain
    _WORKER_SETS_DIR = sets_dir
    if niceness and hasattr(os, "nice"):
        os.nice(niceness)


def _watch_parent(parent: int) -> None:
    """Ends this process once ``parent`` is no longer its parent (it died, we were reparented).

    Polling ``getppid`` works with every start method and needs no inherited descriptor; a
    parent that died before this call is caught by the first check. The thread runs whenever
    the evaluation releases the GIL, and at the latest when it returns.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(0)  # no cleanup to do: results go to a parent that no longer exists

    if os.getppid() != parent:
        os._exit(0)
    threading.Thread(target=watch, name="dei-parent-watch", daemon=True).start()


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


def _parse_and_evaluate(
    domain: Domain | None,
    text: str,
    opponents: Sequence[Program] | str,
    seed: int,
    required: Collection[str] = (),
    known: Collection[str] | None = None,
) -> Outcome:
    domain = domain or _WORKER_DOMAIN
    started = time.perf_counter()
    if isinstance(opponents, str):  # an installed set's id
        opponents = _worker_opponents(opponents)
    try:
        program = domain.parse(text)
    except InvalidProgram as exc:
        return Outcome(error=str(exc), seconds=time.perf_counter() - started)
    return evaluate_parsed(domain, program, opponents, seed, required, known, started=started)


def _parse_and_evaluate_batch(
    domain: Domain | None,
    jobs: Sequence[tuple[str, int]],
    opponents: Sequence[Program] | str,
    required: Collection[str] = (),
    known: Collection[str] | None = None,
) -> list[Outcome | Exception]:
    """The worker-side batch job: parses every ``(text, seed)`` job, evaluates the programs
    that parsed with one :meth:`Domain.evaluate_batch` call, and checks every answer.

    Gives exactly the outcomes :func:`_parse_and_evaluate` gives job by job (bar the timings;
    a parser that crashes yields its exception in the job's place). When the batch call raises
    or answers with the wrong number of evaluations, the programs are evaluated one by one, so
    that each error lands on its own program.
    """
    domain = domain or _WORKER_DOMAIN
    if isinstance(opponents, str):  # an installed set's id
        opponents = _worker_opponents(opponents)
    outcomes: list[Outcome | Exception | None] = [None] * len(jobs)
    parsed: list[tuple[int, Program, int, float]] = []  # job index, program, seed, parse time
    for index, (text, seed) in enumerate(jobs):
        started = time.perf_counter()
        try:
            program = domain.parse(text)
        except InvalidProgram as exc:
            outcomes[index] = Outcome(error=str(exc), seconds=time.perf_counter() - started)
            continue
        except Exception as exc:  # raised to this job's caller alone, as a lone job's would be
            outcomes[index] = exc
            continue
        parsed.append((index, program, seed, time.perf_counter() - started))
    if parsed:
        started = time.perf_counter()
        try:
            evaluations = list(domain.evaluate_batch([p for _, p, _, _ in parsed], opponents,
                                                     seeds=[s for _, _, s, _ in parsed]))
        except Exception:  # noqa: BLE001 - found again, program by program, below
            evaluations = []
        share = (time.perf_counter() - started) / len(parsed)
        if len(evaluations) != len(parsed):
            for index, program, seed, _ in parsed:
                outcomes[index] = evaluate_parsed(domain, program, opponents, seed, required,
                                                   known, started=time.perf_counter())
        else:
            for (index, program, _, parse_s), evaluation in zip(parsed, evaluations, strict=True):
                problem = check_evaluation(evaluation, required, known)
                seconds = parse_s + share
                matches = reference_matches(domain, program)
                outcomes[index] = (
                    Outcome(program=program, evaluation=evaluation, seconds=seconds,
                            matches=matches)
                    if problem is None
                    else Outcome(program=program, error=f"evaluation failed: {problem}",
                                 seconds=seconds, matches=matches)
                )  # fmt: skip
    return outcomes  # type: ignore[return-value]  # every job has its outcome now


def _sandboxed_batch(
    domain: Domain | None,
    jobs: Sequence[tuple[str, int]],
    opponents: Sequence[Program] | str,
    required: Collection[str],
    known: Collection[str] | None,
    policy: SandboxPolicy,
) -> list[Outcome]:
    """The worker-side job of a sandboxed run: each ``(text, seed)`` evaluated in a child of
    this worker's warm process (:func:`~dei_framework.evaluation.sandbox.client.sandbox_for`), one
    at a time, so that whatever a program does lands on its own outcome.

    What comes back is plain data; the program is parsed again here (parsing is the
    domain's own code on the text and, by the domain contract, runs nothing of it) and the
    answer checked again (:func:`check_evaluation`), since a program can forge its reply.
    """
    from dei_framework.evaluation.sandbox.client import sandbox_for

    domain = domain or _WORKER_DOMAIN
    pickled: bytes | None = None  # the set as the warm process receives it, made once
    if isinstance(opponents, str):  # an installed set's id
        set_id, programs = opponents, _worker_opponents(opponents)
    else:
        programs = list(opponents)
        pickled = pickle.dumps(programs, protocol=pickle.HIGHEST_PROTOCOL)
        set_id = hashlib.blake2b(pickled, digest_size=16).hexdigest()
    sandbox = sandbox_for(domain, policy)
    required = tuple(required)
    known = None if known is None else frozenset(known)

    def set_data() -> bytes:
        return pickled if pickled is not None else pickle.dumps(programs,
                                                                protocol=pickle.HIGHEST_PROTOCOL)

    outcomes = []
    for text, seed in jobs:
        reply = sandbox.evaluate(text, seed, set_id, set_data, required, known)
        program = None
        if reply.parsed:
            try:
                program = domain.parse(text)
            except Exception:  # noqa: BLE001 - parsed in the sandbox; no program is no loss
                program = None
        if reply.status != "valid":
            outcomes.append(Outcome(program=program, error=reply.error, seconds=reply.seconds,
                                    matches=reply.matches))  # fmt: skip
            continue
        evaluation = Evaluation(fitness=reply.fitness, descriptor=reply.descriptor,
                                info=reply.info)  # fmt: skip
        problem = check_evaluation(evaluation, required, known)
        if problem is not None or program is None:
            problem = problem or "the text did not parse again outside the sandbox"
            outcomes.append(Outcome(program=program, error=f"evaluation failed: {problem}",
                                    seconds=reply.seconds, matches=reply.matches))  # fmt: skip
            continue
        outcomes.append(Outcome(program=program, evaluation=evaluation, seconds=reply.seconds,
                                matches=reply.matches))  # fmt: skip
    return outcomes


def _timed_batch(
    domain: Domain | None,
    jobs: Sequence[tuple[str, int]],
    opponents: Sequence[Program],
    required: Collection[str] = (),
    known: Collection[str] | None = None,
) -> tuple[list[Outcome | Exception], float]:
    """:func:`_parse_and_evaluate_batch` in this process, with the CPU seconds it took (of this
    thread: what other threads and processes do on a busy machine does not count)."""
    started = time.thread_time()
    outcomes = _parse_and_evaluate_batch(domain, jobs, opponents, required, known)
    return outcomes, time.thread_time() - started


def _cpu_estimate(estimate: float, cpu: float, count: int) -> float:
    """The CPU seconds one evaluation is expected to take, after a batch of ``count`` took
    ``cpu``. The estimate follows a dearer batch at once and a cheaper one slowly, so that a
    run of cheap outcomes (programs that did not parse) does not bring a slow domain back onto
    the event loop."""
    per_item = cpu / max(count, 1)
    return per_item if math.isinf(estimate) else max(per_item, estimate * INLINE_DECAY)


def _timed_genomes(domain: Domain, genomes: Any, seeds: Sequence[int]
                   ) -> tuple[GenomeEvaluations, float]:  # fmt: skip
    """``domain.evaluate_genomes`` with the CPU seconds it took (of this thread)."""
    started = time.thread_time()
    evaluations = domain.evaluate_genomes(genomes, seeds=seeds)
    return evaluations, time.thread_time() - started


def _parse(domain: Domain | None, text: str) -> Program | str:
    domain = domain or _WORKER_DOMAIN
    try:
        return domain.parse(text)
    except InvalidProgram as exc:
        return str(exc)
    except Exception as exc:  # a parser bug on hostile input is the input's problem here
        return f"parse failed: {type(exc).__name__}: {exc}"


def _generality(domain: Domain | None, program: Program) -> float | None:
    domain = domain or _WORKER_DOMAIN
    return domain.generality(program)


def _generality_outcomes(domain: Domain | None, program: Program) -> dict[str, bool] | float | None:
    domain = domain or _WORKER_DOMAIN
    outcomes = domain.generality_outcomes(program)
    if outcomes is None:
        return domain.generality(program)
    return {str(name): bool(beaten) for name, beaten in outcomes.items()}


_T = TypeVar("_T")

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

#: Without worker processes (``workers=0``), a batch expected to take less CPU time than this
#: is evaluated on the event loop itself: for a cheap domain, handing it to a thread and back
#: costs more than evaluating it, and the loop is held no longer than by its own bookkeeping.
INLINE_SECONDS = 0.002
#: How fast the per-evaluation estimate behind :data:`INLINE_SECONDS` forgets a dearer batch
#: (a factor per batch): slowly, so that a domain seldom slow stays off the loop.
INLINE_DECAY = 0.9


@attrs.define(kw_only=True)
class _Job:
    """One evaluation waiting for its batch."""

    text: str
    seed: int
    opponents: OpponentSet
    future: asyncio.Future


#: Prefix of the local backend's opponent-set directories in the temporary directory, followed
#: by the owning process's id.
SETS_PREFIX = "dei-opponents-"


def remove_orphaned_set_dirs(tmp: str | None = None) -> list[str]:
    """Removes opponent-set directories whose process is gone (a run killed with SIGKILL
    cannot remove its own); returns their paths. A directory of a live process, of another
    user's process, or without a process id in its name is left alone."""
    tmp = tmp or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(tmp)
    except OSError:
        return removed
    for name in names:
        pid = name[len(SETS_PREFIX):].split("-", 1)[0] if name.startswith(SETS_PREFIX) else ""
        if not pid.isdigit() or _alive(int(pid)):
            continue
        path = os.path.join(tmp, name)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM): alive
        return True
    return True


class LocalBackend(EvaluationBackend):
    """The ``local`` evaluation backend: a process pool on this machine (the default).

    The domain is installed once per worker process; opponent sets are files the workers read
    on first use (see :meth:`Evaluator.install`). Generality runs on its own one-worker lane, a
    low-priority process: it never queues ahead of candidates and yields the CPU to them.

    Args:
        domain: The domain (must be picklable when ``workers > 0``).
        workers: Worker processes; ``0`` runs in threads of this process (for cheap domains and
            tests), ``None`` uses one per CPU core.
    """

    def __init__(self, domain: Domain, *, workers: int | None = None) -> None:
        self.domain = domain
        self._workers = (os.cpu_count() or 1) if workers is None else workers
        self._pools: dict[str, concurrent.futures.Executor] = {}
        self._set_dir: tempfile.TemporaryDirectory | None = None

    @property
    def workers(self) -> int:
        return self._workers

    def _sets_dir(self) -> str:
        if self._set_dir is None:
            remove_orphaned_set_dirs()
            self._set_dir = tempfile.TemporaryDirectory(prefix=f"{SETS_PREFIX}{os.getpid()}-")
        return self._set_dir.name

    def install(self, set_id: str, data: bytes) -> str:
        path = os.path.join(self._sets_dir(), f"{set_id}.pickle")
        partial = f"{path}.partial"
        with open(partial, "wb") as file:
            file.write(data)
        os.replace(partial, path)  # a worker never reads a half-written set
        return path

    async def ship(self, set_id: str, programs: Sequence[Program]) -> Any:
        return programs if self._workers == 0 else set_id

    def _executor(self, lane: str = "candidates") -> concurrent.futures.Executor:
        if lane not in self._pools:
            workers = 1 if lane == "generality" else self._workers
            if self._workers == 0:
                self._pools[lane] = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1 if lane == "generality" else 4
                )
            else:
                # spawn, not fork: forking a process that runs an event loop and HTTP clients
                # can copy held locks into the child.
                niceness = GENERALITY_NICENESS if lane == "generality" else 0
                with _stop_signals_blocked():  # the resource tracker starts here
                    self._pools[lane] = concurrent.futures.ProcessPoolExecutor(
                        max_workers=workers,
                        mp_context=_QuietSpawnContext(),
                        initializer=_install,
                        initargs=(self.domain, os.getpid(), self._sets_dir(), niceness),
                    )
        return self._pools[lane]

    async def run(self, function, *args: Any, lane: str = "candidates") -> Any:
        loop = asyncio.get_running_loop()
        domain = self.domain if self._workers == 0 else None  # workers have it installed
        try:
            return await loop.run_in_executor(self._executor(lane), function, domain, *args)
        except concurrent.futures.process.BrokenProcessPool:
            # A worker died (e.g. killed by the OS); start a fresh pool for the next tasks.
            self._pools.pop(lane, None)
            raise WorkerDied("the worker process died") from None

    def close(self, *, wait: bool = True) -> None:
        pools = list(self._pools.values())
        self._pools.clear()
        if wait:
            for pool in pools:
                pool.shutdown(wait=True, cancel_futures=True)
        else:
            processes = [process for pool in pools for process in _worker_processes(pool)]
            for pool in pools:
                pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.kill()
            for process in processes:
                process.join(timeout=2.0)
        if self._set_dir is not None:
            self._set_dir.cleanup()
            self._set_dir = None

    def kill(self) -> None:
        for pool in list(self._pools.values()):
            for process in _worker_processes(pool):
                process.kill()
        release_semaphores()


class Evaluator:
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
            evaluations, cpu = await asyncio.to_thread(_timed_genomes, self.domain, genomes,
                                                       seeds)  # fmt: skip
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
        self._sets[digest] = OpponentSet(id=digest, path=path, programs=tuple(opponents),
                                         size=len(data))  # fmt: skip
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
        outcomes = await self._outcomes(jobs[0].opponents, [(job.text, job.seed) for job in jobs],
                                        axes)  # fmt: skip
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
            answers = await asyncio.gather(*(self._outcomes(opponents, part, axes)
                                             for part in parts))  # fmt: skip
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

    async def _outcomes(self, opponents: OpponentSet, jobs: list[tuple[str, int]],
                        axes: tuple[str, ...]) -> list[Outcome | Exception] | None:  # fmt: skip
        """One batch's outcomes, or the exception in a job's place; ``None`` when the backend
        was lost and :attr:`on_lost` took it."""
        try:
            await self.start()
            if self._in_process():
                return await self._in_this_process(opponents, jobs, axes)
            sent = await self.backend.ship(opponents.id, opponents.programs)
            if self.sandbox.sandboxed:
                outcomes = await self._run(_sandboxed_batch, jobs, sent, axes,
                                           self.descriptor_keys, self.sandbox)  # fmt: skip
            else:
                outcomes = await self._run(_parse_and_evaluate_batch, jobs, sent, axes,
                                           self.descriptor_keys)  # fmt: skip
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
                "usual cause: a script whose run is not under `if __name__ == \"__main__\":` "
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

    async def _culprit(self, opponents: OpponentSet, jobs: list[tuple[str, int]],
                       axes: tuple[str, ...]) -> list[Outcome | Exception] | None:  # fmt: skip
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
        return (type(self.backend) is LocalBackend and self.backend.workers == 0
                and not self.sandbox.sandboxed)  # fmt: skip

    async def _in_this_process(self, opponents: OpponentSet, jobs: list[tuple[str, int]],
                               axes: tuple[str, ...]) -> list[Outcome | Exception]:  # fmt: skip
        """A batch evaluated in this process: on the event loop when it should take less CPU
        than :data:`INLINE_SECONDS` (a cheap domain: the hop to a thread and back would cost
        more than the evaluations), otherwise in a thread."""
        programs = list(opponents.programs)
        if self._job_cpu * len(jobs) < INLINE_SECONDS:
            outcomes, cpu = _timed_batch(self.domain, jobs, programs, axes, self.descriptor_keys)
        else:
            outcomes, cpu = await self.backend.run(_timed_batch, jobs, programs, axes,
                                                   self.descriptor_keys)  # fmt: skip
        self._job_cpu = _cpu_estimate(self._job_cpu, cpu, len(jobs))
        return outcomes

    async def parse(self, text: str) -> Program | str:
        """Parses a program off the event loop; returns the program or why it is invalid."""
        try:
            return await self._run(_parse, text)
        except WorkerDied:
            return "parse failed: the worker process died"
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


def _worker_processes(pool: concurrent.futures.Executor) -> list:
    """The live ``multiprocessing.Process`` objects of a process pool (none for threads).

    ``ProcessPoolExecutor`` has no public handle on its workers before Python 3.14
    (``kill_workers``); its ``_processes`` map has been stable since 3.2.
    """
    processes = getattr(pool, "_processes", None) or {}
    return [process for process in list(processes.values()) if process.is_alive()]


def make_local_backend(domain: Domain, options: EvaluatorOptions) -> LocalBackend:
    """The ``local`` backend's factory (registered by the core's own plugin)."""
    return LocalBackend(domain, workers=options.workers)
