"""Evaluation off the event loop: parsing and evaluating candidates in worker processes.

The domain is installed once per worker (not pickled with every task). A candidate that
crashes the domain, or even kills its worker process, becomes an invalid candidate with a
message; it never takes the node down.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import os
import time
from collections.abc import Sequence
from typing import Any

import attrs

from dei_framework.domain import Domain, Evaluation, Program
from dei_framework.errors import InvalidProgram

_WORKER_DOMAIN: Domain | None = None


@attrs.frozen(kw_only=True)
class Outcome:
    """What evaluating one piece of operator output gave.

    Attributes:
        program: The parsed program (``None`` when it did not parse).
        evaluation: Fitness and descriptor (``None`` when invalid).
        error: Why it is invalid (parse error with line number, or evaluation failure).
        seconds: Time spent parsing and evaluating.
    """

    program: Program | None = None
    evaluation: Evaluation | None = None
    error: str | None = None
    seconds: float = 0.0


def _install(domain: Domain) -> None:
    global _WORKER_DOMAIN
    _WORKER_DOMAIN = domain


def _parse_and_evaluate(
    domain: Domain | None, text: str, opponents: Sequence[Program], seed: int
) -> Outcome:
    domain = domain or _WORKER_DOMAIN
    started = time.perf_counter()
    try:
        program = domain.parse(text)
    except InvalidProgram as exc:
        return Outcome(error=str(exc), seconds=time.perf_counter() - started)
    try:
        evaluation = domain.evaluate(program, opponents, seed=seed)
    except InvalidProgram as exc:
        return Outcome(program=program, error=str(exc), seconds=time.perf_counter() - started)
    except Exception as exc:  # a domain bug on hostile input must not stop the search
        return Outcome(
            program=program,
            error=f"evaluation failed: {type(exc).__name__}: {exc}",
            seconds=time.perf_counter() - started,
        )
    return Outcome(program=program, evaluation=evaluation, seconds=time.perf_counter() - started)


def _generality(domain: Domain | None, program: Program) -> float | None:
    domain = domain or _WORKER_DOMAIN
    return domain.generality(program)


class Evaluator:
    """Runs a domain's parse + evaluate in a process pool shared by the nodes of a process.

    Args:
        domain: The domain (must be picklable when ``workers > 0``).
        workers: Worker processes; ``0`` runs in threads of this process (for cheap domains and
            tests), ``None`` uses one per CPU core.
    """

    def __init__(self, domain: Domain, *, workers: int | None = None) -> None:
        self.domain = domain
        self.workers = (os.cpu_count() or 1) if workers is None else workers
        self._pool: concurrent.futures.Executor | None = None

    def _executor(self) -> concurrent.futures.Executor:
        if self._pool is None:
            if self.workers == 0:
                self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
            else:
                # spawn, not fork: forking a process that runs an event loop and HTTP clients
                # can copy held locks into the child.
                self._pool = concurrent.futures.ProcessPoolExecutor(
                    max_workers=self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_install,
                    initargs=(self.domain,),
                )
        return self._pool

    def _local_domain(self) -> Domain | None:
        return self.domain if self.workers == 0 else None

    async def _run(self, function, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(
                self._executor(), function, self._local_domain(), *args
            )
        except concurrent.futures.process.BrokenProcessPool:
            # A worker died (e.g. killed by the OS); start a fresh pool for the next tasks.
            self._pool = None
            raise

    async def evaluate(self, text: str, opponents: Sequence[Program], *, seed: int) -> Outcome:
        """Parses and evaluates operator output; never raises for bad programs."""
        try:
            return await self._run(_parse_and_evaluate, text, list(opponents), seed)
        except concurrent.futures.process.BrokenProcessPool:
            return Outcome(error="evaluation failed: the worker process died")

    async def generality(self, program: Program) -> float | None:
        """The domain's generality of a champion (``None`` if the domain has none or it fails)."""
        try:
            return await self._run(_generality, program)
        except Exception:
            return None

    def close(self) -> None:
        """Stops the workers."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
