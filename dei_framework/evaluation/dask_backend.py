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

How a job travels: a node waits on its candidates' jobs, so those go straight to the worker
and back, through a Dask actor (:class:`~dei_framework.evaluation.dask_worker.Evaluations`, one per
worker, created at connect and, once a round, for workers that joined; each job goes to the
one with the fewest jobs outstanding among those whose worker has a thread free, and waits in
the run until one has: whichever worker frees up first takes the next job). A task through
the scheduler would cost the client's batching interval and two more hops each way, several
milliseconds per job
(``benchmarks/scale_out.py``, ``roundtrip_ms``). The actor is called over connections of the
run's own event loop to the worker (Dask's comms, its TLS included), not through the Dask
client's thread: that hop there and back, and Dask's serialization of every argument (the job
travels as a few pickled byte strings), were a large part of a job's overhead
(``benchmarks/scale_out.py``: ``roundtrip_ms``, ``task_overhead_ms``). The generality lane,
which nobody waits on, stays a task of low priority. On the worker both run in its task
threads.

A ``tls://`` scheduler address is reached over TLS with the certificates named in the run's
``[evaluator_options]`` (``tls_ca_file``, ``tls_cert``, ``tls_key``: Dask's
``distributed.security.Security``); the run then refuses to talk to the scheduler unencrypted.

Faults: a worker that dies mid-job has its job redone on another worker: a direct call that
fails (its worker died, the connection broke) forgets that worker's actor and sends the job
again as a task, which the scheduler redoes elsewhere in turn when its worker dies
(``distributed.scheduler.allowed-failures`` times; after that the job's candidates are invalid,
as with a local worker that died). What the evaluated function raised is relayed unchanged and
not redone. A client that lost the scheduler sends tasks only (the workers may still answer),
so a scheduler that is gone raises
:class:`~dei_framework.contract.backend.EvaluatorLost` naming its address; the run checkpoints and
``--resume`` continues it. At connect every worker reports the versions of ``dei-framework``
and of the domain's distribution; a worker on another version is refused before anything runs.
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
import importlib.metadata
import logging
import os
import signal
import sys
import threading
import time
import uuid
import warnings
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import click

from dei_framework.contract.backend import (
    EvaluationBackend,
    EvaluatorLost,
    EvaluatorOptions,
    WorkerDied,
)
from dei_framework.contract.cli_options import RunOption
from dei_framework.contract.errors import ConfigError
from dei_framework.evaluation.dask_calls import (
    PLUGIN_SECONDS,
    bounded,
    register_plugin,
    unregister_plugin,
    unregister_plugins,
)

#: Seconds to wait for the scheduler to answer at connect.
CONNECT_SECONDS = 20.0
#: Seconds to wait for a first worker to join the scheduler.
WORKER_WAIT_SECONDS = 60.0
#: Opponent sets kept on the workers (the most recently used): a node uses one set
#: per round, so this covers that many nodes on different rounds.
RESIDENT_SETS = 16
#: Task priority of the generality lane: below other tasks of the cluster.
GENERALITY_PRIORITY = -10
#: Seconds to wait at connect for the workers' actors (the direct path of the jobs).
ACTOR_WAIT_SECONDS = 20.0
#: Seconds to wait for the scheduler to take a refused worker off its list.
RETIRE_SECONDS = 10.0
#: The distribution of the core; every worker must run the same version.
CORE_DISTRIBUTION = "dei-framework"
#: Seconds between checks, while a task's result is fetched, that the backend is still open.
FETCH_CHECK_SECONDS = 1.0
#: ``[evaluator_options]`` keys of this backend: the TLS files of a ``tls://`` scheduler.
TLS_OPTIONS = ("tls_ca_file", "tls_cert", "tls_key")
#: Dask settings for a cluster that evaluates: Dask's statistical profiler samples a worker's
#: threads every 10 ms, and its event-loop health check wakes every process's loop every
#: 20 ms; on the cores that evaluate, both take CPU (and a worker's GIL) from the evaluations
#: (``benchmarks/scale_out.py``: ``idle_cpu_ms_per_s``, ``task_ms``). Neither is needed to
#: evaluate: without the profiler the dashboard shows no profile, and a loop blocked for
#: longer than Dask's warning limit (3 s) is still reported. A local cluster of the run gets
#: them; ``dask scheduler`` and ``dask worker`` get them from :func:`quiet_environment`
#: (docs/multi-machine.md).
QUIET_CLUSTER = {"distributed.worker.profile.enabled": False,
                 "distributed.admin.tick.interval": "1s"}  # fmt: skip


