"""The warm process of a sandbox: it imports the domain once, then forks one child per
candidate (``python -m dei_framework.sandbox.zygote``, started by
:class:`~dei_framework.sandbox.client.SandboxProcess`, under bubblewrap for ``isolated``).

Forking a process that has the domain imported costs a fraction of a millisecond; starting an
interpreter per candidate would cost tens. The zygote itself never runs a candidate's code:
each child does, in its own process group, in a fresh scratch directory, with its standard
streams on ``/dev/null`` and its address space capped.

Each child is forked *ahead of time*, and its two pipes are handed to the client over a Unix
socket (``SCM_RIGHTS``): the client writes the candidate straight to the child and reads the
reply straight from it, so a candidate's latency holds two process wake-ups, not four, and
the zygote forks the next child and reaps the last one while the client works. The client
keeps the clock; when a candidate's deadline passes (or the child exits without a full
reply) it asks the zygote to stop it, and the zygote kills the child's whole process group,
so a loop in C code or a program that blocks every signal is stopped all the same.

Frames in, on standard input (see :mod:`~dei_framework.sandbox.wire`): ``("hello",
domain_pickle, limits)`` once, then ``("set", id, pickle)``, ``("finished", n)``, ``("stop",
n, cause)`` and ``("renew", n, set_id)``. Frames out, on standard output: ``("ready", pid)``,
``("need", set_id)`` and ``("stopped", n, reason, parsed)``; on the offer socket (its
descriptor in :data:`OFFERS_VARIABLE`): ``("spare", n, set_ids)`` with the child's job pipe,
reply pipe and exit watch.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import mmap
import os
import pickle
import resource
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections import OrderedDict
from typing import Any

import attrs

from dei_framework.sandbox import wire
from dei_framework.sandbox.limits import Limits, signal_message, timeout_message

#: Opponent sets the zygote keeps (most recently used last), as an evaluation worker does.
KEPT_SETS = 16
#: Names the client's pid, so that a zygote whose client died while it started ends at once.
PARENT_VARIABLE = "DEI_SANDBOX_PARENT"
#: Names the descriptor of the socket the zygote hands its children's pipes over.
OFFERS_VARIABLE = "DEI_SANDBOX_OFFERS"
#: Largest reply a child may send (a bigger one is a hostile child's).
MAX_REPLY = 16 * 1024 * 1024
#: Why the client asks for a candidate to be stopped, and the reason it is recorded with
#: (``exited``: the child ended without a full reply; its status says how).
CAUSES = ("timeout", "oversize", "exited")


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


#: What a spare child does before its candidate arrives, with text of its own: unpickle a
#: job, compile and call a small function. A forked child copies every page it writes; an
#: evaluation writes many of the same pages (the allocator's, the compiler's), and copying
#: them here, while the client is elsewhere, takes them off the candidate's latency.
_REHEARSAL = "def rehearsal(item, bins):\n    return [-(free - item) for free in bins]\n"


def _rehearse() -> None:
    text, seed, *_ = pickle.loads(pickle.dumps((_REHEARSAL * 4, 1, "set", (), None)))
    namespace: dict[str, Any] = {}
    exec(compile(_REHEARSAL, "<rehearsal>", "exec"), namespace)  # noqa: S102 - our own text
    namespace["rehearsal"](seed, [len(text), 2, 3])


@attrs.define
class _Child:
    """A forked child waiting for its candidate (the spare), or running it."""

    pid: int
    scratch: str
    sets: frozenset[str]  #: the opponent sets it was forked with
    #: One byte shared with the child, set once its text has parsed: read only when the child
    #: is stopped, so that the zygote is not woken for it.
    parsed: mmap.mmap = attrs.field(repr=False)


class Zygote:
    """The zygote's state: the domain, the opponent sets it holds, its limits, and the
    children it has forked and not yet reaped (the spare handed to the client among them).

    Args:
        domain: The domain, unpickled.
        limits: The candidates' limits.
        scratch_root: Where each child's scratch directory is made.
        offers: The socket the children's pipes are handed over.
        channel: Descriptors every child closes first (the client's pipes and the offer
            socket): a program must not reach the client.
    """

    def __init__(self, domain: Any, limits: Limits, scratch_root: str,
                 offers: socket.socket | None = None,
                 channel: tuple[int, ...] = ()) -> None:  # fmt: skip
        self.domain = domain
        self.channel = channel
        self.offers = offers
        self.limits = limits
        self.scratch_root = scratch_root
        self.sets: OrderedDict[str, list[Any]] = OrderedDict()
        self.die_with_parent = _pdeathsig_setter()
        self.children: dict[int, _Child] = {}
        self._count = 0
        self.pid = os.getpid()

    def keep(self, set_id: str, data: bytes) -> None:
        self.sets[set_id] = pickle.loads(data)
        while len(self.sets) > KEPT_SETS:
            self.sets.popitem(last=False)

    def offer(self) -> None:
        """Forks the next candidate's child and hands its pipes to the client."""
        self._count += 1
        number = self._count
        job, reply, exited, child = self._fork()
        self.children[number] = child
        try:
            socket.send_fds(self.offers, [wire.dumps(("spare", number, sorted(child.sets)))],
                            [job, reply, exited])  # fmt: skip
        finally:
            for fd in (job, reply, exited):  # the client holds them now
                os.close(fd)

    def renew(self, number: int, set_id: str) -> tuple[Any, ...] | None:
        """Replaces spare ``number`` with one forked after set ``set_id`` came; the frame
        asking for the set when the zygote does not hold it (the spare stays)."""
        if set_id not in self.sets:
            return ("need", set_id)
        self.sets.move_to_end(set_id)
        self.retire(number)
        self.offer()
        return None

    def stop(self, number: int, cause: str) -> tuple[Any, ...]:
        """Kills child ``number``'s process group; the frame saying why it stopped."""
        child = self.children.get(number)
        if child is None or cause not in CAUSES:
            return ("stopped", number, "evaluation failed: the sandbox was asked to stop an "
                    "unknown candidate", False)  # fmt: skip
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)
        parsed = child.parsed[0] == 1
        if cause == "timeout":
            return ("stopped", number, timeout_message(self.limits.timeout), parsed)
        if cause == "oversize":
            return ("stopped", number, f"evaluation failed: the program sent more than "
                    f"{MAX_REPLY} bytes", parsed)  # fmt: skip
        try:  # the child has exited (the client saw it): how
            status = os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            status = None
        if status is not None and status.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
            return ("stopped", number, signal_message(status.si_status), parsed)
        code = status.si_status if status is not None else -1
        return ("stopped", number, f"evaluation failed: the program exited with status {code} "
                "before answering", parsed)  # fmt: skip

    def retire(self, number: int) -> None:
        """Ends child ``number`` and whatever the program started in its group, and reaps
        it."""
        child = self.children.pop(number, None)
        if child is None:
            return
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child.pid, 0)
        shutil.rmtree(child.scratch, ignore_errors=True)
        child.parsed.close()

    def close(self) -> None:
        for number in list(self.children):
            self.retire(number)

    def _fork(self) -> tuple[int, int, int, _Child]:
        """A new child: the client's ends of its job and reply pipes and its exit watch, and
        the child's record."""
        scratch = tempfile.mkdtemp(prefix="candidate-", dir=self.scratch_root)
        job_read, job_write = os.pipe()
        reply_read, reply_write = os.pipe()
        # Where there is no pidfd, the exit watch is a pipe only the child holds open: it
        # reads as closed once the child (and whatever it started) has ended.
        watch_read, watch_write = (-1, -1) if _PIDFD else os.pipe()
        parsed = mmap.mmap(-1, 1)  # anonymous and shared: the child's writes are seen here
        # Objects the zygote holds stay out of the child's collections: a collection would
        # write to every page they are on, and copying those pages costs more than most
        # evaluations.
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            for fd in (job_write, reply_read, watch_read):
                if fd >= 0:
                    os.close(fd)
            self._child(job_read, reply_write, scratch, parsed)
        for fd in (job_read, reply_write, watch_write):
            if fd >= 0:
                os.close(fd)
        with contextlib.suppress(OSError):  # the child may have done it already
            os.setpgid(pid, pid)
        exited = _exit_watch(pid) if watch_read < 0 else watch_read
        child = _Child(pid=pid, scratch=scratch, sets=frozenset(self.sets), parsed=parsed)
        return job_write, reply_read, exited, child

    def _child(self, job_read: int, write_end: int, scratch: str, parsed: mmap.mmap) -> None:
        status = 0
        try:
            for fd in self.channel:
                os.close(fd)
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
                cap = _address_space() + self.limits.memory_mb * 1024 * 1024
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            _rehearse()
            try:
                text, seed, set_id, required, known = pickle.loads(wire.read_frame(job_read))
            except EOFError:  # a spare let go of
                os._exit(0)
            os.close(job_read)
            opponents = self.sets[set_id]
            try:
                outcome = self._evaluate(text, seed, opponents, required, known, parsed)
            except MemoryError:
                reply: tuple[Any, ...] = ("memory",)
            else:
                # The domain turns a program's exception into a message; under a memory limit a
                # MemoryError is the limit's doing and says so.
                memory = (self.limits.memory_mb is not None and outcome.error is not None
                          and outcome.error.startswith("evaluation failed: MemoryError"))
                reply = ("memory",) if memory else _reply(outcome)
            if not _alive(self.pid):  # the program killed or stopped this zygote
                os._exit(1)  # no reply: the client finds the zygote gone, whatever the race
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
                  parsed: mmap.mmap) -> Any:  # fmt: skip
        """What :func:`~dei_framework.evaluation.evaluate` gives, marking ``parsed`` once the
        text has parsed: the zygote then knows there is a program even when the evaluation
        never ends."""
        from dei_framework.errors import InvalidProgram
        from dei_framework.evaluation import Outcome, _evaluate_parsed

        started = time.perf_counter()
        try:
            program = self.domain.parse(text)
        except InvalidProgram as exc:
            return Outcome(error=str(exc), seconds=time.perf_counter() - started)
        parsed[0] = 1
        return _evaluate_parsed(self.domain, program, opponents, seed, required, known,
                                started=started)  # fmt: skip


