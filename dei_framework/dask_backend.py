"""The ``dask`` evaluation backend: evaluation jobs on a Dask distributed cluster.

``--evaluator dask --evaluator-address tcp://host:8786`` sends a run's evaluation jobs to the
workers of that scheduler; without an address a ``LocalCluster`` (one worker process per
``--eval-workers``, one thread each) is started for the run and stopped at its end. The jobs
are the same functions the local pool runs (:mod:`dei_framework.evaluation`), so the outcomes
are the same bit for bit. What travels:

* the domain (its options included), once per worker at connect (``scatter(broadcast=True)``);
* each round's opponent set, once per worker when a job first needs it (scattered the same
  way; jobs carry a reference to it), released when the evaluator has moved on;
* per job, the candidates' texts and evaluation seeds; back, the outcomes.

Faults: a worker that dies mid-job has its job redone on another worker by the scheduler
(``distributed.scheduler.allowed-failures`` times; after that the job's candidates are invalid,
as with a local worker that died). A scheduler that is gone raises
:class:`~dei_framework.backend.EvaluatorLost` naming its address; the run checkpoints and
``--resume`` continues it. At connect every worker reports the versions of ``dei-framework``
and of the domain's distribution; a worker on another version is refused before anything runs.

``distributed`` is an optional dependency (``pip install "dei-framework[dask]"``): it is imported
when the backend starts, never when this module is imported.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import importlib.metadata
import logging
import os
import signal
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from dei_framework.backend import EvaluationBackend, EvaluatorLost, EvaluatorOptions, WorkerDied
from dei_framework.errors import ConfigError

#: Seconds to wait for the scheduler to answer at connect.
CONNECT_SECONDS = 20.0
#: Seconds to wait for a first worker to join the scheduler.
WORKER_WAIT_SECONDS = 60.0
#: Opponent sets kept scattered on the cluster (the most recently used): a node uses one set
#: per round, so this covers that many nodes on different rounds.
SCATTERED_SETS = 16
#: Task priority of the generality lane: below candidate evaluations, which run first.
GENERALITY_PRIORITY = -10
#: The distribution of the core; every worker must run the same version.
CORE_DISTRIBUTION = "dei-framework"


def distribution_of(module: str) -> str | None:
    """The installed distribution that provides ``module`` (``None``: not from one)."""
    top = module.partition(".")[0]
    names = importlib.metadata.packages_distributions().get(top) or []
    return names[0] if names else None


def installed_versions(distributions: Sequence[str]) -> dict[str, str | None]:
    """The versions of ``distributions`` installed where this runs (run on every worker)."""
    versions: dict[str, str | None] = {}
    for name in distributions:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ConfigError('--evaluator dask needs Dask distributed: pip install '
                          '"dei-framework[dask]"') from None  # fmt: skip
    return distributed


class DaskBackend(EvaluationBackend):
    """Evaluation jobs on a Dask cluster (see the module docstring).

    The Dask client runs in its own thread (Dask's synchronous client), so one backend serves
    any event loop, and closing it needs none; blocking client calls (connect, scatter) run in
    a helper thread, and a job's result reaches the event loop through a done-callback.

    Args:
        domain: The run's domain (picklable).
        address: The scheduler (``tcp://host:8786``); ``None`` starts a local cluster.
        workers: Worker processes of a local cluster (default: one per core).
    """

    def __init__(self, domain: Any, *, address: str | None = None,
                 workers: int | None = None) -> None:  # fmt: skip
        if workers is not None and workers < 1 and address is None:
            raise ConfigError("--evaluator dask needs --eval-workers >= 1 (worker processes of "
                              "the local cluster)")  # fmt: skip
        self.domain = domain
        self.address = address
        self._local_workers = workers
        self._client: Any = None
        self._cluster: Any = None
        self._domain_future: Any = None
        self._slots = 1
        self._sets: collections.OrderedDict[str, concurrent.futures.Future] = (
            collections.OrderedDict()
        )
        self._lock = threading.Lock()  # connecting and closing (held for seconds at connect)
        self._sets_lock = threading.Lock()  # the scattered sets (held for a moment, on the loop)
        self._calls = concurrent.futures.ThreadPoolExecutor(
            max_workers=2, thread_name_prefix="dei-dask"
        )

    @property
    def workers(self) -> int:
        return self._slots

    # --- connecting ------------------------------------------------------------------------------

    async def start(self) -> None:
        await asyncio.wrap_future(self._calls.submit(self._connect))

    def _connect(self) -> None:
        with self._lock:
            if self._client is not None:
                return
            distributed = _import_distributed()
            # Every failure the client meets reaches the user as one message of this backend
            # (EvaluatorLost, WorkerDied, a refused worker); Dask's own log lines for the same
            # event (reconnect attempts with their tracebacks) would bury it.
            for name in ["distributed", *logging.root.manager.loggerDict]:
                if name.partition(".")[0] == "distributed":  # Dask's config sets some apart
                    logging.getLogger(name).setLevel(logging.CRITICAL)
            address = self.address
            if address is None:
                with warnings.catch_warnings():  # another cluster's HTTP port: a note only
                    warnings.filterwarnings("ignore", message="Port .* is already in use")
                    self._cluster = distributed.LocalCluster(
                        n_workers=self._local_workers or None, threads_per_worker=1,
                        processes=True, dashboard_address=None, silence_logs=logging.ERROR,
                    )  # fmt: skip
                address = self.address = self._cluster.scheduler_address
            try:
                client = distributed.Client(address, timeout=CONNECT_SECONDS,
                                            set_as_default=False)  # fmt: skip
            except (OSError, TimeoutError) as exc:
                raise EvaluatorLost(f"cannot reach the Dask scheduler at {address}: {exc}; "
                                    "is it running?") from None  # fmt: skip
            try:
                client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
            except (OSError, TimeoutError):
                client.close()
                raise EvaluatorLost(f"the Dask scheduler at {address} has no workers (waited "
                                    f"{WORKER_WAIT_SECONDS:.0f}s)") from None  # fmt: skip
            try:
                self._check_versions(client)
                self._domain_future = client.scatter(self.domain, broadcast=True, hash=False)
            except BaseException:
                client.close()
                raise
            self._client = client
            self._count_slots()

    def _check_versions(self, client: Any) -> None:
        """Refuses the cluster when a worker runs another version of the core or the domain."""
        distributions = [CORE_DISTRIBUTION]
        domain_distribution = distribution_of(type(self.domain).__module__)
        if domain_distribution and domain_distribution not in distributions:
            distributions.append(domain_distribution)
        here = installed_versions(distributions)
        there = client.run(installed_versions, distributions)
        wrong = [f"{worker} runs {name} {versions.get(name)} (this run: {here[name]})"
                 for worker, versions in sorted(there.items()) for name in distributions
                 if versions.get(name) != here[name]]  # fmt: skip
        if wrong:
            raise ConfigError(f"refusing the Dask workers at {self.address}: "
                              f"{'; '.join(wrong)}; start the workers from the same "
                              "installation as the run")  # fmt: skip

    def _count_slots(self) -> None:
        client = self._client
        if client is not None:
            with contextlib.suppress(Exception):  # keep the last count when it cannot be had
                self._slots = max(1, sum(client.nthreads().values()))

    # --- jobs ------------------------------------------------------------------------------------

    async def ship(self, set_id: str, programs: Sequence[Any]) -> Any:
        with self._sets_lock:
            shipping = self._sets.get(set_id)
            if shipping is None:
                shipping = self._calls.submit(self._scatter, list(programs))
                self._sets[set_id] = shipping
                while len(self._sets) > SCATTERED_SETS:  # released on the cluster
                    self._sets.popitem(last=False)
            self._sets.move_to_end(set_id)
        try:
            return await asyncio.wrap_future(shipping)
        except EvaluatorLost:
            with self._sets_lock:
                self._sets.pop(set_id, None)
            raise

    def _scatter(self, programs: list[Any]) -> Any:
        self._count_slots()  # once a round: workers may have joined or left
        try:
            # One object (the set), not one per program: scatter splits a list it is given.
            (shipped,) = self._client.scatter([programs], broadcast=True, hash=False)
            return shipped
        except Exception as exc:  # the client cannot scatter: the scheduler is gone
            raise self._lost(exc) from None

    async def run(self, function: Callable[..., Any], *args: Any,
                  lane: str = "candidates") -> Any:  # fmt: skip
        if self._client is None:
            raise EvaluatorLost(f"the Dask backend at {self.address} is closed")
        priority = GENERALITY_PRIORITY if lane == "generality" else 0
        future = self._client.submit(function, self._domain_future, *args, pure=False,
                                     priority=priority)  # fmt: skip
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()

        def finished(done: Any) -> None:  # in a thread of Dask's: result() may fetch the data
            try:
                outcome: tuple[bool, Any] = (True, done.result())
            except BaseException as exc:  # noqa: BLE001 - every kind of failure is relayed
                outcome = (False, self._failure(done, exc))
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(_settle, waiter, outcome)

        future.add_done_callback(finished)
        return await waiter

    def _failure(self, future: Any, exc: BaseException) -> BaseException:
        """What a failed job raises in the evaluator."""
        distributed = _import_distributed()
        if isinstance(exc, distributed.KilledWorker):
            return WorkerDied(f"the Dask workers running it died ({exc})")
        if future.status == "cancelled" or isinstance(exc, OSError | asyncio.CancelledError):
            return self._lost(exc)
        return exc

    def _lost(self, exc: BaseException) -> EvaluatorLost:
        reason = getattr(exc, "reason", None) or type(exc).__name__
        return EvaluatorLost(f"lost the Dask scheduler at {self.address} ({reason})")

    # --- stopping --------------------------------------------------------------------------------

    def close(self, *, wait: bool = True) -> None:
        with self._lock:
            client, cluster = self._client, self._cluster
            self._client = self._cluster = self._domain_future = None
        with self._sets_lock:
            self._sets.clear()
        for part in (client, cluster):
            if part is not None:
                with contextlib.suppress(Exception):  # a lost scheduler cannot say goodbye
                    part.close(timeout=5 if wait else 1)
        self._calls.shutdown(wait=False, cancel_futures=True)
        self._calls = concurrent.futures.ThreadPoolExecutor(
            max_workers=2, thread_name_prefix="dei-dask"
        )

    def kill(self) -> None:
        cluster = self._cluster
        if cluster is None:
            return
        for nanny in list(getattr(cluster, "workers", {}).values()):
            # A local cluster's nanny runs in this process; its worker is a child process.
            pid = getattr(getattr(getattr(nanny, "process", None), "process", None), "pid", None)
            if pid:
                with contextlib.suppress(OSError):  # best effort, just before the process exits
                    os.kill(pid, signal.SIGKILL)


def _settle(waiter: asyncio.Future, outcome: tuple[bool, Any]) -> None:
    if waiter.done():  # cancelled meanwhile
        return
    succeeded, value = outcome
    if succeeded:
        waiter.set_result(value)
    else:
        waiter.set_exception(value)


def make_backend(domain: Any, options: EvaluatorOptions) -> DaskBackend:
    """The ``dask`` backend's factory (registered by the core's own plugin)."""
    return DaskBackend(domain, address=options.address, workers=options.workers)