def quiet_environment() -> dict[str, str]:
    """:data:`QUIET_CLUSTER` as the environment variables Dask reads its settings from."""
    return {"DASK_" + key.upper().replace(".", "__").replace("-", "_"): str(value)
            for key, value in QUIET_CLUSTER.items()}  # fmt: skip


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


def tls_files(address: str | None, options: Mapping[str, Any]) -> dict[str, str]:
    """The TLS files of ``[evaluator_options]`` for ``address``, checked (``{}``: plain TCP).

    Raises:
        ConfigError: An unknown option, a ``tls://`` address without all three files (or
            files without a ``tls://`` address), or a file that does not exist.
    """
    unknown = sorted(set(options) - set(TLS_OPTIONS))
    if unknown:
        raise ConfigError(
            f"--evaluator dask takes no [evaluator_options] key "
            f"{', '.join(map(repr, unknown))} (known: {', '.join(TLS_OPTIONS)})"
        )
    files = {key: str(options[key]) for key in TLS_OPTIONS if options.get(key)}
    secure = (address or "").startswith("tls://")
    if secure and len(files) < len(TLS_OPTIONS):
        missing = [key for key in TLS_OPTIONS if key not in files]
        raise ConfigError(f"the Dask scheduler at {address} speaks TLS: give "
                          f"{', '.join(missing)} in [evaluator_options] (PEM files of the "
                          "cluster's certificate authority and of this client)")  # fmt: skip
    if files and not secure:
        raise ConfigError(f"[evaluator_options] names TLS files but the Dask scheduler address "
                          f"{address or '(a local cluster)'} is not tls://host:port")  # fmt: skip
    for key, path in files.items():
        if not os.path.isfile(path):
            raise ConfigError(f"[evaluator_options] {key} = {path!r}: no such file")
    return files


