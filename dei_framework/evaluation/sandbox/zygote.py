"""The warm process of a sandbox: it imports the domain once, then forks one child per
candidate (``python -m dei_framework.evaluation.sandbox.zygote``, started by
:class:`~dei_framework.evaluation.sandbox.client.SandboxProcess`, under bubblewrap for
``isolated``).

Forking a process that has the domain imported costs a fraction of a millisecond; starting an
interpreter per candidate would cost tens. The zygote itself never runs a candidate's code:
each child does, in its own process group, in a fresh scratch directory, with its standard
input on ``/dev/null``, its standard output and error on a pipe the zygote reads (up to the
output limit; the rest is read and dropped), and its address space and file sizes capped; the
zygote waits for its reply with a deadline, counts its processes under a process limit, and
kills all of them (:class:`~dei_framework.evaluation.sandbox.processes.Family`, daemons that
left the group too) when the deadline passes or the reply is in, so a loop in C code, a
program that blocks every signal or a fork bomb is stopped all the same.

Frames in (see :mod:`~dei_framework.evaluation.sandbox.wire`): ``("hello", domain_pickle, limits)``
once, then ``("set", id, pickle)`` and ``("job", text, seed, set_id, required, known)``.
Frames out: ``("ready", pid)``, ``("need", set_id)``, and per job
``("done", reply, seconds, output, truncated)`` or
``("stopped", reason, seconds, parsed, output, truncated)`` (``output``: the bytes kept of the
child's standard output and error; ``truncated``: whether it wrote more).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import mmap
import os
import pickle
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
from collections import OrderedDict
from typing import Any

import attrs

from dei_framework.evaluation.sandbox import wire
from dei_framework.evaluation.sandbox.limits import (
    Limits,
    file_message,
    processes_message,
    signal_message,
    timeout_message,
)
from dei_framework.evaluation.sandbox.pipes import MAX_REPLY, Output, drain, exit_watch, reaped
from dei_framework.evaluation.sandbox.processes import (
    WATCH_SECONDS,
    Family,
    become_subreaper,
    die_with_parent,
    last_pid,
)

#: Opponent sets the zygote keeps (most recently used last), as an evaluation worker does.
KEPT_SETS = 16
#: Names the client's pid, so that a zygote whose client died while it started ends at once.
PARENT_VARIABLE = "DEI_SANDBOX_PARENT"
#: Longest text a spare parses ahead of its job (:meth:`Zygote._rehearse`).
REHEARSAL_CHARS = 64 * 1024


def _address_space() -> int:
    """This process's mapped address space in bytes (what RLIMIT_AS counts)."""
    with open("/proc/self/statm", "rb") as file:
        return int(file.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


@attrs.define
class _Child:
    """A forked child waiting for its candidate (the spare), or running it."""

    pid: int
    job: int  #: the write end of the pipe the child reads its job from
    reply: int  #: the read end of the pipe it answers on
    exited: int  #: readable once it has exited (see pipes.exit_watch)
    output: int  #: the read end of the pipe its standard output and error go to
    scratch: str
    sets: frozenset[str]  #: the opponent sets it was forked with
    #: One byte shared with the child, set once its text has parsed: read only when the child
    #: is stopped, so that the zygote is not woken for it.
    parsed: mmap.mmap = attrs.field(repr=False)
    #: :func:`~dei_framework.evaluation.sandbox.processes.last_pid` when its job came in.
    since: int = 0

    def family(self) -> Family:
        return Family(self.pid, self.since)


class Zygote:
    """The zygote's state: the domain, the opponent sets it holds, its limits, and the next
    candidate's child, forked ahead of time.

    Forking and ending a process cost a few milliseconds: the spare is forked, and the last
    child reaped, after the reply has gone out (:meth:`tidy`), so a candidate's latency holds
    neither.
    """

    def __init__(
        self, domain: Any, limits: Limits, scratch_root: str, channel: tuple[int, ...] = ()
    ) -> None:
        self.domain = domain
        #: The client's pipes, closed in every child: a program must not reach the client.
        self.channel = channel
        self.limits = limits
        self.scratch_root = scratch_root
        self.pid = os.getpid()
        self.sets: OrderedDict[str, list[Any]] = OrderedDict()
        #: Whether /proc tells this process's descendants apart (see processes.Family).
        self.watch = os.path.isdir("/proc/self") and become_subreaper()
        self.spare: _Child | None = None
        self._done: list[_Child] = []
        #: The last text whose child parsed it and answered: the next spare parses it again
        #: while it waits (see :meth:`_rehearse`).
        self.rehearsal: str | None = None

    def keep(self, set_id: str, data: bytes) -> None:
        self.sets[set_id] = pickle.loads(data)
        while len(self.sets) > KEPT_SETS:
            self.sets.popitem(last=False)

    def run(self, text: str, seed: int, set_id: str, required: Any, known: Any) -> tuple[Any, ...]:
        """One candidate, in a forked child; the frame that answers it."""
        self.sets.move_to_end(set_id)
        child, self.spare = self.spare, None
        if child is None or set_id not in child.sets:  # forked before this round's set came
            if child is not None:
                self._done.append(child)
            child = self._fork()
        self._done.append(child)
        child.since = last_pid() if self.watch else 0
        started = time.perf_counter()
        try:
            wire.write_frame(child.job, wire.dumps((text, seed, set_id, required, known)))
        except OSError:  # the spare is gone (the OOM killer, ...): the candidate gets another
            child = self._fork()
            self._done.append(child)
            child.since = last_pid() if self.watch else 0
            started = time.perf_counter()
            wire.write_frame(child.job, wire.dumps((text, seed, set_id, required, known)))
        # The child's group (whatever the program started in it) is killed by :meth:`tidy`,
        # right after the reply has gone out, not before: a signal to a group is a system
        # call the candidate's latency need not hold.
        frame = self._wait(child, started)
        if frame[0] == "done" and child.parsed[0] == 1 and len(text) <= REHEARSAL_CHARS:
            self.rehearsal = text
        return frame

    def tidy(self) -> None:
        """Reaps the children that are done and forks the next candidate's (between jobs)."""
        for child in self._done:
            with contextlib.suppress(OSError):
                os.killpg(child.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child.pid, 0)
            if self.watch:  # and what left the group (a daemon), adopted by this process
                child.family().kill()
            for fd in (child.job, child.reply, child.exited, child.output):
                with contextlib.suppress(OSError):
                    os.close(fd)
            shutil.rmtree(child.scratch, ignore_errors=True)
            child.parsed.close()
        self._done.clear()
        if self.spare is None:
            self.spare = self._fork()

    def kill_children(self) -> None:
        """Kills the process group of every child not yet reaped (when the zygote ends)."""
        for child in (*self._done, *([self.spare] if self.spare else [])):
            with contextlib.suppress(OSError):
                os.killpg(child.pid, signal.SIGKILL)
            if self.watch:
                child.family().kill()

    def _fork(self) -> _Child:
        scratch = tempfile.mkdtemp(prefix="candidate-", dir=self.scratch_root)
        job_read, job_write = os.pipe()
        reply_read, reply_write = os.pipe()
        output_read, output_write = os.pipe()
        # Objects the zygote holds stay out of the child's collections: a collection would
        # write to every page they are on, and copying those pages costs more than most
        # evaluations.
        parsed = mmap.mmap(-1, 1)  # anonymous and shared: the child's writes are seen here
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(job_write)
            os.close(reply_read)
            os.close(output_read)
            self._child(job_read, reply_write, output_write, scratch, parsed)
        os.close(job_read)
        os.close(reply_write)
        os.close(output_write)
        os.set_blocking(output_read, False)
        with contextlib.suppress(OSError):  # the child may have done it already
            os.setpgid(pid, pid)
        os.set_blocking(reply_read, False)
        return _Child(
            pid=pid,
            job=job_write,
            reply=reply_read,
            exited=exit_watch(pid),
            output=output_read,
            scratch=scratch,
            sets=frozenset(self.sets),
            parsed=parsed,
        )

    def _child(
        self, job_read: int, write_end: int, output: int, scratch: str, parsed: mmap.mmap
    ) -> None:
        status = 0
        try:
            for fd in self.channel:
                os.close(fd)
            os.setpgid(0, 0)
            die_with_parent()
            if os.getppid() != self.pid:  # the zygote died before the line above took effect
                os._exit(0)
            os.chdir(scratch)
            os.environ["HOME"] = os.environ["TMPDIR"] = os.environ["PWD"] = scratch
            tempfile.tempdir = scratch
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            self._rehearse()
            for fd in (1, 2):  # the candidate's, not the rehearsal's
                os.dup2(output, fd)
            os.close(output)
            self._set_limits()
            try:
                text, seed, set_id, required, known = pickle.loads(wire.read_frame(job_read))
            except EOFError:  # a spare the zygote let go of
                os._exit(0)
            os.close(job_read)
            opponents = self.sets[set_id]
            try:
                reply = self._answer(self._evaluate(text, seed, opponents, required, known, parsed))
            except MemoryError:
                reply = ("memory",)
            for stream in (sys.stdout, sys.stderr):  # what it printed, before the reply
                with contextlib.suppress(BaseException):
                    stream.flush()
            payload = wire.dumps(reply)
            if len(payload) > MAX_REPLY:
                payload = wire.dumps(("error", f"a result of {len(payload)} bytes"))
            wire.write_frame(write_end, payload)
        except MemoryError:
            with contextlib.suppress(BaseException):
                wire.write_frame(write_end, wire.dumps(("memory",)))
        except BaseException as exc:  # noqa: BLE001 - SystemExit and all: the child ends here
            file = isinstance(exc, OSError) and exc.errno == errno.EFBIG
            with contextlib.suppress(BaseException):
                reply = ("file",) if file else ("error", f"{type(exc).__name__}: {exc}")
                wire.write_frame(write_end, wire.dumps(reply))
            status = 1
        finally:
            os._exit(status)  # no atexit handler, no flush of the zygote's buffers

    def _set_limits(self) -> None:
        """Caps the child's address space and file sizes, and turns off core dumps.

        Set while the spare waits, so that the candidate's latency does not hold it; the job's
        few bytes fit in it. Python ignores ``SIGXFSZ``; the child takes its default back, so
        that a write past the file limit ends the candidate there, whoever catches exceptions.
        """
        if self.limits.memory_mb is not None:
            cap = _address_space() + self.limits.memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        if self.limits.file_mb is not None:
            cap = self.limits.file_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
            signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def _answer(self, outcome: Any) -> tuple[Any, ...]:
        """The reply for ``outcome``. The domain turns a program's exception into a message;
        under a limit, a ``MemoryError`` or ``EFBIG`` is the limit's doing and says so."""
        error = outcome.error or ""
        if self.limits.memory_mb is not None and error.startswith("evaluation failed: MemoryError"):
            return ("memory",)
        if self.limits.file_mb is not None and f"[Errno {errno.EFBIG}]" in error:
            return ("file",)
        return _reply(outcome)

    def _rehearse(self) -> None:
        """Parses the last text that parsed, in a spare waiting for its job, and forgets it.

        A forked child's first parse is several times slower than the zygote's would be: every
        page it writes (the parser's allocations, reference counts) is copied first. Parsing
        a recent text ahead copies most of those pages before the candidate arrives. Parsing
        runs no part of the text (the domain contract; the evaluation worker parses every
        text again outside the sandbox), so this is as safe as the worker's own parse, and
        the candidate then sees a process as an unsandboxed worker would: one that has
        parsed texts before.
        """
        if self.rehearsal is None:
            return
        with contextlib.suppress(Exception):
            self.domain.parse(self.rehearsal)

    def _evaluate(
        self,
        text: str,
        seed: int,
        opponents: list[Any],
        required: Any,
        known: Any,
        parsed: mmap.mmap,
    ) -> Any:
        """What :func:`~dei_framework.evaluation.local.evaluate` gives, marking ``parsed`` once the
        text has parsed: the zygote then knows there is a program even when the evaluation
        never ends."""
        from dei_framework.contract.errors import InvalidProgram
        from dei_framework.evaluation.outcome import Outcome, evaluate_parsed

        started = time.perf_counter()
        try:
            program = self.domain.parse(text)
        except InvalidProgram as exc:
            return Outcome(error=str(exc), seconds=time.perf_counter() - started)
        parsed[0] = 1
        return evaluate_parsed(
            self.domain, program, opponents, seed, required, known, started=started
        )

    def _wait(self, child: _Child, started: float) -> tuple[Any, ...]:
        """Reads the child's reply (and its output) until the reply is complete, the child
        exits, its deadline passes, it sends too much or it has too many processes."""
        limits = self.limits
        deadline = None if limits.timeout is None else started + limits.timeout
        output = Output(cap=limits.output_kb * 1024)
        chunks: list[bytes] = []
        size = 0
        # The child's exit is watched directly, not through the pipe's end: a program may
        # leave a process behind that holds the pipe open.
        watched = [child.reply, child.exited, child.output]
        counting = self.watch and limits.processes is not None
        counted, family = started, child.family()
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.perf_counter())
            if counting:
                wait = WATCH_SECONDS if wait is None else min(wait, WATCH_SECONDS)
            ready, _, _ = select.select(watched, [], [], wait)
            if child.output in ready and output.drain(child.output):
                watched.remove(child.output)  # every writer closed it
            if child.reply in ready:
                read, closed = drain(child.reply, chunks)
                size += read
                if closed:
                    watched.remove(child.reply)
                frame = b"".join(chunks)
                if len(frame) >= 4 and int.from_bytes(frame[:4], "big") == len(frame) - 4:
                    output.drain(child.output)
                    return ("done", frame[4:], time.perf_counter() - started, *output.fields())
            now = time.perf_counter()
            if deadline is not None and now >= deadline:  # the whole group, whatever it does
                return _stopped(timeout_message(limits.timeout), started, child, output)
            if size > MAX_REPLY + 8:
                reason = f"evaluation failed: the program sent more than {MAX_REPLY} bytes"
                return _stopped(reason, started, child, output)
            if counting and now - counted >= WATCH_SECONDS:
                counted = now
                if family.count() > limits.processes:
                    family.kill()  # now: a fork bomb does not wait for the reply
                    return _stopped(processes_message(limits.processes), started, child, output)
            if child.exited in ready and reaped(child.pid):
                break
        drain(child.reply, chunks)
        output.drain(child.output)
        frame = b"".join(chunks)
        seconds = time.perf_counter() - started
        if len(frame) >= 4 and int.from_bytes(frame[:4], "big") == len(frame) - 4:
            return ("done", frame[4:], seconds, *output.fields())
        reason = self._exit_reason(child.pid)
        return ("stopped", reason, seconds, child.parsed[0] == 1, *output.fields())

    def _exit_reason(self, pid: int) -> str:
        """Why a child that exited without answering did (it is not reaped yet)."""
        status = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if status is not None and status.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
            if status.si_status == signal.SIGXFSZ and self.limits.file_mb is not None:
                return file_message(self.limits.file_mb, "SIGXFSZ")
            return signal_message(status.si_status)
        code = status.si_status if status is not None else -1
        return f"evaluation failed: the program exited with status {code} before answering"


