"""The Dask worker plugin that refuses a worker joining a run's cluster on another version.

The ``dask`` backend checks every worker's versions when it connects; this plugin checks every
worker that joins later, on the worker itself, before it runs a task. The plugin travels to
the workers *by value* (:func:`register`), and this module imports nothing of the project, so
the check runs even on a worker whose installed ``dei_framework`` is another release (one
without this module, or with another version of it).

A worker on another version logs an event on :data:`TOPIC` (its address, what it runs and
what the run runs) and closes itself; the scheduler gives its tasks to the other workers.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
from collections.abc import Mapping

import distributed

#: The event topic a refused worker reports on.
TOPIC = "dei-version-refused"


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


class VersionGuard(distributed.WorkerPlugin):
    """Closes a worker whose installed distributions differ from the run's.

    Args:
        expected: The run's version of each distribution (``None``: not installed).
    """

    def __init__(self, expected: Mapping[str, str | None]) -> None:
        self.expected = dict(expected)

    def setup(self, worker: distributed.Worker) -> None:
        found = {name: _installed(name) for name in self.expected}
        if found == self.expected:
            return
        worker.log_event(
            TOPIC, {"worker": worker.address, "found": found, "expected": self.expected}
        )
        # Closed on the next turn of the worker's loop, before it handles any message of the
        # scheduler (a closing worker executes no task); the event above is flushed first.
        asyncio.ensure_future(
            worker.close(reason="dei: another version of the project", nanny=True)
        )


def register(
    client: distributed.Client, expected: Mapping[str, str | None], name: str, *, timeout: float
) -> None:
    """Registers a :class:`VersionGuard` for ``expected`` on the cluster of ``client`` under
    ``name`` (every current and future worker runs it).

    Raises:
        TimeoutError: A worker did not answer within ``timeout`` seconds.
    """
    import sys

    import cloudpickle

    # Here, not at the top: this module travels to the workers by value and imports nothing of
    # the project there; this function runs in the run's process only.
    from dei_framework.evaluation.dask_calls import register_plugin

    # By value: a worker of another release may not have this module, or another version of it.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        register_plugin(client, VersionGuard(expected), name, timeout=timeout)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
