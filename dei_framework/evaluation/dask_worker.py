"""The worker side of the ``dask`` evaluation backend: what stays on a Dask worker for a run.

The backend installs the run's domain and each round's opponent set on every worker as a
:class:`Resident` worker plugin (the scheduler hands a plugin to each worker once, and to a
worker that joins later when it joins); a job carries a :class:`ResidentRef` in their place,
and :func:`on_worker` swaps it for the worker's copy. Imported by the backend when it starts
and by the workers when they unpickle a plugin or a job (never by the rest of the core: it
imports ``distributed``).

The backend also places one :class:`Evaluations` actor on every worker: the direct path of a
job, from the run straight to the worker and back, without the scheduler's hops.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import collections
import pickle
from collections.abc import Callable
from typing import Any

import attrs
import distributed
from distributed.protocol import pickle as dask_pickle

#: What the :class:`Resident` plugins installed on this worker hold, by name.
_RESIDENT: dict[str, Any] = {}
#: How often this worker received each of them (once, unless a plugin is registered again).
_RECEIVED: collections.Counter[str] = collections.Counter()
#: The jobs this worker ran, by the name of their domain (one per backend) and the path they
#: came by (``"actor"``, ``"task"``).
_RAN: collections.Counter[tuple[str, str]] = collections.Counter()


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


@attrs.frozen
class Raised:
    """What an :class:`Evaluations` call returns when the job's function raised: the exception
    travels as a value, so that the backend tells it from a failure of the call itself (a
    worker that died, a connection that broke), which it redoes elsewhere.

    Attributes:
        exception: What the function raised.
    """

    exception: Exception


class Evaluations:
    """The actor through which the backend sends jobs straight to this worker (one per worker).

    Its method is a coroutine, so Dask runs it on the worker's event loop rather than in the
    worker's one actor thread; the job itself runs in the worker's task threads (``--nthreads``
    of them), the ones its ordinary tasks run in. A one-thread worker therefore runs one
    evaluation at a time whichever path a job came by, and a worker with more threads runs as
    many jobs at once as it has threads.

    A job and its answer travel as pickled bytes (:func:`pack`), which Dask's messages carry
    as they are: wrapped for Dask's own serialization, every argument would cost a header and
    a lookup of its serializer each way, a good part of a job's overhead
    (``benchmarks/scale_out.py``, ``task_overhead_ms``).
    """

    def __init__(self) -> None:
        self._worker = distributed.get_worker()

    async def evaluate(self, *job: bytes) -> bytes:
        """:func:`on_worker` in a task thread, for a job packed by :func:`pack` (the function,
        the domain's :class:`ResidentRef` and the arguments); returns its result packed, or
        what the function raised as a :class:`Raised`.

        Raises:
            LookupError: This worker does not hold an object the job names (not the job's
                fault: the backend sends it by the scheduler instead).
        """
        function, domain, *args = (dask_pickle.loads(part) for part in job)
        missing = [
            ref.name
            for ref in (domain, *args)
            if isinstance(ref, ResidentRef) and ref.name not in _RESIDENT
        ]
        if missing:
            raise LookupError(f"this worker holds no {', '.join(missing)}")
        _RAN[domain.name, "actor"] += 1
        threads = self._worker.executors["default"]
        try:
            result = await asyncio.get_running_loop().run_in_executor(
                threads, _evaluate, function, domain, tuple(args)
            )
        except Exception as exc:  # noqa: BLE001 - relayed as a value, raised by the backend
            result = Raised(exc)
        return dask_pickle.dumps(result)


def pack(function: Callable[..., Any], domain: ResidentRef, args: tuple[Any, ...]) -> list[bytes]:
    """A job for :meth:`Evaluations.evaluate`: each part pickled as Dask pickles a task's
    (by value when its module cannot be imported on a worker: ``__main__``, or registered
    with ``cloudpickle.register_pickle_by_value``)."""
    return [dask_pickle.dumps(part) for part in (function, domain, *args)]


def unpack(answer: bytes) -> Any:
    """What :meth:`Evaluations.evaluate` returned: the job's result, or a :class:`Raised`."""
    return dask_pickle.loads(answer)


def on_worker(function: Callable[..., Any], domain: ResidentRef, *args: Any) -> Any:
    """A job on a worker (sent as a task): ``function(domain, *args)`` with every
    :class:`ResidentRef` (the domain, an opponent set) replaced by this worker's copy."""
    _RAN[domain.name, "task"] += 1
    return _evaluate(function, domain, args)


def _evaluate(function: Callable[..., Any], domain: ResidentRef, args: tuple[Any, ...]) -> Any:
    return function(
        _RESIDENT[domain.name],
        *(_RESIDENT[arg.name] if isinstance(arg, ResidentRef) else arg for arg in args),
    )


def ran(domain: ResidentRef) -> dict[str, int]:
    """How many jobs of ``domain``'s backend this worker ran, by path: ``"actor"`` (direct),
    ``"task"`` (through the scheduler; run on the workers)."""
    return {path: count for (name, path), count in _RAN.items() if name == domain.name}


def received() -> dict[str, int]:
    """How often this worker received each resident object, by name (run on the workers)."""
    return dict(_RECEIVED)


def resident() -> list[str]:
    """The names of the objects this worker holds now (run on the workers)."""
    return sorted(_RESIDENT)