def tls_run_options() -> list[RunOption]:
    """``--evaluator-tls-ca``, ``--evaluator-tls-cert``, ``--evaluator-tls-key``: the
    :data:`TLS_OPTIONS` of ``[evaluator_options]`` as flags of ``dei-run``, ``dei experiment``
    and ``dei node`` (paths made absolute)."""
    flags = {"tls_ca_file": ("--evaluator-tls-ca", "The certificate authority of a tls:// Dask "
                             "scheduler (PEM)"),
             "tls_cert": ("--evaluator-tls-cert", "This client's certificate for a tls:// Dask "
                          "scheduler (PEM, signed by that authority)"),
             "tls_key": ("--evaluator-tls-key",
                         "The private key of that certificate (PEM)")}  # fmt: skip
    return [RunOption(option=click.Option([flag, key], type=click.Path(dir_okay=False),
                                          metavar="FILE", help=f"{help_text}."),
                      target="evaluator_options",
                      convert=lambda path: str(Path(path).resolve()))
            for key, (flag, help_text) in flags.items()]  # fmt: skip


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

    def __init__(self, domain: Any, *, address: str | None = None, workers: int | None = None,
                 tls: Mapping[str, str] | None = None) -> None:  # fmt: skip
        if workers is not None and workers < 1 and address is None:
            raise ConfigError("--evaluator dask needs --eval-workers >= 1 (worker processes of "
                              "the local cluster)")  # fmt: skip
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
            import dask.config

            from dei_framework.evaluation import dask_guard, dask_worker

            # Every failure the client meets reaches the user as one message of this backend
            # (EvaluatorLost, WorkerDied, a refused worker); Dask's own log lines for the same
            # event (reconnect attempts with their tracebacks) would bury it.
            for name in ["distributed", *logging.root.manager.loggerDict]:
                if name.partition(".")[0] == "distributed":  # Dask's config sets some apart
                    logging.getLogger(name).setLevel(logging.CRITICAL)
            address = self.address
            if address is None:
                with warnings.catch_warnings(), dask.config.set(QUIET_CLUSTER):
                    # Another cluster's HTTP port: a note only.
                    warnings.filterwarnings("ignore", message="Port .* is already in use")
                    self._cluster = distributed.LocalCluster(
                        n_workers=self._local_workers or None, threads_per_worker=1,
                        processes=True, dashboard_address=None, silence_logs=logging.ERROR,
                    )  # fmt: skip
                address = self.address = self._cluster.scheduler_address
            security = None
            if self.tls:
                security = distributed.security.Security(
                    tls_ca_file=self.tls["tls_ca_file"], tls_client_cert=self.tls["tls_cert"],
                    tls_client_key=self.tls["tls_key"], require_encryption=True,
                )  # fmt: skip
            try:
                # direct_to_workers: jobs on the direct path and results go between the run
                # and the workers without the scheduler in between.
                client = distributed.Client(address, timeout=CONNECT_SECONDS,
                                            set_as_default=False, security=security,
                                            direct_to_workers=True)  # fmt: skip
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
                expected = self._check_versions(client)
                client.subscribe_topic(dask_guard.TOPIC, self._on_refused)
                dask_guard.register(client, expected, self._guard, timeout=PLUGIN_SECONDS)
                name = f"dei-domain-{self._token}"
                register_plugin(client, dask_worker.Resident(name, self.domain), name)
            except TimeoutError:
                client.close()
                raise EvaluatorLost(f"a Dask worker of {address} did not install the run's "
                                    f"plugins within {PLUGIN_SECONDS:.0f}s") from None  # fmt: skip
            except BaseException:
                client.close()
                raise
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

    def _check_versions(self, client: Any) -> dict[str, str | None]:
        """Refuses the cluster when a worker runs another version of the core or the domain;
        returns the versions every worker must run."""
        distributions = [CORE_DISTRIBUTION]
        domain_distribution = distribution_of(type(self.domain).__module__)
        if domain_distribution and domain_distribution not in distributions:
            distributions.append(domain_distribution)
        here = installed_versions(distributions)
        # A worker without the project cannot even unpickle the check: its error is returned,
        # and it is refused like a worker on another version.
        there = client.run(installed_versions, distributions, on_error="return")
        wrong = [f"{worker} cannot run this project ({_short(versions)})"
                 for worker, versions in sorted(there.items())
                 if isinstance(versions, BaseException)]  # fmt: skip
        wrong += [f"{worker} runs {_runs(name, versions.get(name), here[name])}"
                  for worker, versions in sorted(there.items()) for name in distributions
                  if isinstance(versions, Mapping)
                  and versions.get(name) != here[name]]  # fmt: skip
        if wrong:
            raise ConfigError(f"refusing the Dask workers at {self.address}: "
                              f"{'; '.join(wrong)}; start the workers from the same "
                              "installation as the run")  # fmt: skip
        return here

    def _on_refused(self, event: tuple[float, Any]) -> None:
        """A worker that joined on another version closed itself (in the client's thread)."""
        _, report = event
        found, expected = report.get("found", {}), report.get("expected", {})
        what = "; ".join(_runs(name, found.get(name), expected[name])
                         for name in expected if found.get(name) != expected[name])  # fmt: skip
        line = (f"refused the Dask worker {report.get('worker')} that joined {self.address}: it "
                f"runs {what}; its tasks go to the other workers")  # fmt: skip
        self.refused.append(line)
        print(f"warning: {line}", file=sys.stderr, flush=True)
        client, address = self._client, report.get("worker")
        if client is not None and isinstance(address, str):
            # Not here: this runs on the client's own thread, which the call needs.
            with contextlib.suppress(RuntimeError):  # closing: the executor takes nothing
                self._calls.submit(self._retire, client, address)

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

    def _place_actors(self, client: Any, threads: Mapping[str, int]) -> dict[str, Any]:
        """Creates an :class:`~dei_framework.evaluation.dask_worker.Evaluations` actor on each
        worker of
        ``threads`` (its thread count, by address) that has none and forgets those of workers
        that left; returns the creations, by worker."""
        workers = set(threads)
        with self._actors_lock:
            self._threads = {address: max(1, count) for address, count in threads.items()}
            for address, direct in self._actors.items():
                direct.capacity = self._threads[address] if address in workers else 0
            for address in [known for known in self._actors if known not in workers]:
                del self._actors[address]  # its worker left
            stranded = self._strand()
            for address in [known for known in self._placing if known not in workers]:
                self._placing.pop(address).cancel()  # it left before its actor was placed
            wanted = sorted(workers - set(self._actors) - set(self._placing))
            creating = []
            for address in wanted:
                # Restricted to its worker: a worker refused for its version closes itself
                # before it runs a task, so it never gets one (the creation waits, and is
                # cancelled when the worker is no longer listed).
                future = client.submit(self._worker_side.Evaluations, actor=True,
                                       workers=[address], allow_other_workers=False)  # fmt: skip
                self._placing[address] = future
                creating.append(future)
        self._resubmit(stranded)
        for address, future in zip(wanted, creating, strict=True):
            future.add_done_callback(
                lambda done, address=address: self._actor_placed(client, address, done)
            )
        return dict(zip(wanted, creating, strict=True))

    def _actor_placed(self, client: Any, address: str, future: Any) -> None:
        """Keeps the actor of ``address`` once it exists (in a thread of Dask's, and at connect
        in the connecting thread: whichever comes first keeps it)."""
        actor = None
        if future.status == "finished":
            with contextlib.suppress(Exception):  # no actor: its worker's jobs go as tasks
                # Bound to this client (the run's client is nobody's default): calls go
                # through it.
                with client.as_current():
                    actor = future.result()
        with self._actors_lock:
            if self._placing.get(address) is not future:
                return  # kept already, cancelled, or replaced meanwhile
            del self._placing[address]
            if actor is None or self._client is not client:
                return
            # Ties between idle actors go round, from a place of this backend's own, so
            # that runs sharing the workers do not all start on the same one.
            order = zlib.crc32(f"{self._token} {address}".encode())
            direct = _Direct(actor=actor, future=future, address=address, order=order,
                             capacity=self._threads.get(address, 1))  # fmt: skip
            self._actors[address] = direct
            # Jobs that waited for a free thread: the new worker's are free.
            taken = []
            while direct.outstanding < direct.capacity:
                job = self._next_waiting()
                if job is None:
                    break
                self._assign(direct, job)
                taken.append(job)
        for job in taken:
            self._start_call(direct, job)

    # --- jobs ------------------------------------------------------------------------------------

    async def ship(self, set_id: str, programs: Sequence[Any]) -> Any:
        with self._sets_lock:
            shipping = self._sets.get(set_id)
            if shipping is None:
                shipping = self._calls.submit(self._install_set, set_id, list(programs))
                self._sets[set_id] = shipping
                unused = [known for known in list(self._sets)[:-RESIDENT_SETS]
                          if not self._carried[self._set_name(known)]
                          and self._sets[known].done()]  # fmt: skip
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

    def _remove_plugin(self, name: str, client: Any = None,
                       timeout: float = PLUGIN_SECONDS) -> None:  # fmt: skip
        client = client or self._client
        if client is not None:
            with contextlib.suppress(Exception):  # a lost scheduler holds nothing any more
                # Bounded: a worker that never answers would keep this thread, and so the
                # process at exit (it joins the helper threads), waiting.
                unregister_plugin(client, name, timeout=timeout)

    def _retire(self, client: Any, address: str) -> None:
        """Takes a refused worker off the scheduler's list (in a helper thread).

        A worker refused as it joins may never finish closing (one started by a nanny, whose
        setup failed): listed as closing, it would be asked, and waited for, whenever a plugin
        is installed. Retired, it is asked nothing more.
        """
        with contextlib.suppress(Exception):  # gone already, or the scheduler is: nothing to do
            # Client.retire_workers with a bound (it passes every keyword on to the scheduler).
            bounded(client, client.scheduler.retire_workers, RETIRE_SECONDS, workers=[address],
                    close_workers=True, remove=True)  # fmt: skip

    async def run(self, function: Callable[..., Any], *args: Any,
                  lane: str = "candidates") -> Any:  # fmt: skip
        client = self._client
        if client is None:
            raise self._closed()
        worker_side = self._worker_side
        carried = [arg.name for arg in args if isinstance(arg, worker_side.ResidentRef)]
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        job = _Job(function=function, domain=self._domain, args=args, lane=lane, loop=loop,
                   waiter=waiter)  # fmt: skip
        with self._sets_lock:
            self._carried.update(carried)
        try:
            # Candidates (and parsing), which a node waits on, go straight to a worker's actor.
            # Generality stays a task: nobody waits on it, and its low priority keeps it behind
            # the other tasks of the cluster (another run's, sharing the workers); on a worker
            # it runs in the same task threads as the direct jobs, one at a time on a
            # one-thread worker. A client that lost the scheduler sends tasks too: they fail
            # as before, and the run hears EvaluatorLost (the workers may still answer).
            direct = lane == "candidates" and client.status == "running"
            if not (direct and self._dispatch(client, job)):
                self._submit(job)
            return await waiter
        finally:
            with self._sets_lock:
                self._carried.subtract(carried)
                for name in carried:  # no count left behind per round
                    if self._carried[name] <= 0:
                        del self._carried[name]

    def _dispatch(self, client: Any, job: _Job) -> bool:
        """Sends ``job`` to the actor with the fewest jobs outstanding among those with a free
        thread (of those, the one sent the fewest jobs), or queues it until a thread frees up;
        ``False``: no worker has an actor yet. Which actor does not change the outcome, a pure
        function of the job; waiting here rather than in a worker's queue lets whichever
        worker frees up first take the next job (a batch cut into more jobs than workers is
        not held up by the slowest worker's share)."""
        with self._actors_lock:
            if not self._actors:
                return False
            free = [direct for direct in self._actors.values()
                    if direct.outstanding < direct.capacity]  # fmt: skip
            if not free:
                self._waiting.append(job)
                return True
            direct = min(free, key=_least_busy)
            self._assign(direct, job)
        self._start_call(direct, job)
        return True

    def _assign(self, direct: _Direct, job: _Job) -> None:
        """Counts ``job`` as sent to ``direct`` and under way (under the actors' lock)."""
        direct.outstanding += 1
        direct.sent += 1
        self._direct_jobs.add(job)

    def _unassign(self, direct: _Direct, job: _Job) -> None:
        """Takes back ``job``'s place on ``direct``: its call ended without an answer anybody
        waits for."""
        with self._actors_lock:
            direct.outstanding -= 1
            self._direct_jobs.discard(job)

    def _next_waiting(self) -> _Job | None:
        """The oldest waiting job whose caller still waits (under the actors' lock)."""
        while self._waiting:
            job = self._waiting.popleft()
            if not job.waiter.done():  # else cancelled meanwhile: nobody waits for it
                return job
        return None

    def _strand(self) -> list[_Job]:
        """The waiting jobs, taken out of the queue when no actor is left to take them
        (under the actors' lock)."""
        if self._actors:
            return []
        stranded = list(self._waiting)
        self._waiting.clear()
        return stranded

    def _resubmit(self, jobs: Sequence[_Job]) -> None:
        """Sends ``jobs`` as tasks, from their run's loop (``client.submit`` is not meant for
        the client's own loop)."""
        for job in jobs:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                job.loop.call_soon_threadsafe(self._submit, job)

    def _submit(self, job: _Job) -> None:
        """Sends ``job`` as a task, through the scheduler (which redoes it elsewhere if its
        worker dies)."""
        client = self._client
        if client is None:
            job.settle((False, self._closed()))
            return
        priority = GENERALITY_PRIORITY if job.lane == "generality" else 0
        try:
            future = client.submit(self._worker_side.on_worker, job.function, job.domain,
                                   *job.args, pure=False, priority=priority)  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - the client closed under us, say
            job.settle((False, self._lost(exc)))
            return

        def finished(done: Any) -> None:  # in a thread of Dask's: result() may fetch the data
            try:
                outcome: tuple[bool, Any] = (True, self._result_of(done, client))
            except BaseException as exc:  # noqa: BLE001 - every kind of failure is relayed
                outcome = (False, self._failure(done, exc))
            job.settle(outcome)

        future.add_done_callback(finished)

    def _result_of(self, future: Any, client: Any) -> Any:
        """A done task's result (or its exception), fetched through ``client``'s event loop.

        A fetch still under way when the client closes never ends (its loop is gone), and the
        Dask thread that waits on it would hold up the exit of the process (seen once in the
        lost-scheduler test): the wait goes in steps, and ends with
        :class:`~dei_framework.contract.backend.EvaluatorLost` once the backend is closed.
        """
        while True:
            began = time.monotonic()
            try:
                return future.result(timeout=FETCH_CHECK_SECONDS)
            except TimeoutError:
                if time.monotonic() - began < FETCH_CHECK_SECONDS:
                    raise  # what the job itself raised, not the end of the wait
                if self._client is not client:
                    raise self._closed() from None

    def _start_call(self, direct: _Direct, job: _Job) -> None:
        """Starts the call of ``job`` to the actor ``direct`` on the job's own event loop (from
        any thread; ``job`` counts as outstanding on ``direct`` already)."""
        if _running_loop() is job.loop:
            self._launch(direct, job)
            return
        try:
            job.loop.call_soon_threadsafe(self._launch, direct, job)
        except RuntimeError:  # the loop is closed: nobody waits for the job
            self._unassign(direct, job)

    def _launch(self, direct: _Direct, job: _Job) -> None:
        task = job.loop.create_task(self._call_actor(direct, job))
        self._calls_under_way.add(task)  # held: the loop keeps only a weak reference
        task.add_done_callback(self._calls_under_way.discard)

    async def _call_actor(self, direct: _Direct, job: _Job | None) -> None:
        """Sends ``job`` to a worker's actor (on the job's own event loop) and settles it, then
        the waiting jobs of that loop one after another while there are some; a call that
        fails (its worker died, the connection broke) forgets the actor and sends the job
        again through the scheduler (and the waiting ones, when no actor is left)."""
        while job is not None:
            try:
                answer = await self._call(direct, job)
            except Exception:  # noqa: BLE001 - the call failed, not the job: redone below
                answer = _CALL_FAILED
            except BaseException:  # cancelled (the run stops, or close()): nobody waits
                self._unassign(direct, job)
                raise
            following, stranded = None, []
            with self._actors_lock:
                self._direct_jobs.discard(job)
                if answer is _CALL_FAILED:
                    direct.outstanding -= 1
                    for address, known in list(self._actors.items()):
                        if known is direct:
                            del self._actors[address]  # a worker still listed gets a new one
                    stranded = self._strand()
                elif direct.capacity and (following := self._next_waiting()) is not None:
                    direct.sent += 1  # its thread goes on to the next job
                    self._direct_jobs.add(following)
                else:
                    direct.outstanding -= 1
            if answer is _CALL_FAILED:
                self._drop_connections(job.loop, direct.address)
                self._resubmit([job, *stranded])
            elif isinstance(answer, self._worker_side.Raised):
                job.settle((False, answer.exception))  # the job's own error: not redone
            else:
                job.settle((True, answer))
            if following is not None and following.loop is not job.loop:
                self._start_call(direct, following)  # another run's loop: its own call
                following = None
            job = following

    async def _call(self, direct: _Direct, job: _Job) -> Any:
        """One call of the actor's ``evaluate`` for ``job``, over a connection of the job's
        event loop to the actor's worker (kept for the next call): straight from the run's
        loop, with neither the Dask client's thread nor the scheduler in between.

        The message is the one Dask's own :class:`distributed.Actor` handle sends (the
        worker's ``actor_execute`` handler; tested against the installed Dask). Should a Dask
        release change it, every call fails and is redone as a task: slower, still correct.

        Raises:
            Exception: The call failed (no connection, the worker died or answered with an
                error of its own): not the job's failure.
        """
        distributed = _import_distributed()
        key = (job.loop, direct.address)
        idle = self._connections.setdefault(key, [])
        if idle:
            comm = idle.pop()
        else:
            self._forget_closed_loops()
            comm = await distributed.comm.connect(direct.address, timeout=CONNECT_SECONDS,
                                                  **self._connection_args)  # fmt: skip
        try:
            await comm.write({"op": "actor_execute", "actor": direct.actor.key,
                              "function": "evaluate", "kwargs": {}, "reply": True,
                              "args": self._worker_side.pack(job.function, job.domain,
                                                             job.args)})  # fmt: skip
            reply = await comm.read()
        except BaseException:
            comm.abort()  # in an unknown state (half a message sent or read)
            raise
        if self._client is None:  # closed meanwhile
            comm.abort()
        else:
            idle.append(comm)
        if not isinstance(reply, dict) or reply.get("status") != "OK":
            error = reply.get("exception") if isinstance(reply, dict) else None
            raise error if isinstance(error, Exception) else RuntimeError(repr(reply)[:200])
        return self._worker_side.unpack(reply["result"])

    def _forget_closed_loops(self) -> None:
        """Closes the idle connections of event loops that are closed (a run ended; the
        backend may serve the next one)."""
        for loop, address in [key for key in list(self._connections) if key[0].is_closed()]:
            self._drop_connections(loop, address)

    def _drop_connections(self, loop: asyncio.AbstractEventLoop, address: str) -> None:
        """Closes this loop's idle connections to ``address`` (after a call there failed)."""
        for comm in self._connections.pop((loop, address), []):
            with contextlib.suppress(Exception):
                comm.abort()

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
            unregister_plugins(client, [self._guard, f"dei-domain-{self._token}", *names],
                               timeout=5 if wait else 1)  # fmt: skip
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