def _stopped(reason: str, started: float, child: _Child, output: Output) -> tuple[Any, ...]:
    seconds = time.perf_counter() - started
    output.drain(child.output)
    return ("stopped", reason, seconds, child.parsed[0] == 1, *output.fields())


def _reply(outcome: Any) -> tuple[Any, ...]:
    """A child's answer as plain data (the parent re-parses the text for the program)."""
    evaluation = outcome.evaluation
    if evaluation is None:
        return (
            "invalid",
            outcome.program is not None,
            outcome.error,
            outcome.seconds,
            outcome.matches,
        )
    return (
        "valid",
        float(evaluation.fitness),
        {str(key): float(value) for key, value in evaluation.descriptor.items()},
        dict(evaluation.info),
        outcome.seconds,
        outcome.matches,
    )


def main() -> None:
    """Serves the frames of one client on this process's standard input and output."""
    # The protocol keeps the original descriptors; the standard streams go to /dev/null, so a
    # domain that prints while importing cannot corrupt a frame.
    inbound, outbound = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    for number in (signal.SIGINT, signal.SIGTERM):  # the client decides when this ends
        signal.signal(number, signal.SIG_IGN)
    die_with_parent()
    expected = os.environ.pop(PARENT_VARIABLE, "")
    if expected and os.getppid() != int(expected):  # the client died before prctl took effect
        return
    try:
        kind, domain_data, limits_data = pickle.loads(wire.read_frame(inbound))
        assert kind == "hello"
        limits = Limits(**limits_data)
        scratch_root = tempfile.mkdtemp(prefix="dei-sandbox-")
        zygote = Zygote(pickle.loads(domain_data), limits, scratch_root, (inbound, outbound))
        import dei_framework.evaluation.outcome  # noqa: F401 - imported before the first fork, once
    except EOFError:
        return
    wire.write_frame(outbound, wire.dumps(("ready", os.getpid())))
    try:
        while True:
            try:
                frame = pickle.loads(wire.read_frame(inbound))
            except EOFError:
                return
            if frame[0] == "set":
                zygote.keep(frame[1], frame[2])
                continue
            _, text, seed, set_id, required, known = frame
            if set_id not in zygote.sets:
                wire.write_frame(outbound, wire.dumps(("need", set_id)))
                continue
            wire.write_frame(outbound, wire.dumps(zygote.run(text, seed, set_id, required, known)))
            zygote.tidy()  # while the client reads the reply
    finally:
        zygote.kill_children()  # the client is gone: so is whatever a program left running
        shutil.rmtree(scratch_root, ignore_errors=True)


if __name__ == "__main__":
    main()
