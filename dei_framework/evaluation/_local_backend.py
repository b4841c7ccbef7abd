"""The ``local`` evaluation backend: a process pool on this machine (the default).

Its workers are spawned with stop signals blocked and install the domain once
(:mod:`~dei_framework.evaluation._pool_worker`); opponent sets are files of a private
temporary directory (:mod:`~dei_framework.evaluation._opponent_sets`). Generality runs on a
lane of its own, one low-priority worker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import concurrent.futures.process  # BrokenProcessPool lives here; the package does not import it
import os
import tempfile
from collections.abc import Sequence
from typing import Any

from dei_framework.contract.backend import EvaluationBackend, EvaluatorOptions, WorkerDied
from dei_framework.contract.domain import Domain, Program
from dei_framework.evaluation._opponent_sets import SETS_PREFIX, remove_orphaned_set_dirs
from dei_framework.evaluation._pool_worker import (
    _install,
    _QuietSpawnContext,
    _stop_signals_blocked,
)
from dei_framework.evaluation.semaphores import release_semaphores

#: Niceness added to the generality lane's worker: the OS runs candidate evaluations first when
#: the cores are busy.
GENERALITY_NICENESS = 10


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


def _worker_processes(pool: concurrent.futures.Executor) -> list:
    """The live ``multiprocessing.Process`` objects of a process pool (none for threads).

    ``ProcessPoolExecutor`` has no public handle on its workers before Python 3.14
    (``kill_workers``); its ``_processes`` map has been stable since 3.2.
    """
    processes = getattr(pool, "_processes", None) or {}
    return [process for process in list(processes.values()) if process.is_alive()]


def make_local_backend(ctx: EvaluatorOptions) -> LocalBackend:
    """The ``local`` backend's factory (registered by the core's own plugin): a pool for
    ``ctx.domain``."""
    return LocalBackend(ctx.domain, workers=ctx.workers)