@attrs.define(eq=False)
class _Direct:
    """A worker's :class:`~dei_framework.evaluation.dask_worker.Evaluations` actor.

    Attributes:
        actor: Dask's handle on it.
        future: Its task (holding it keeps the actor alive).
        address: Its worker's.
        outstanding: Jobs sent to it and not answered yet.
        sent: Jobs sent to it.
        order: Its place among actors with as many of both (this backend's own).
        capacity: Jobs it takes at once: its worker's threads (0: its worker left).
    """

    actor: Any
    future: Any
    address: str = ""
    outstanding: int = 0
    sent: int = 0
    order: int = 0
    capacity: int = 1


def _least_busy(direct: _Direct) -> tuple[int, int, int]:
    return direct.outstanding, direct.sent, direct.order


@attrs.frozen(eq=False)
class _Job:
    """One job of :meth:`DaskBackend.run` and the run's loop that waits on it."""

    function: Callable[..., Any]
    domain: Any  # the domain's ResidentRef
    args: tuple[Any, ...]
    lane: str
    loop: asyncio.AbstractEventLoop
    waiter: asyncio.Future

    def settle(self, outcome: tuple[bool, Any]) -> None:
        """Hands ``outcome`` (succeeded, result or exception) to the waiter (from any thread)."""
        if _running_loop() is self.loop:  # a direct call, on the loop that waits: no hop
            _settle(self.waiter, outcome)
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            self.loop.call_soon_threadsafe(_settle, self.waiter, outcome)


