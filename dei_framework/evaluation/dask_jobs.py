"""How a job of the ``dask`` backend travels: straight to a worker's actor, or as a task.

A node waits on its candidates' jobs, so those go straight to the worker
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

Faults: a worker that dies mid-job has its job redone on another worker: a direct call that
fails (its worker died, the connection broke) forgets that worker's actor and sends the job
again as a task, which the scheduler redoes elsewhere in turn when its worker dies
(``distributed.scheduler.allowed-failures`` times; after that the job's candidates are invalid,
as with a local worker that died). What the evaluated function raised is relayed unchanged and
not redone.

:class:`JobPaths` is a part of :class:`~dei_framework.evaluation.dask_backend.DaskBackend` (one
of its base classes, never used alone): the backend's constructor sets the state used here
(the client, the actors and their lock, the waiting jobs, the connections) and the backend
says what a job meets when the scheduler is lost or the backend closed (``_lost``,
``_closed``).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from dei_framework.contract.backend import WorkerDied
from dei_framework.evaluation.dask_options import CONNECT_SECONDS, _import_distributed

#: Task priority of the generality lane: below other tasks of the cluster.
GENERALITY_PRIORITY = -10
#: Seconds between checks, while a task's result is fetched, that the backend is still open.
FETCH_CHECK_SECONDS = 1.0


class JobPaths:
    """The backend's job paths (see the module docstring)."""

    async def run(self, function: Callable[..., Any], *args: Any, lane: str = "candidates") -> Any:
        client = self._client
        if client is None:
            raise self._closed()
        worker_side = self._worker_side
        carried = [arg.name for arg in args if isinstance(arg, worker_side.ResidentRef)]
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        job = _Job(
            function=function, domain=self._domain, args=args, lane=lane, loop=loop, waiter=waiter
        )
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
                future = client.submit(
                    self._worker_side.Evaluations,
                    actor=True,
                    workers=[address],
                    allow_other_workers=False,
                )
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
            direct = _Direct(
                actor=actor,
                future=future,
                address=address,
                order=order,
                capacity=self._threads.get(address, 1),
            )
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
            free = [
                direct for direct in self._actors.values() if direct.outstanding < direct.capacity
            ]
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
            future = client.submit(
                self._worker_side.on_worker,
                job.function,
                job.domain,
                *job.args,
                pure=False,
                priority=priority,
            )
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
            comm = await distributed.comm.connect(
                direct.address, timeout=CONNECT_SECONDS, **self._connection_args
            )
        try:
            await comm.write(
                {
                    "op": "actor_execute",
                    "actor": direct.actor.key,
                    "function": "evaluate",
                    "kwargs": {},
                    "reply": True,
                    "args": self._worker_side.pack(job.function, job.domain, job.args),
                }
            )
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
