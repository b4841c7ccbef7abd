"""The warm process of a sandbox: it imports the domain once, then forks one child per
candidate (``python -m dei_framework.sandbox.zygote``, started by
:class:`~dei_framework.sandbox.client.SandboxProcess`, under bubblewrap for ``isolated``).

Forking a process that has the domain imported costs a fraction of a millisecond; starting an
interpreter per candidate would cost tens. The zygote itself never runs a candidate's code:
each child does, in its own process group, in a fresh scratch directory, with its standard
streams on ``/dev/null`` and its address space capped; the zygote waits for its reply with a
deadline and kills the child's whole group when the deadline passes, so a loop in C code or a
program that blocks every signal is stopped all the same.

Frames in (see :mod:`~dei_framework.sandbox.wire`): ``("hello", domain_pickle, limits)``
once, then ``("set", id, pickle)`` and ``("job", text, seed, set_id, required, known)``.
Frames out: ``("ready", pid)``, ``("need", set_id)``, and per job ``("done", reply, seconds)``
or ``("stopped", reason, seconds, parsed)``.
"""

from __future__ import annotations

import contextlib
import ctypes
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

from dei_framework.sandbox import wire
from dei_framework.sandbox.limits import Limits, signal_message, timeout_message

#: Opponent sets the zygote keeps (most recently used last), as an evaluation worker does.
KEPT_SETS = 16
#: Names the client's pid, so that a zygote whose client died while it started ends at once.
PARENT_VARIABLE = "DEI_SANDBOX_PARENT"
#: What a child writes first once the text has parsed.
PARSED = b"P"
#: Largest reply a child may send (a bigger one is a hostile child's).
MAX_REPLY = 16 * 1024 * 1024


def _pdeathsig_setter() -> Any:
    """A function making the calling process receive SIGKILL when its parent dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG


def _address_space() -> int:
    """This process's mapped address space in bytes (what RLIMIT_AS counts)."""
    with open("/proc/self/statm", "rb") as file:
        return int(file.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


class Zygote:
    """The zygote's state: the domain, the opponent sets it holds, its limits."""

    def __init__(self, domain: Any, limits: Limits, scratch_root: str) -> None:
        self.domain = domain
        self.limits = limits
        self.scratch_root = scratch_root
        self.sets: OrderedDict[str, list[Any]] = OrderedDict()
        self.die_with_parent = _pdeathsig_setter()
        self.measures_memory = limits.memory_mb is not None and os.path.exists("/proc/self/statm")

    def keep(self, set_id: str, data: bytes) -> None:
        self.sets[set_id] = pickle.loads(data)
        while len(self.sets) > KEPT_SETS:
            self.sets.popitem(last=False)

    def run(self, text: str, seed: int, set_id: str, required: Any, known: Any
            ) -> tuple[Any, ...]:  # fmt: skip
        """One candidate, in a forked child; the frame that answers it."""
        opponents = self.sets[set_id]
        self.sets.move_to_end(set_id)
        scratch = tempfile.mkdtemp(prefix="candidate-", dir=self.scratch_root)
        base = _address_space() if self.measures_memory else 0
        read_end, write_end = os.pipe()
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_end)
            self._child(text, seed, opponents, required, known, scratch, base, write_end)
        os.close(write_end)
        with contextlib.suppress(OSError):  # the child may have done it (or died) already
            os.setpgid(pid, pid)
        try:
            return self._wait(pid, read_end, started)
        finally:
            os.close(read_end)
            with contextlib.suppress(OSError):  # whatever the program started in its group
                os.killpg(pid, signal.SIGKILL)
            shutil.rmtree(scratch, ignore_errors=True)

    def _child(self, text: str, seed: int, opponents: list[Any], required: Any, known: Any,
               scratch: str, base: int, write_end: int) -> None:  # fmt: skip
        status = 0
        try:
            os.setpgid(0, 0)
            if self.die_with_parent is not None:
                self.die_with_parent()
            os.chdir(scratch)
            os.environ["HOME"] = os.environ["TMPDIR"] = scratch
            tempfile.tempdir = scratch
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            if self.limits.memory_mb is not None:
                cap = base + self.limits.memory_mb * 1024 * 1024
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            try:
                outcome = self._evaluate(text, seed, opponents, required, known, write_end)
            except MemoryError:
                reply: tuple[Any, ...] = ("memory",)
            else:
                # The domain turns a program's exception into a message; under a memory limit a
                # MemoryError is the limit's doing and says so.
                memory = (self.limits.memory_mb is not None and outcome.error is not None
                          and outcome.error.startswith("evaluation failed: MemoryError"))
                reply = ("memory",) if memory else _reply(outcome)
            payload = wire.dumps(reply)
            if len(payload) > MAX_REPLY:
                payload = wire.dumps(("error", f"a result of {len(payload)} bytes"))
            wire.write_frame(write_end, payload)
        except MemoryError:
            with contextlib.suppress(BaseException):
                wire.write_frame(write_end, wire.dumps(("memory",)))
        except BaseException as exc:  # noqa: BLE001 - SystemExit and all: the child ends here
            with contextlib.suppress(BaseException):
                wire.write_frame(write_end, wire.dumps(("error", f"{type(exc).__name__}: {exc}")))
            status = 1
        finally:
            os._exit(status)  # no atexit handler, no flush of the zygote's buffers

    def _evaluate(self, text: str, seed: int, opponents: list[Any], required: Any, known: Any,
                  write_end: int) -> Any:  # fmt: skip
        """What :func:`~dei_framework.evaluation.evaluate` gives, telling the zygote (one
        byte, :data:`PARSED`) when the text has parsed: the parent then knows the program
        even when the evaluation never ends."""
        from dei_framework.errors import InvalidProgram
        from dei_framework.evaluation import Outcome, _evaluate_parsed

        started = time.perf_counter()
        try:
            program = self.domain.parse(text)
        except InvalidProgram as exc:
            return Outcome(error=str(exc), seconds=time.perf_counter() - started)
        os.write(write_end, PARSED)
        return _evaluate_parsed(self.domain, program, opponents, seed, required, known,
                                started=started)  # fmt: skip

    def _wait(self, pid: int, read_end: int, started: float) -> tuple[Any, ...]:
        """Reads the child's reply until it exits, its deadline passes or it sends too much."""
        deadline = None if self.limits.timeout is None else started + self.limits.timeout
        os.set_blocking(read_end, False)
        # The child's exit is watched directly (a pidfd), not through the pipe's end: a program
        # may leave a process behind that holds the pipe open.
        exited = _exit_watch(pid)
        chunks: list[bytes] = []
        size = 0
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.perf_counter())
            ready, _, _ = select.select([read_end, exited], [], [], wait)
            if not ready:  # the deadline: the whole group, whatever it blocks or ignores
                return self._stop(pid, exited, timeout_message(self.limits.timeout), started,
                                  chunks)  # fmt: skip
            size += _drain(read_end, chunks)
            if size > MAX_REPLY + 8:
                return self._stop(pid, exited, "evaluation failed: the program sent more "
                                  f"than {MAX_REPLY} bytes", started, chunks)  # fmt: skip
            if exited in ready or _reaped(pid, exited):
                break
        _, exit_status = os.waitpid(pid, 0)
        os.close(exited)
        size += _drain(read_end, chunks)
        seconds = time.perf_counter() - started
        data = b"".join(chunks)
        parsed = data.startswith(PARSED)
        data = data[len(PARSED):] if parsed else data
        if len(data) >= 4 and int.from_bytes(data[:4], "big") == len(data) - 4:
            return ("done", data[4:], seconds)
        if os.WIFSIGNALED(exit_status):
            return ("stopped", signal_message(os.WTERMSIG(exit_status)), seconds, parsed)
        code = os.WEXITSTATUS(exit_status) if os.WIFEXITED(exit_status) else -1
        return ("stopped", f"evaluation failed: the program exited with status {code} before "
                "answering", seconds, parsed)  # fmt: skip

    @staticmethod
    def _stop(pid: int, exited: int, reason: str, started: float, chunks: list[bytes]
              ) -> tuple[Any, ...]:  # fmt: skip
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(exited)
        parsed = bool(chunks) and chunks[0].startswith(PARSED)
        return ("stopped", reason, time.perf_counter() - started, parsed)


