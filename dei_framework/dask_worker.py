"""The worker side of the ``dask`` evaluation backend: what stays on a Dask worker for a run.

The backend installs the run's domain and each round's opponent set on every worker as a
:class:`Resident` worker plugin (the scheduler hands a plugin to each worker once, and to a
worker that joins later when it joins); a job carries a :class:`ResidentRef` in their place,
and :func:`on_worker` swaps it for the worker's copy. Imported by the backend when it starts
and by the workers when they unpickle a plugin or a job (never by the rest of the core: it
imports ``distributed``).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import collections
import pickle
from collections.abc import Callable
from typing import Any

import attrs
import distributed

#: What the :class:`Resident` plugins installed on this worker hold, by name.
_RESIDENT: dict[str, Any] = {}
#: How often this worker received each of them (once, unless a plugin is registered again).
_RECEIVED: collections.Counter[str] = collections.Counter()


@attrs.frozen
class ResidentRef:
    """What a job carries in place of an object a :class:`Resident` plugin installed.

    Attributes:
        name: The plugin's name (unique to a backend and an object).
    """

    name: str


class Resident(distributed.WorkerPlugin):
    """Keeps one object on every worker, under its name, until the plugin is removed.

    Args:
        name: The name jobs use (:class:`ResidentRef`); also the plugin's name.
        value: The object; pickled here once, unpickled once per worker.
    """

    def __init__(self, name: str, value: Any) -> None:
        self.name = name
        self.data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)

    def setup(self, worker: distributed.Worker) -> None:
        _RESIDENT[self.name] = pickle.loads(self.data)
        _RECEIVED[self.name] += 1

    def teardown(self, worker: distributed.Worker) -> None:
        _RESIDENT.pop(self.name, None)


def on_worker(function: Callable[..., Any], domain: ResidentRef, *args: Any) -> Any:
    """A job on a worker: ``function(domain, *args)`` with every :class:`ResidentRef` (the
    domain, an opponent set) replaced by this worker's copy."""
    return function(
        _RESIDENT[domain.name],
        *(_RESIDENT[arg.name] if isinstance(arg, ResidentRef) else arg for arg in args),
    )


def received() -> dict[str, int]:
    """How often this worker received each resident object, by name (run on the workers)."""
    return dict(_RECEIVED)


def resident() -> list[str]:
    """The names of the objects this worker holds now (run on the workers)."""
    return sorted(_RESIDENT)
