"""The evaluation worker's side of a sandbox: one warm process per worker thread, asked to
evaluate one candidate at a time, restarted when a program takes it down.

A worker (a local pool process, a thread of ``--eval-workers 0``, a Dask worker thread)
keeps its own :class:`SandboxProcess` (:func:`sandbox_for`), so no evaluation slot waits for
another's. Everything read back is untrusted
(:func:`~dei_framework.evaluation.sandbox.wire.loads_untrusted`)
and checked for shape here; the caller rebuilds the program by parsing the text itself.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from dei_framework.contract.errors import DEIError
from dei_framework.evaluation.sandbox import wire
from dei_framework.evaluation.sandbox.bubblewrap import bwrap_arguments, find_bubblewrap
from dei_framework.evaluation.sandbox.limits import Limits, file_message, memory_message
from dei_framework.evaluation.sandbox.policy import SandboxPolicy
from dei_framework.evaluation.sandbox.zygote import PARENT_VARIABLE

#: Seconds a warm process may take to import the domain and answer (a slow import is a few).
START_SECONDS = 120.0
#: Seconds the client waits beyond a candidate's time limit before it gives up on the warm
#: process itself (stopped by the program, e.g. with SIGSTOP) and starts another.
GRACE_SECONDS = 5.0
#: Variables a sandbox keeps from the worker's environment (an allowlist): what Python needs
#: to start, find the domain and decode text, with every ``LC_*`` (:data:`KEPT_PREFIXES`).
#: Everything else (API keys, tokens, cloud and provider credentials, DEI's own settings)
#: stays outside. ``PYTHONPATH`` is the worker's import path; ``HOME`` and ``TMPDIR`` are set
#: to each candidate's scratch directory.
KEPT_VARIABLES = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "PYTHONHASHSEED",
    "VIRTUAL_ENV",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUTF8",
    "PYTHONIOENCODING",
    "TZ",
)
#: Prefixes of variables kept too (the locale's categories).
KEPT_PREFIXES = ("LC_",)


class SandboxUnavailable(DEIError):
    """The sandbox's warm process cannot start (the domain does not load there, ...)."""


@attrs.frozen(kw_only=True)
class SandboxReply:
    """What a sandboxed evaluation gave, as plain data.

    Attributes:
        status: ``"valid"``, ``"invalid"`` (the domain said why) or ``"stopped"`` (a limit,
            a signal, or the sandbox itself; :attr:`error` says which).
        parsed: Whether the text parsed (the caller parses it again for the program).
        error: Why it is invalid or stopped.
        fitness: The fitness of a valid one.
        descriptor: Its descriptor.
        info: Its extra information.
        seconds: Wall-clock seconds the evaluation took in the sandbox.
        matches: Reference programs the program is.
        output: What the program wrote to its standard output and error (at most the
            output limit, decoded as UTF-8).
        output_truncated: Whether it wrote more than the output limit (the rest was dropped).
    """

    status: str
    parsed: bool = False
    error: str | None = None
    fitness: float | None = None
    descriptor: Mapping[str, float] | None = None
    info: Mapping[str, Any] = attrs.field(factory=dict)
    seconds: float = 0.0
    matches: tuple[str, ...] = ()
    output: str = ""
    output_truncated: bool = False


def _unreadable(seconds: float) -> SandboxReply:
    return SandboxReply(
        status="stopped",
        error="evaluation failed: the sandbox sent back an unreadable result",
        seconds=seconds,
    )


def _plain_reply(frame: Any, limits: Limits) -> SandboxReply:
    """A zygote's answer checked for shape (anything else is :func:`_unreadable`), with the
    output the child wrote."""
    if not isinstance(frame, tuple) or len(frame) < 2:
        return _unreadable(0.0)
    output, truncated = frame[-2:]
    if not isinstance(output, bytes) or not isinstance(truncated, bool):
        return _unreadable(0.0)
    reply = _answer(frame[:-2], limits)
    if not output and not truncated:
        return reply
    text = output[: limits.output_kb * 1024].decode("utf-8", "replace")
    return attrs.evolve(reply, output=text, output_truncated=truncated)