def _on_its_loop(loop: asyncio.AbstractEventLoop, action: Callable[[], Any]) -> None:
    """Calls ``action`` in the thread of ``loop`` when that loop runs in another thread, at
    once otherwise (its loop is this thread's, or stopped)."""
    with contextlib.suppress(Exception):  # a closed loop, or what it held is gone already
        if loop.is_running() and _running_loop() is not loop:
            loop.call_soon_threadsafe(action)
        else:
            action()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running in this thread, if any."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


#: What :meth:`DaskBackend._call_actor` meets when the call itself failed.
_CALL_FAILED = object()


def _settle(waiter: asyncio.Future, outcome: tuple[bool, Any]) -> None:
    if waiter.done():  # cancelled meanwhile
        return
    succeeded, value = outcome
    if succeeded:
        waiter.set_result(value)
    else:
        waiter.set_exception(value)


def _quiet_cut_off_calls(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The exception handler of the Dask client's event loop: a call of the client's thread
    whose outcome nobody took because the client closed under it (a task's result fetched in
    steps, a bounded plugin call: the run was stopped) ends with a cancellation or a closed
    connection, which asyncio would print with a traceback when the call is collected. Those
    are dropped; anything else goes to asyncio's default handler."""
    distributed = _import_distributed()
    cut_off = (asyncio.CancelledError, distributed.client.FutureCancelledError,
               distributed.comm.CommClosedError)  # fmt: skip
    if "never retrieved" in str(context.get("message")) and isinstance(
        context.get("exception"), cut_off
    ):
        return
    loop.default_exception_handler(context)


def _runs(name: str, found: str | None, expected: str | None) -> str:
    """What a worker runs of distribution ``name``, against the run's: ``dei-framework 9.9.9
    (this run: 0.1.0)``, or ``without dei-framework (this run: 0.1.0)``."""
    runs = f"{name} {found}" if found is not None else f"without {name}"
    return f"{runs} (this run: {expected})"


def _short(exc: BaseException) -> str:
    """One line naming an exception a worker raised. One the worker could not send as itself
    (raised before the job was unpickled there) arrives as a plain ``Exception`` holding its
    ``repr``: that is shown alone."""
    text = str(exc).strip().splitlines()
    if not text:
        return type(exc).__name__
    return text[0] if type(exc) is Exception else f"{type(exc).__name__}: {text[0]}"


def make_backend(domain: Any, options: EvaluatorOptions) -> DaskBackend:
    """The ``dask`` backend's factory (registered by the core's own plugin)."""
    return DaskBackend(domain, address=options.address, workers=options.workers,
                       tls=options.options)  # fmt: skip
