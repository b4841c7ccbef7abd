"""A worker process of the local pool: how it starts, and what it holds for the jobs it runs.

Workers belong to the process that started them: they start with Ctrl-C and SIGTERM blocked
and then ignore them (a terminal sends Ctrl-C to the whole process group; the main process
decides when evaluation stops and kills them itself), and a watcher thread ends each worker
within :data:`PARENT_POLL_SECONDS` when its parent is gone, even when the parent died by
``kill -9``. The pool's initializer (:func:`_install`) installs the run's domain once per
worker; the opponent sets jobs name are read from the evaluator's set directory the first time
a job names them (:func:`_worker_opponents`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.context
import os
import pickle
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator

from dei_framework.contract.domain import Domain, Program

#: The run's domain, in a worker (set by :func:`_install`; ``None`` in the evaluator's process).
_WORKER_DOMAIN: Domain | None = None
#: Opponent sets a worker keeps loaded (most recently used first out last): a node uses one set
#: per round, so this covers that many nodes on different rounds before a set is read again.
WORKER_OPPONENT_SETS = 16
_WORKER_OPPONENTS: OrderedDict[str, list[Program]] = OrderedDict()

#: The evaluator's set directory, where a worker reads the opponent sets jobs name.
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
