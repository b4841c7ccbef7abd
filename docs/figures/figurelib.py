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
import shutil
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


#: Set to 1 to produce a figure set from a tree with uncommitted changes (to try a script): its
#: JSON is then marked dirty, and the docs test refuses it.
ALLOW_DIRTY_VARIABLE = "DEI_FIGURES_ALLOW_DIRTY"


def require_clean_tree(git: Mapping[str, Any] | None = None) -> None:
    """Refuses to produce figures from uncommitted code: a number in the docs must come from a
    commit in the history, so that anyone can check it out and regenerate it.

    Raises:
        SystemExit: tracked files differ from the commit and :data:`ALLOW_DIRTY_VARIABLE` is
            not set.
    """
    git = _GIT_AT_START if git is None else git
    if git.get("dirty") and os.environ.get(ALLOW_DIRTY_VARIABLE) != "1":
        raise SystemExit(
            "error: the tree has uncommitted changes, so these figures would come from code no "
            "commit holds: commit (or stash) first, or set "
            f"{ALLOW_DIRTY_VARIABLE}=1 to try the script (its JSON is then marked dirty and "
            "the docs test refuses it)"
        )


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
    require_clean_tree()  # before the minutes a benchmark takes, not after
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
    require_clean_tree(git)
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


# --- experiments: the one place that knows the keys of an experiment's summary.json ---------

#: Names an interval of a comparison may have, preferred first (the stats module may rename).
INTERVAL_KEYS = ("hl_ci95", "hl_ci", "ci95", "ci")
HOLM_KEYS = ("p_holm", "p_value_holm", "holm_p")
A12_KEYS = ("a12", "vd_a12", "vargha_delaney_a12")
#: The condition the experiment compares every other one with.
REFERENCE_CONDITION = "diverse"
#: A column of a conditions table: (label, dotted field of a condition's summary, as percent).
Column = tuple[str, str, bool]


def trim_runs(out: Path) -> None:
    """Keeps of every run folder of experiment ``out`` only what the report and the figures
    read (``config.json``, ``summary.json``, ``merged_archive.json``)."""
    keep = {"config.json", "summary.json", "merged_archive.json"}
    for run in out.glob("*/repeat-*"):
        for entry in run.iterdir():
            if entry.name not in keep:
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def field(block: Mapping[str, Any], path: str) -> Any:
    """``block["a"]["b"]`` for ``"a.b"``; ``None`` where a key is missing."""
    value: Any = block
    for key in path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def first(entry: Mapping[str, Any], keys: Sequence[str]) -> Any:
    """The value of the first of ``keys`` present in ``entry`` (``None`` if none is)."""
    return next((entry[key] for key in keys if entry.get(key) is not None), None)


def stat(value: Any) -> dict[str, Any] | None:
    """A statistic block reduced to what the tables show (extra keys such as a unit kept)."""
    if not isinstance(value, Mapping):
        return None
    return {key: value[key] for key in ("mean", "std", "n", "unit", "values") if key in value}


def interval_method(entry: Mapping[str, Any]) -> str | None:
    """The name of the comparison's interval, under whichever key the summary uses."""
    names = (entry.get("ci_method"), entry.get("interval_method"), entry.get("interval"))
    return next((name for name in names if isinstance(name, str)), None)


