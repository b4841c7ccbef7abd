"""Shared machinery of the figure scripts: provenance, running commands, formatting.

Every figure set is one script in ``docs/figures/`` (``families.py``, ``quickstart.py`` ...).
Run as a program, a script runs its measurement or experiment and writes
``docs/figures/<set>.json`` with :func:`write_figure_set`: the raw data it extracted plus where it
came from (git commit, the exact commands, n and spread, date, the machine's cores and load).
Imported by ``render.py``, the same script lays the data out: its ``figures(data)`` returns one
Markdown string per figure name, which the renderer puts between the markers of the docs
(``<!-- figure: set/name -->`` ... ``<!-- /figure -->`` for blocks, ``<!-- fig: set/name -->``
... ``<!-- /fig -->`` for a value inside a sentence). So the numbers in the docs are never typed:
they are data written by a script, and layout written as code.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: The repository root (``docs/figures/`` is two levels below it).
ROOT = Path(__file__).resolve().parents[2]
#: Where the figure scripts and their JSON files live.
FIGURES_DIR = Path(__file__).resolve().parent
#: Bumped when the layout of a figure JSON file changes.
FORMAT_VERSION = 1
#: When this script started (wall clock and the CPU of its finished children), for the totals.
_STARTED = (time.perf_counter(), os.times())


def git_state() -> dict[str, Any]:
    """The commit the repository is at and whether tracked files differ from it.

    Returns:
        ``{"commit": <40 hex digits or None>, "dirty": <bool or None>}``; ``None`` outside a
        git checkout.
    """

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
            )
        except (OSError, subprocess.CalledProcessError):
            return None
        return done.stdout.strip()

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, or ``None`` where the OS has none."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return None


#: The code the figures were produced with: the state when the script started (later edits
#: to the working tree while a long experiment runs do not change what it ran).
_GIT_AT_START = git_state()


def machine() -> dict[str, Any]:
    """What a reader needs to judge a timing: cores, processor, OS, Python, load now."""
    return {
        "cores": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "load_average": load_average(),
    }


def repo_relative(path: Path) -> str:
    """``path`` relative to the repository root when inside it (commands run from there)."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def executable(command: Sequence[str]) -> list[str]:
    """``command`` with its program taken from this Python's environment when it has one.

    ``dei``, ``dei-run`` ... are installed next to the interpreter; without this, a script run
    as ``.venv/bin/python docs/figures/x.py`` from a shell whose ``PATH`` lacks the venv would
    run another installation's code.
    """
    local = Path(sys.executable).parent / command[0]
    return [str(local), *command[1:]] if local.is_file() else list(command)


def environment() -> dict[str, str]:
    """This process's environment with this Python's ``bin`` first on ``PATH``, so that a
    benchmark that starts ``dei`` itself starts this checkout's."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def command_text(command: Sequence[str]) -> str:
    """One shell-quoted line for ``command``, as a reader would type it."""
    return shlex.join(command)


def run_command(
    command: Sequence[str], *, capture: bool = False, with_stderr: bool = False
) -> dict[str, Any]:
    """Runs ``command`` from the repository root and measures it.

    Args:
        command: the program and its arguments.
        capture: keep the standard output (returned as ``stdout``) instead of passing it on.
        with_stderr: with ``capture``, keep the standard error too, interleaved with the
            output as a terminal shows them.

    Returns:
        ``{"command", "wall_s", "cpu_s", "load_before", "load_after", "stdout"}``; ``cpu_s`` is
        the user + system time of the command and its children.

    Raises:
        SystemExit: the command failed (its exit status is passed on).
    """
    print(f"$ {command_text(command)}", file=sys.stderr, flush=True)
    before_cpu = os.times()
    load_before = load_average()
    start = time.perf_counter()
    done = subprocess.run(
        executable(command),
        cwd=ROOT,
        env=environment(),
        text=True,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.STDOUT if capture and with_stderr else None,
    )
    wall = time.perf_counter() - start
    after_cpu = os.times()
    if done.returncode != 0:
        print(f"error: {command_text(command)} exited with {done.returncode}", file=sys.stderr)
        raise SystemExit(done.returncode)
    cpu = (
        after_cpu.children_user
        - before_cpu.children_user
        + after_cpu.children_system
        - before_cpu.children_system
    )
    return {
        "command": command_text(command),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "load_before": load_before,
        "load_after": load_average(),
        "stdout": done.stdout if capture else None,
    }


def run_benchmark(command: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Runs a ``benchmarks/*.py`` script that prints one JSON object; returns it and the timing.

    Raises:
        SystemExit: the script failed or printed no JSON object.
    """
    timing = run_command(command, capture=True)
    stdout = timing.pop("stdout")
    try:
        result = json.loads(stdout[stdout.index("{") :])
    except ValueError:
        raise SystemExit(f"error: {command_text(command)} printed no JSON object") from None
    return result, timing