def _answer(frame: tuple[Any, ...], limits: Limits) -> SandboxReply:
    """The zygote's frame without its output, as a reply."""
    if frame[0] == "stopped" and len(frame) == 4:
        _, reason, seconds, parsed = frame
        if isinstance(reason, str) and isinstance(seconds, float):
            return SandboxReply(
                status="stopped", parsed=parsed is True, error=reason[:500], seconds=seconds
            )
        return _unreadable(0.0)
    if frame[0] != "done" or len(frame) != 3 or not isinstance(frame[1], bytes):
        return _unreadable(0.0)
    seconds = frame[2] if isinstance(frame[2], float) else 0.0
    try:
        reply = wire.loads_untrusted(frame[1])
    except wire.FrameError:
        return _unreadable(seconds)
    limit = {
        "memory": memory_message(limits.memory_mb),
        "file": file_message(limits.file_mb, "EFBIG"),
    }
    if isinstance(reply, tuple) and len(reply) == 1 and reply[0] in limit:
        return SandboxReply(status="stopped", parsed=True, error=limit[reply[0]], seconds=seconds)
    if (
        isinstance(reply, tuple)
        and len(reply) == 2
        and reply[0] == "error"
        and isinstance(reply[1], str)
    ):
        return SandboxReply(
            status="stopped",
            parsed=True,
            seconds=seconds,
            error=f"evaluation failed: {reply[1][:500]}",
        )
    if isinstance(reply, tuple) and len(reply) == 5 and reply[0] == "invalid":
        _, parsed, error, _, matches = reply
        if isinstance(error, str) and _names(matches):
            return SandboxReply(
                status="invalid",
                parsed=parsed is True,
                error=error,
                seconds=seconds,
                matches=matches,
            )
    if isinstance(reply, tuple) and len(reply) == 6 and reply[0] == "valid":
        _, fitness, descriptor, info, _, matches = reply
        if (
            isinstance(fitness, float)
            and isinstance(descriptor, dict)
            and all(isinstance(k, str) and isinstance(v, float) for k, v in descriptor.items())
            and isinstance(info, dict)
            and _names(matches)
        ):
            return SandboxReply(
                status="valid",
                parsed=True,
                fitness=fitness,
                descriptor=descriptor,
                info=info,
                seconds=seconds,
                matches=matches,
            )
    return _unreadable(seconds)


def _names(value: Any) -> bool:
    return isinstance(value, tuple) and all(isinstance(name, str) for name in value)


def _code_roots() -> list[str]:
    """The folders the loaded modules were imported from (a package's parent): an editable
    install maps a package to its checkout without putting that on the import path, and the
    jail must still see it where it lies under ``/tmp`` (a clone made there, a test's site).

    A module kept directly in ``/tmp`` (a script's own module beside it) gives its file, or its
    package's folder, instead: ``/tmp`` itself cannot be shown to the jail, whose ``/tmp`` is
    its own writable one.
    """
    private_tmp = os.path.realpath("/tmp")
    roots = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str):
            continue
        path = os.path.realpath(path)
        depth = name.count(".") + os.path.basename(path).startswith("__init__.")
        root, top = os.path.dirname(path), path
        for _ in range(depth):
            root, top = os.path.dirname(root), root
        roots.append(top if root == private_tmp else root)
    return roots


def _environment(isolated: bool) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name in KEPT_VARIABLES or name.startswith(KEPT_PREFIXES)
    }
    # The worker's import path, so the domain's module is found as the worker found it.
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(path) for path in sys.path if path)
    env["HOME"] = "/tmp" if isolated else tempfile.gettempdir()
    env[PARENT_VARIABLE] = "" if isolated else str(os.getpid())  # inside: bwrap's pid 1
    return env


#: The start of the reason of a candidate under which the warm process died.
DIED = "evaluation failed: the sandbox process died"