#: Signals that end or stop a process once they are pending (they cannot be blocked).
_FATAL = (1 << (signal.SIGKILL - 1)) | (1 << (signal.SIGSTOP - 1))


def _alive(zygote: int) -> bool:
    """Whether the zygote is still running and nothing has been sent that ends or stops it.

    A child's reply goes straight to the client, so a program that kills its zygote could
    still answer before the signal lands; checked after the evaluation, the signal is
    already pending, and the candidate is blamed the same way whatever the timing.
    """
    if os.getppid() != zygote:
        return False
    try:
        with open(f"/proc/{zygote}/status", "rb") as file:
            fields = dict(line.split(b":", 1) for line in file.read().splitlines() if b":" in line)
    except OSError:  # no /proc (macOS): the parent is there, which is all one can tell
        return True
    if fields.get(b"State", b"").strip()[:1] not in (b"R", b"S", b"D"):
        return False
    pending = int(fields.get(b"SigPnd", b"0"), 16) | int(fields.get(b"ShdPnd", b"0"), 16)
    return not pending & _FATAL


def _exit_watch(pid: int) -> int:
    """A descriptor that becomes readable when ``pid`` exits (a pidfd, Linux 5.3)."""
    return os.pidfd_open(pid)


def _has_pidfd() -> bool:
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


