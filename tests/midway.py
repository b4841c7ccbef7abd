"""Stopping a real `dei-run` midway (kill -9, Ctrl-C, SIGTERM) and finding what it left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import attrs


def events(run_dir: Path) -> list[dict]:
    """The run's event log (a torn last line is skipped, as readers do)."""
    path = run_dir / "events.jsonl"
    if not path.exists():
        return []
    lines = []
    for line in path.read_text().splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return lines


@attrs.frozen
class Stopped:
    """How a `dei-run` stopped by :func:`stop_midway` ended."""

    returncode: int
    stderr: str
    #: Seconds from the signal to the exit of the main process.
    seconds: float
    #: Processes of the run's session (not zombies) still alive a moment after it exited,
    #: with their command lines.
    survivors: dict[int, str]


def session_processes(session: int) -> list[int]:
    """Live (non-zombie) processes of a session: a `dei-run` started in its own session and
    every process it started (workers, the resource tracker), even once reparented."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, sid = fields[0], int(fields[3])
        if sid == session and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def wait_gone(session: int, seconds: float) -> tuple[list[int], float]:
    """Waits up to ``seconds`` for a session to empty; returns the survivors and time waited."""
    started = time.monotonic()
    while True:
        alive = session_processes(session)
        waited = time.monotonic() - started
        if not alive or waited > seconds:
            return alive, waited
        time.sleep(0.05)


def kill_9(process: subprocess.Popen) -> None:
    os.kill(process.pid, signal.SIGKILL)


def ctrl_c(process: subprocess.Popen) -> None:
    """What a terminal does on Ctrl-C: SIGINT to the whole foreground process group."""
    os.killpg(process.pid, signal.SIGINT)


def sigterm(process: subprocess.Popen) -> None:
    os.kill(process.pid, signal.SIGTERM)


def stop_midway(
    args: list[str],
    out: Path,
    env: dict,
    *,
    min_events: int,
    send: Callable[[subprocess.Popen], None] = kill_9,
    after: float = 0.0,
    timeout: float = 60.0,
    grace: float = 2.0,
) -> Stopped:
    """Starts `dei-run` in a session of its own (Ctrl-C as in a terminal: not ignored), waits
    until it has checkpointed and logged more than ``min_events`` lines, sleeps ``after``
    seconds, then calls ``send`` (kill -9 by default) and waits for the main process to end
    and, for up to ``grace`` seconds, for the processes it started.
    """
    process = subprocess.Popen(
        ["dei-run", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.03)
        if (out / "checkpoint.json").exists() and len(events(out)) > min_events:
            break
    time.sleep(after)
    assert process.poll() is None, "the run finished before it could be stopped"
    send(process)
    sent = time.monotonic()
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        _, stderr = process.communicate()
        message = f"dei-run did not exit within {timeout} s:\n{stderr[-2000:]}"
        raise AssertionError(message) from None
    seconds = time.monotonic() - sent
    assert not (out / "summary.json").exists(), "the run finished before it could be stopped"
    alive, _ = wait_gone(process.pid, grace)
    return Stopped(process.returncode, stderr, seconds, {pid: _command(pid) for pid in alive})


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip()
    except OSError:
        return "(gone)"


def kill_midway(
    args: list[str], out: Path, env: dict, *, min_events: int, hold_after: int | None = None
) -> None:
    """Starts `dei-run`, SIGKILLs it once it has checkpointed and logged `min_events` lines.

    The toy operators of the run hold every call after their ``hold_after``-th (default
    ``min_events // 2``, for two nodes or more) until the run is killed (``hold_until``,
    tests/toy/toy_domain.py), so that however loaded the machine, the run cannot finish before
    this sees enough lines. Holding a call changes no decision.
    """
    gate = out.parent / f"{out.name}.gate"
    after = min_events // 2 if hold_after is None else hold_after
    held = {**env, "DEI_TOY_HOLD_UNTIL": str(gate), "DEI_TOY_HOLD_AFTER": str(after)}
    try:
        stop_midway(args, out, held, min_events=min_events)
    finally:
        gate.touch()  # a process the kill missed is let go