def _exit_watch(pid: int) -> int:
    """A descriptor that becomes readable when ``pid`` exits (a pidfd; a pipe that never does
    where the system has none, and :func:`_reaped` polls instead)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        read_end, write_end = os.pipe()
        os.close(write_end)  # readable at once: select returns, _reaped decides
        return read_end


def _reaped(pid: int, exited: int) -> bool:
    """Whether the child has exited, where no pidfd tells (polled every few milliseconds)."""
    if not hasattr(os, "pidfd_open"):
        time.sleep(0.005)
        waited, _ = os.waitpid(pid, os.WNOHANG)
        return waited != 0
    return False


def _drain(fd: int, chunks: list[bytes]) -> int:
    """Reads what ``fd`` holds now into ``chunks``; returns how many bytes."""
    size = 0
    while True:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            return size
        if not chunk:
            return size
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REPLY + 8:
            return size


def _reply(outcome: Any) -> tuple[Any, ...]:
    """A child's answer as plain data (the parent re-parses the text for the program)."""
    evaluation = outcome.evaluation
    if evaluation is None:
        return ("invalid", outcome.program is not None, outcome.error, outcome.seconds,
                outcome.matches)  # fmt: skip
    return ("valid", float(evaluation.fitness),
            {str(key): float(value) for key, value in evaluation.descriptor.items()},
            dict(evaluation.info), outcome.seconds, outcome.matches)  # fmt: skip


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
    die_with_parent = _pdeathsig_setter()
    if die_with_parent is not None:
        die_with_parent()
    expected = os.environ.pop(PARENT_VARIABLE, "")
    if expected and os.getppid() != int(expected):  # the client died before prctl took effect
        return
    try:
        kind, domain_data, limits_data = pickle.loads(wire.read_frame(inbound))
        assert kind == "hello"
        limits = Limits(**limits_data)
        scratch_root = tempfile.mkdtemp(prefix="dei-sandbox-")
        zygote = Zygote(pickle.loads(domain_data), limits, scratch_root)
        import dei_framework.evaluation  # noqa: F401 - imported before the first fork, once
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
            wire.write_frame(outbound, wire.dumps(zygote.run(text, seed, set_id, required,
                                                             known)))  # fmt: skip
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)


if __name__ == "__main__":
    main()