_PIDFD = _has_pidfd()


def _reply(outcome: Any) -> tuple[Any, ...]:
    """A child's answer as plain data (the parent re-parses the text for the program)."""
    evaluation = outcome.evaluation
    if evaluation is None:
        return ("invalid", outcome.program is not None, outcome.error, outcome.seconds,
                outcome.matches)  # fmt: skip
    return ("valid", float(evaluation.fitness),
            {str(key): float(value) for key, value in evaluation.descriptor.items()},
            dict(evaluation.info), outcome.seconds, outcome.matches)  # fmt: skip


def _serve(zygote: Zygote, inbound: int, outbound: int) -> None:
    """Answers the client's frames until it closes its end."""
    zygote.offer()
    while True:
        try:
            frame = pickle.loads(wire.read_frame(inbound))
        except EOFError:
            return
        kind = frame[0]
        if kind == "set":
            zygote.keep(frame[1], frame[2])
        elif kind == "finished":
            zygote.retire(frame[1])
            zygote.offer()
        elif kind == "stop":
            wire.write_frame(outbound, wire.dumps(zygote.stop(frame[1], frame[2])))
            zygote.retire(frame[1])
            zygote.offer()
        elif kind == "renew":
            answer = zygote.renew(frame[1], frame[2])
            if answer is not None:
                wire.write_frame(outbound, wire.dumps(answer))


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
    offers = socket.socket(fileno=int(os.environ.pop(OFFERS_VARIABLE)))
    try:
        kind, domain_data, limits_data = pickle.loads(wire.read_frame(inbound))
        assert kind == "hello"
        limits = Limits(**limits_data)
        scratch_root = tempfile.mkdtemp(prefix="dei-sandbox-")
        zygote = Zygote(pickle.loads(domain_data), limits, scratch_root, offers,
                        (inbound, outbound, offers.fileno()))  # fmt: skip
        import dei_framework.evaluation  # noqa: F401 - imported before the first fork, once
    except EOFError:
        return
    wire.write_frame(outbound, wire.dumps(("ready", os.getpid())))
    try:
        _serve(zygote, inbound, outbound)
    except (BrokenPipeError, ConnectionError):  # the client is gone
        pass
    finally:
        zygote.close()
        shutil.rmtree(scratch_root, ignore_errors=True)


if __name__ == "__main__":
    main()