def comparison(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One ``comparisons`` entry of a summary (or of :func:`dei_framework.analysis.stats.compare`)
    reduced to what the figures show, whichever names the summary gives its statistics."""
    return {
        "a": entry["a"],
        "b": entry["b"],
        "metric": entry["metric"],
        "diff": entry.get("diff"),
        # The interval is the Hodges-Lehmann shift's when the summary has a shift (at the
        # exact level "ci_level"), else the difference of means'.
        "shift": entry.get("shift"),
        "interval": first(entry, INTERVAL_KEYS),
        "ci_level": entry.get("ci_level"),
        "interval_method": interval_method(entry),
        "p": entry.get("p_value"),
        "p_holm": first(entry, HOLM_KEYS),
        "a12": first(entry, A12_KEYS),
        "test": entry.get("test"),
        "n_a": entry.get("n_a"),
        "n_b": entry.get("n_b"),
    }


def extract_experiment(summary: Mapping[str, Any], columns: Sequence[Column]) -> dict[str, Any]:
    """What the figures need from an experiment's ``summary.json``: per condition the
    statistics of ``columns``, and the comparisons.

    Reads what is there: comparison entries may carry the interval under any name of
    :data:`INTERVAL_KEYS`, and optionally Holm-adjusted p-values and the A12 effect size.
    """
    conditions = {}
    for name, block in summary["conditions"].items():
        conditions[name] = {
            "operators": block.get("operators"),
            "nodes": block.get("nodes"),
            "n": block.get("repeats_completed"),
            **{path: stat(field(block, path)) for _, path, _ in columns},
        }
    return {
        "budget": summary.get("budget"),
        "rounds": summary.get("rounds"),
        "repeats": summary.get("repeats"),
        "seeds": summary.get("seeds"),
        "equal_compute": summary.get("equal_compute"),
        "common_reference": summary.get("common_reference"),
        "conditions": conditions,
        "comparisons": [comparison(entry) for entry in summary.get("comparisons", [])],
    }


def operators_text(operators: Sequence[str] | None) -> str:
    """A condition's operators: ``a, b`` or ``a x4`` when one operator runs every node."""
    if not operators:
        return "–"
    if len(set(operators)) == 1 and len(operators) > 1:
        return f"{operators[0]} x{len(operators)}"
    return ", ".join(operators)


def conditions_table(data: Mapping[str, Any], columns: Sequence[Column]) -> str:
    """One row per condition: operators, n and mean ± std of every column."""
    rows = []
    for name, block in data["conditions"].items():
        rows.append(
            [name, operators_text(block["operators"]), str(block["n"])]
            + [fmt_mean_std(block[path], percent=percent) for _, path, percent in columns]
        )
    header = ["condition", "operators", "n", *(column for column, _, _ in columns)]
    return markdown_table(header, rows) + units_note(data, columns)


def units_note(data: Mapping[str, Any], columns: Sequence[Column]) -> str:
    """A line naming what each column's mean ± std is over (``n`` counts repeats), when the
    summary's statistics say (``unit``); empty for summaries without units."""
    units: dict[str, set[str]] = {}
    for block in data["conditions"].values():
        for column, path, _ in columns:
            if (block.get(path) or {}).get("unit"):
                units.setdefault(column, set()).add(block[path]["unit"])
    if not units:
        return ""
    parts = [f"{column}: {', '.join(sorted(over))}" for column, over in units.items()]
    return "\n\nMean ± sample std over — " + "; ".join(parts) + "."


def difference(entry: Mapping[str, Any], percent: bool) -> str:
    """``+1.23 [+0.40, +2.10]``: the difference of means and its interval; with a
    Hodges-Lehmann shift, ``+1.23; shift +1.10 [+0.40, +2.10]`` (the interval is the shift's)."""
    show = (
        (lambda v: fmt_percent(v, 1, signed=True))
        if percent
        else (lambda v: fmt_number(v, 2, signed=True))
    )
    text = show(entry["diff"])
    if entry.get("shift") is not None:
        text += f"; shift {show(entry['shift'])}"
    if entry.get("interval"):
        low, high = entry["interval"]
        text += f" [{show(low)}, {show(high)}]"
    return text


def comparisons_table(
    data: Mapping[str, Any], metrics: Sequence[Column], *, reference: str = REFERENCE_CONDITION
) -> str:
    """``reference`` − each other condition on ``metrics`` ((label, metric, percent)): the
    difference with its interval, p, and Holm-adjusted p and A12 where the summary has them."""
    entries = {(e["b"], e["metric"]): e for e in data["comparisons"] if e["a"] == reference}
    has_holm = any(e.get("p_holm") is not None for e in data["comparisons"])
    has_a12 = any(e.get("a12") is not None for e in data["comparisons"])
    header = [f"{reference.capitalize()} −"]
    for label, _, _ in metrics:
        header += [label, "p"] + (["p (Holm)"] if has_holm else []) + (["A12"] if has_a12 else [])
    rows = []
    others = [name for name in data["conditions"] if name != reference]
    for other in others:
        row = [_named(other, data["conditions"][other])]
        for _, metric, percent in metrics:
            entry = entries.get((other, metric))
            if entry is None:
                row += ["–", "–"] + (["–"] if has_holm else []) + (["–"] if has_a12 else [])
                continue
            row += [difference(entry, percent), fmt_p(entry["p"])]
            row += [fmt_p(entry.get("p_holm"))] if has_holm else []
            row += [fmt_number(entry.get("a12"), 2)] if has_a12 else []
        rows.append(row)
    return markdown_table(header, rows)


def _named(name: str, condition: Mapping[str, Any]) -> str:
    """A condition's row label: its name, and its one operator when all its nodes share one and
    the name does not say it (``solo (bombers)``; ``homo:papers`` says it already)."""
    operators = list(dict.fromkeys(condition.get("operators") or []))
    return f"{name} ({operators[0]})" if len(operators) == 1 and ":" not in name else name


#: The compared metrics and the short names of their inline values.
SHORT_METRICS = {
    "merged.common.coverage": ("common-coverage", True),
    "merged.common.qd_score": ("common-qd", False),
    "merged.coverage": ("raw-coverage", True),
    "merged.qd_score": ("raw-qd", False),
}


def comparison_values(
    data: Mapping[str, Any], *, reference: str = REFERENCE_CONDITION
) -> dict[str, str]:
    """Inline values ``<reference>-<other>.<metric>`` (difference), ``...<metric>.ci``
    (difference and interval), ``.p``, ``.p_holm`` and ``.a12``."""
    values = {}
    for entry in data["comparisons"]:
        if entry["a"] != reference or entry["metric"] not in SHORT_METRICS:
            continue
        label, percent = SHORT_METRICS[entry["metric"]]
        key = f"{reference}-{entry['b'].replace(':', '-')}.{label}"
        values[key] = (
            fmt_percent(entry["diff"], 1, signed=True)
            if percent
            else fmt_number(entry["diff"], 2, signed=True)
        )
        values[f"{key}.ci"] = difference(entry, percent)
        values[f"{key}.p"] = fmt_p(entry["p"])
        values[f"{key}.p_holm"] = fmt_p(entry.get("p_holm"))
        values[f"{key}.a12"] = fmt_number(entry.get("a12"), 2)
    return values


def methods_text(data: Mapping[str, Any]) -> str:
    """The tests and interval methods of the comparisons, and the intervals' levels."""
    tests = sorted({e["test"] for e in data["comparisons"] if e.get("test")})
    methods = sorted(
        {e["interval_method"] for e in data["comparisons"] if e.get("interval_method")}
    )
    levels = sorted({e["ci_level"] for e in data["comparisons"] if e.get("ci_level")})
    if levels:
        methods.append("interval level " + ", ".join(f"{level:.3f}" for level in levels))
    return "; ".join(tests + methods) or "–"


def shell_lines(command: str, width: int = 92) -> str:
    """A long command broken into ``\\``-continued lines at option boundaries."""
    words = command.split(" ")
    lines, line = [], ""
    for word in words:
        starts_option = word.startswith("--")
        if line and starts_option and len(line) + len(word) > width:
            lines.append(line + " \\")
            line = "    " + word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])
