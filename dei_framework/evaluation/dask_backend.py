"""The ``dask`` evaluation backend: evaluation jobs on a Dask distributed cluster.

``--evaluator dask --evaluator-address tcp://host:8786`` sends a run's evaluation jobs to the
workers of that scheduler; without an address a ``LocalCluster`` (one worker process per
``--eval-workers``, one thread each) is started for the run and stopped at its end. The jobs
are the same functions the local pool runs (:mod:`dei_framework.evaluation.local`), so the outcomes
are the same bit for bit. What travels:

* the domain (its options included), once per worker: at connect, and to a worker that joins
  later when it joins;
* each round's opponent set, once per worker, the same way, when the first job of the round
  is sent; dropped when the evaluator has moved on;
* per job (a batch of the evaluations asked for in one turn of the event loop, one job per
  worker: :class:`~dei_framework.evaluation.local.Evaluator`), the candidates' texts and evaluation
  seeds and the names of the domain and the set; back, the outcomes.

The domain and the sets are not Dask data (``scatter``): Dask's active memory manager drops
the replicas of data no waiting task needs, so a scattered set would travel to a worker again
for later jobs. They travel as worker plugins
(:class:`~dei_framework.evaluation.dask_worker.Resident`),
which the scheduler hands to every worker once, joining ones included, and which stay until the
backend removes them.

How a job travels is :mod:`~dei_framework.evaluation.dask_jobs`'s: a node waits on its
candidates' jobs, so those go straight to a worker and back through a Dask actor
(:class:`~dei_framework.evaluation.dask_worker.Evaluations`, one per worker), over connections
of the run's own event loop; the generality lane, which nobody waits on, stays a task of low
priority. On the worker both run in its task threads.

A ``tls://`` scheduler address is reached over TLS with the certificates named in the run's
``[evaluator_options]`` (:mod:`~dei_framework.evaluation.dask_options`); the run then refuses
to talk to the scheduler unencrypted.

Faults: a worker that dies mid-job has its job redone on another worker (see
:mod:`~dei_framework.evaluation.dask_jobs`). A client that lost the scheduler sends tasks only
(the workers may still answer), so a scheduler that is gone raises
:class:`~dei_framework.contract.backend.EvaluatorLost` naming its address; the run checkpoints and
``--resume`` continues it. At connect every worker reports the versions of ``dei-framework``
and of the domain's distribution; a worker on another version is refused before anything runs
(:mod:`~dei_framework.evaluation.dask_versions`).
A worker that joins later is checked on arrival, before it runs a task
(:mod:`dei_framework.evaluation.dask_guard`): one on another version closes itself and the run
prints a warning naming it and both versions; it never gets an actor (its actor is created as a
task restricted to it, which it never runs, and is cancelled once it is no longer listed).

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
import os
import signal
import sys
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from dei_framework.contract.backend import EvaluationBackend, EvaluatorLost, EvaluatorOptions
from dei_framework.contract.errors import ConfigError
from dei_framework.evaluation.dask_calls import (
    PLUGIN_SECONDS,
    bounded,
    register_plugin,
    unregister_plugin,
    unregister_plugins,
)
from dei_framework.evaluation.dask_connect import open_client, quiet_dask_logs, start_local_cluster
from dei_framework.evaluation.dask_jobs import JobPaths, _Direct, _Job, _on_its_loop
from dei_framework.evaluation.dask_options import _import_distributed, tls_files
from dei_framework.evaluation.dask_versions import check_versions, refusal

# isort: split
# Re-exported: the names this module held before its parts moved (plugins, benchmarks and
# tests import them from here).
from dei_framework.evaluation.dask_connect import (  # noqa: F401
    QUIET_CLUSTER,
    WORKER_WAIT_SECONDS,
    quiet_environment,
)
from dei_framework.evaluation.dask_jobs import (  # noqa: F401
    _CALL_FAILED,
    FETCH_CHECK_SECONDS,
    GENERALITY_PRIORITY,
    _least_busy,
    _running_loop,
    _settle,
)
from dei_framework.evaluation.dask_options import CONNECT_SECONDS, TLS_OPTIONS, tls_run_options  # noqa: F401
from dei_framework.evaluation.dask_versions import (  # noqa: F401
    CORE_DISTRIBUTION,
    _runs,
    _short,
    distribution_of,
    installed_versions,
)

#: Opponent sets kept on the workers (the most recently used): a node uses one set
#: per round, so this covers that many nodes on different rounds.
RESIDENT_SETS = 16
#: Seconds to wait at connect for the workers' actors (the direct path of the jobs).
ACTOR_WAIT_SECONDS = 20.0
#: Seconds to wait for the scheduler to take a refused worker off its list.
RETIRE_SECONDS = 10.0


class DaskBackend(JobPaths, EvaluationBackend):
    """Evaluation jobs on a Dask cluster (see the module docstring).

    The Dask client runs in its own thread (Dask's synchronous client), so one backend serves
    any event loop, and closing it needs none; blocking client calls (connect, installing a
    set) run in a helper thread. A task's result reaches the event loop through a
    done-callback; an actor is called from the event loop of the run that waits on the job,
    over connections of that loop to its worker (kept, one per job under way at once).

    Args:
        domain: The run's domain (picklable).
        address: The scheduler (``tcp://host:8786``, ``tls://host:8786``); ``None`` starts a
            local cluster.
        workers: Worker processes of a local cluster (default: one per core).
        tls: For a ``tls://`` address, the PEM files ``tls_ca_file``, ``tls_cert`` and
            ``tls_key`` (see :func:`tls_files`).
    """

    def __init__(
        self,
        domain: Any,
        *,
        address: str | None = None,
        workers: int | None = None,
        tls: Mapping[str, str] | None = None,
    ) -> None:
        if workers is not None and workers < 1 and address is None:
            raise ConfigError(
                "--evaluator dask needs --eval-workers >= 1 (worker processes of the local cluster)"
            )
        self.domain = domain
        self.address = address
        self.tls = tls_files(address, tls or {})
        #: Workers that joined on another version and closed themselves: one line each.
        self.refused: list[str] = []
        # Names of this backend's worker plugins (several runs may share a cluster).
        self._token = uuid.uuid4().hex[:12]
        self._guard = f"dei-version-guard-{self._token}"
        self._local_workers = workers
        self._client: Any = None
        self._cluster: Any = None
        self._worker_side: Any = None  # dei_framework.evaluation.dask_worker, imported at connect
        self._domain: Any = None  # its ResidentRef
        self._slots = 1
        # The opponent sets on the workers, by set id (most recently used last), and how many
        # jobs under way carry each: a set is taken off the workers only when none does.
        self._sets: collections.OrderedDict[str, concurrent.futures.Future] = (
            collections.OrderedDict()
        )
        self._carried: collections.Counter[str] = collections.Counter()
        # The direct path: one actor per worker, by worker address, and those being created.
        self._actors: dict[str, _Direct] = {}
        self._placing: dict[str, Any] = {}
        self._direct_jobs: set[_Job] = set()  # sent to an actor, not answered yet
        # The calls under way (tasks of the runs' loops) and, per event loop and worker, the
        # idle connections they use (a connection belongs to the loop it was opened on).
        self._calls_under_way: set[asyncio.Task] = set()
        self._connections: dict[tuple[asyncio.AbstractEventLoop, str], list[Any]] = {}
        self._connection_args: dict[str, Any] = {}
        # Candidate jobs waiting for a worker's thread to free up (every actor has as many
        # jobs as its worker has threads), oldest first, and each worker's threads.
        self._waiting: collections.deque[_Job] = collections.deque()
        self._threads: dict[str, int] = {}
        self._lock = threading.Lock()  # connecting and closing (held for seconds at connect)
        self._sets_lock = threading.Lock()  # the sets (held for a moment, on the loop)
        self._actors_lock = threading.Lock()  # the actors (a moment, on the loop or Dask's)
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
            from dei_framework.evaluation import dask_worker

            quiet_dask_logs()
            if self.address is None:
                self._cluster = start_local_cluster(distributed, self._local_workers)
                self.address = self._cluster.scheduler_address
            client = open_client(distributed, self.address, self.tls)
            name = self._install_plugins(client, dask_worker)
            self._client = client
            with contextlib.suppress(AttributeError):  # a Dask without it: asyncio's default
                client.loop.asyncio_loop.set_exception_handler(_quiet_cut_off_calls)
            self._connection_args = client.connection_args  # TLS: the client's own
            self._worker_side = dask_worker
            self._domain = dask_worker.ResidentRef(name)
            creating = self._count_slots()
            # The first jobs take the direct path (bounded: a worker that leaves meanwhile
            # keeps its actor from ever being placed; its jobs go by the scheduler).
            if creating:
                with client.as_current(), contextlib.suppress(TimeoutError):
                    distributed.wait(list(creating.values()), timeout=ACTOR_WAIT_SECONDS)
                for address, future in creating.items():  # kept now, not when Dask calls back
                    if future.done():
                        self._actor_placed(client, address, future)

    def _install_plugins(self, client: Any, dask_worker: Any) -> str:
        """Checks the workers' versions and installs the run's worker plugins (the version
        guard, the resident domain); returns the domain plugin's name. The client is closed
        when this fails.

        Raises:
            EvaluatorLost: A worker did not install the plugins in time.
        """
        from dei_framework.evaluation import dask_guard

        try:
            expected = check_versions(client, self.domain, self.address)
            client.subscribe_topic(dask_guard.TOPIC, self._on_refused)
            dask_guard.register(client, expected, self._guard, timeout=PLUGIN_SECONDS)
            name = f"dei-domain-{self._token}"
            register_plugin(client, dask_worker.Resident(name, self.domain), name)
        except TimeoutError:
            client.close()
            raise EvaluatorLost(
                f"a Dask worker of {self.address} did not install the run's "
                f"plugins within {PLUGIN_SECONDS:.0f}s"
            ) from None
        except BaseException:
            client.close()
            raise
        return name

    def _on_refused(self, event: tuple[float, Any]) -> None:
        """A worker that joined on another version closed itself (in the client's thread)."""
        _, report = event
        line = refusal(report, self.address)
        self.refused.append(line)
        print(f"warning: {line}", file=sys.stderr, flush=True)
        client, address = self._client, report.get("worker")
        if client is not None and isinstance(address, str):
            # Not here: this runs on the client's own thread, which the call needs.
            with contextlib.suppress(RuntimeError):  # closing: the executor takes nothing
                self._calls.submit(self._retire, client, address)

    def _retire(self, client: Any, address: str) -> None:
        """Takes a refused worker off the scheduler's list (in a helper thread).

        A worker refused as it joins may never finish closing (one started by a nanny, whose
        setup failed): listed as closing, it would be asked, and waited for, whenever a plugin
        is installed. Retired, it is asked nothing more.
        """
        with contextlib.suppress(Exception):  # gone already, or the scheduler is: nothing to do
            # Client.retire_workers with a bound (it passes every keyword on to the scheduler).
            bounded(
                client,
                client.scheduler.retire_workers,
                RETIRE_SECONDS,
                workers=[address],
                close_workers=True,
                remove=True,
            )

    def _count_slots(self) -> dict[str, Any]:
        """Counts the workers' threads and gives every worker an actor (at connect and once a
        round, in a helper thread); returns the actors being created, by worker."""
        client = self._client
        if client is None:
            return {}
        try:
            threads = client.nthreads()
        except Exception:  # noqa: BLE001 - keep the last count when it cannot be had
            return {}
        self._slots = max(1, sum(threads.values()))
        return self._place_actors(client, threads)

    # --- opponent sets ---------------------------------------------------------------------------

    async def ship(self, set_id: str, programs: Sequence[Any]) -> Any:
        with self._sets_lock:
            shipping = self._sets.get(set_id)
            if shipping is None:
                shipping = self._calls.submit(self._install_set, set_id, list(programs))
                self._sets[set_id] = shipping
                unused = [
                    known
                    for known in list(self._sets)[:-RESIDENT_SETS]
                    if not self._carried[self._set_name(known)] and self._sets[known].done()
                ]
                for known in unused:  # the least recently used, beyond the limit
                    self._sets.pop(known)
                    self._calls.submit(self._remove_plugin, self._set_name(known))
            self._sets.move_to_end(set_id)
        if shipping.done() and not shipping.cancelled() and shipping.exception() is None:
            # Every job after the round's first: at once (wrap_future would hand the result
            # over through the loop's self-pipe, a wake-up more per job).
            return shipping.result()
        try:
            return await asyncio.wrap_future(shipping)
        except EvaluatorLost:
            with self._sets_lock:
                self._sets.pop(set_id, None)
            raise

    def _set_name(self, set_id: str) -> str:
        return f"dei-opponents-{self._token}-{set_id}"

    def _install_set(self, set_id: str, programs: list[Any]) -> Any:
        """Installs an opponent set on every worker (in a helper thread); returns its ref."""
        self._count_slots()  # once a round: workers may have joined or left
        name = self._set_name(set_id)
        try:
            register_plugin(self._client, self._worker_side.Resident(name, programs), name)
        except TimeoutError:
            # A worker did not answer in time (one refused, stuck while it closes): the
            # scheduler holds the set and every worker that answered has it; a worker
            # without it refuses a direct job, which then goes by the scheduler.
            pass
        except Exception as exc:  # the client cannot reach the scheduler: it is gone
            raise self._lost(exc) from None
        return self._worker_side.ResidentRef(name)

    def _remove_plugin(
        self, name: str, client: Any = None, timeout: float = PLUGIN_SECONDS
    ) -> None:
        client = client or self._client
        if client is not None:
            with contextlib.suppress(Exception):  # a lost scheduler holds nothing any more
                # Bounded: a worker that never answers would keep this thread, and so the
                # process at exit (it joins the helper threads), waiting.
                unregister_plugin(client, name, timeout=timeout)

    # --- what a job meets when the backend is gone ------------------------------------------------

    def _lost(self, exc: BaseException) -> EvaluatorLost:
        reason = getattr(exc, "reason", None) or type(exc).__name__
        return EvaluatorLost(f"lost the Dask scheduler at {self.address} ({reason})")

    def _closed(self) -> EvaluatorLost:
        """What a job of this backend meets once it is closed."""
        return EvaluatorLost(f"the Dask backend at {self.address} is closed")

    # --- stopping --------------------------------------------------------------------------------

    def close(self, *, wait: bool = True) -> None:
        with self._lock:
            client, cluster = self._client, self._cluster
            self._client = self._cluster = self._domain = None
        with self._actors_lock:
            placing = list(self._placing.values())
            direct_jobs = [*self._direct_jobs, *self._waiting]
            self._waiting.clear()
            self._actors.clear()
            self._placing.clear()
            self._direct_jobs.clear()
            calls, self._calls_under_way = list(self._calls_under_way), set()
            connections, self._connections = dict(self._connections), {}
        for job in direct_jobs:  # their calls are cancelled below: nobody would answer them
            job.settle((False, self._closed()))
        for call in calls:
            _on_its_loop(call.get_loop(), call.cancel)
        for (loop, _), comms in connections.items():
            for comm in comms:
                _on_its_loop(loop, comm.abort)
        for future in placing:
            with contextlib.suppress(Exception):  # a lost scheduler cannot hear it
                future.cancel()
        with self._sets_lock:
            names = [self._set_name(set_id) for set_id in self._sets]
            self._sets.clear()
        if client is not None and cluster is None:  # a cluster of our own goes away anyway
            # Left behind, they would stay on the scheduler (and a stale guard would refuse
            # the workers of a later run on another version). Bounded: a lost scheduler never
            # answers.
            unregister_plugins(
                client, [self._guard, f"dei-domain-{self._token}", *names], timeout=5 if wait else 1
            )
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


def _quiet_cut_off_calls(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The exception handler of the Dask client's event loop: a call of the client's thread
    whose outcome nobody took because the client closed under it (a task's result fetched in
    steps, a bounded plugin call: the run was stopped) ends with a cancellation or a closed
    connection, which asyncio would print with a traceback when the call is collected. Those
    are dropped; anything else goes to asyncio's default handler."""
    distributed = _import_distributed()
    cut_off = (
        asyncio.CancelledError,
        distributed.client.FutureCancelledError,
        distributed.comm.CommClosedError,
    )
    if "never retrieved" in str(context.get("message")) and isinstance(
        context.get("exception"), cut_off
    ):
        return
    loop.default_exception_handler(context)


def make_backend(ctx: EvaluatorOptions) -> DaskBackend:
    """The ``dask`` backend's factory (registered by the core's own plugin): a backend for
    ``ctx.domain``."""
    return DaskBackend(ctx.domain, address=ctx.address, workers=ctx.workers, tls=ctx.options)