def previous_record(name: str) -> dict[str, Any] | None:
    """The figure set's JSON as last written, or ``None``."""
    path = FIGURES_DIR / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def totals_since_start() -> dict[str, float]:
    """Wall seconds since the script started, and the CPU seconds (user + system) of this
    process and every child it waited for: what producing the figures cost in all."""
    wall, cpu = _STARTED
    now = os.times()
    used = (
        now.user
        - cpu.user
        + now.system
        - cpu.system
        + now.children_user
        - cpu.children_user
        + now.children_system
        - cpu.children_system
    )
    return {"wall_s": round(time.perf_counter() - wall, 1), "cpu_s": round(used, 1)}


def write_figure_set(
    name: str,
    *,
    commands: Sequence[str],
    data: Mapping[str, Any],
    n: str,
    spread: str,
    quick: bool = False,
    timings: Sequence[Mapping[str, Any]] = (),
    totals: Mapping[str, float] | None = None,
    git: Mapping[str, Any] | None = None,
) -> Path:
    """Writes ``docs/figures/<name>.json``: the data and its provenance.

    Args:
        name: the figure set, also the script's name (``docs/figures/<name>.py``).
        commands: the exact commands that produced the data, in order.
        data: what the set's ``figures(data)`` lays out (JSON-serialisable).
        n: what the statistics are over, e.g. ``"5 repeats per condition (seeds 100-104)"``.
        spread: how spread is stated, e.g. ``"mean ± sample std over repeats"``.
        quick: a reduced run that exercises the pipeline but is not the documented figure; the
            renderer says so next to every figure of the set.
        timings: per command, wall and CPU seconds and the load around it.
        totals: wall and CPU seconds of the whole production (default: since this script
            started, see :func:`totals_since_start`).
        git: the commit the data was produced at (default: this checkout's when the script
            started); a script that only re-reads an earlier run passes that run's.

    Returns:
        The path written.
    """
    record = {
        "format": FORMAT_VERSION,
        "set": name,
        "script": f"docs/figures/{name}.py",
        "git": dict(git) if git is not None else _GIT_AT_START,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "commands": list(commands),
        "timings": [dict(timing) for timing in timings],
        "totals": dict(totals) if totals is not None else totals_since_start(),
        "n": n,
        "spread": spread,
        "quick": quick,
        "data": data,
    }
    path = FIGURES_DIR / f"{name}.json"
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(
        f"wrote {path.relative_to(ROOT)}; render the docs with: python docs/figures/render.py",
        file=sys.stderr,
    )
    return path


# --- formatting: one place, so every figure writes numbers the same way ---------------------


def fmt_number(value: float | None, digits: int = 2, *, signed: bool = False) -> str:
    """``value`` with ``digits`` decimals (a real minus sign), or ``–`` when absent."""
    if value is None:
        return "–"
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    return text.replace("-", "−")


def fmt_percent(share: float | None, digits: int = 1, *, signed: bool = False) -> str:
    """A share in [0, 1] as a percentage, e.g. ``0.306`` → ``30.6%``; ``–`` when absent."""
    if share is None:
        return "–"
    return fmt_number(100 * share, digits, signed=signed) + "%"


def fmt_mean_std(stat: Mapping[str, Any] | None, *, percent: bool = False, digits: int = 2) -> str:
    """A ``{"mean", "std", ...}`` block as ``mean ± std`` (``–`` when there is no mean)."""
    if not stat or stat.get("mean") is None:
        return "–"
    show = (lambda v: fmt_percent(v, 1)) if percent else (lambda v: fmt_number(v, digits))
    if stat.get("std") is None:
        return show(stat["mean"])
    return f"{show(stat['mean'])} ± {show(stat['std'])}"


def fmt_p(p: float | None) -> str:
    """A p-value with three decimals (``<0.001`` below), ``–`` when absent."""
    if p is None:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table (no trailing newline)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