class SandboxProcess:
    """One warm process (see :mod:`~dei_framework.evaluation.sandbox.zygote`) and its pipes.

    Args:
        domain_data: The pickled domain.
        policy: Level and limits.
    """

    def __init__(self, domain_data: bytes, policy: SandboxPolicy) -> None:
        self.domain_data = domain_data
        self.policy = policy
        self.process: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        isolated = self.policy.level == "isolated"
        command = [sys.executable, "-m", "dei_framework.evaluation.sandbox.zygote"]
        if isolated:
            command = [
                *bwrap_arguments(find_bubblewrap(), visible=[*sys.path, *_code_roots()]),
                *command,
            ]
        errors = tempfile.TemporaryFile()
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=_environment(isolated),
            close_fds=True,
            start_new_session=True,
            cwd="/",
        )
        try:
            wire.write_frame(
                process.stdin.fileno(),
                wire.dumps(("hello", self.domain_data, self.policy.limits.to_json())),
            )
            frame = self._read(process, time.monotonic() + START_SECONDS)
        except (OSError, EOFError, wire.FrameError, TimeoutError):
            frame = None
        if not (isinstance(frame, tuple) and frame[:1] == ("ready",)):
            _kill(process)
            errors.seek(0)
            lines = errors.read().decode("utf-8", "replace").strip().splitlines()
            raise SandboxUnavailable(
                "the sandbox cannot start its warm process"
                + (f": {lines[-1]}" if lines else "")
                + " (the domain must be importable by name: defined in a module, not in a "
                "script's __main__)"
            )
        errors.close()
        return process

    @staticmethod
    def _read(process: subprocess.Popen, deadline: float | None) -> Any:
        fd = process.stdout.fileno()
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            raise TimeoutError
        return wire.loads_untrusted(wire.read_frame(fd))

    def evaluate(
        self,
        text: str,
        seed: int,
        set_id: str,
        set_data: Callable[[], bytes],
        required: tuple[str, ...],
        known: frozenset[str] | None,
    ) -> SandboxReply:
        """One candidate's evaluation in the sandbox (never raises for what the program does).

        A warm process that dies under a candidate is replaced and the candidate tried once
        more before it is blamed: something an earlier program left behind may have killed
        it, and a program that kills its warm process does so again.

        Raises:
            SandboxUnavailable: The warm process cannot start at all.
        """
        reply = self._attempt(text, seed, set_id, set_data, required, known)
        if reply.error is not None and reply.error.startswith(DIED):
            reply = self._attempt(text, seed, set_id, set_data, required, known)
        return reply

    def _attempt(
        self,
        text: str,
        seed: int,
        set_id: str,
        set_data: Callable[[], bytes],
        required: tuple[str, ...],
        known: frozenset[str] | None,
    ) -> SandboxReply:
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        process = self.process
        limit = self.policy.limits.timeout
        started = time.monotonic()
        deadline = None if limit is None else started + limit + GRACE_SECONDS
        job = wire.dumps(
            ("job", text, seed, set_id, required, None if known is None else sorted(known))
        )
        try:
            wire.write_frame(process.stdin.fileno(), job)
            while True:
                frame = self._read(process, deadline)
                if isinstance(frame, tuple) and frame[:1] == ("need",):
                    wire.write_frame(
                        process.stdin.fileno(), wire.dumps(("set", set_id, set_data()))
                    )
                    wire.write_frame(process.stdin.fileno(), job)
                    continue
                return _plain_reply(frame, self.policy.limits)
        except TimeoutError:
            reason = "stopped answering"
        except (OSError, EOFError):
            reason = "died"
        except wire.FrameError:
            reason = "sent back an unreadable frame"
        # The one candidate in flight took the warm process down (or stopped it): it alone
        # is invalid; the next candidate gets a fresh process.
        _kill(process)
        code = process.returncode
        detail = f" (signal {-code})" if code is not None and code < 0 else ""
        return SandboxReply(
            status="stopped",
            error=f"evaluation failed: the sandbox process {reason}{detail}",
            seconds=time.monotonic() - started,
        )

    def close(self) -> None:
        if self.process is not None:
            _kill(self.process)
            self.process = None


def _kill(process: subprocess.Popen) -> None:
    """Ends a warm process and every process of its session's group, and reaps it."""
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        process.kill()
    for stream in (process.stdin, process.stdout):
        with contextlib.suppress(OSError):
            stream.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)


_LOCAL = threading.local()


def sandbox_for(domain: Any, policy: SandboxPolicy) -> SandboxProcess:
    """This thread's sandbox for ``domain`` under ``policy`` (started on first use)."""
    sandboxes: dict[tuple[int, SandboxPolicy], SandboxProcess] | None = getattr(
        _LOCAL, "sandboxes", None
    )
    if sandboxes is None:
        sandboxes = _LOCAL.sandboxes = {}
        _ALL.append(sandboxes)
    key = (id(domain), policy)
    sandbox = sandboxes.get(key)
    if sandbox is None:
        try:
            data = pickle.dumps(domain, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - any pickling failure has the same remedy
            raise SandboxUnavailable(
                f"the sandbox needs a picklable domain; {type(domain).__name__} is not ({exc})"
            ) from None
        sandbox = sandboxes[key] = SandboxProcess(data, policy)
    return sandbox


#: Every thread's sandboxes, so that :func:`close_all` ends them when the process ends them.
_ALL: list[dict[tuple[int, SandboxPolicy], SandboxProcess]] = []


def close_all() -> None:
    """Ends every warm process this process started (any thread's)."""
    for sandboxes in list(_ALL):
        for sandbox in list(sandboxes.values()):
            sandbox.close()
        sandboxes.clear()


atexit.register(close_all)
