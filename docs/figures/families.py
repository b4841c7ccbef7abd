"""Figure set ``families``: the offline operator-family experiment of docs/experiments.md.

Runs ``dei experiment`` on the four Core War families (Solo, a Homo per family, Diverse) at
equal compute, then extracts the conditions and the comparisons from the experiment's
``summary.json`` into ``docs/figures/families.json``. Usage::

    python docs/figures/families.py                  # the documented run: 10 repeats
    python docs/figures/families.py --repeats 5 --parallel 2
    python docs/figures/families.py --quick          # a tiny run that tests the pipeline
    python docs/figures/families.py --extract-only   # re-read an existing experiment
    python docs/figures/render.py                    # then render the docs

``--parallel P`` runs the repeats as P single-repeat experiments at once (repeat k is the
single-repeat experiment of seed ``--seed + k``, the same configuration, which ``dei experiment
--resume`` verifies run by run when it aggregates them into the one experiment directory).
The full run writes the trimmed run folders (``config.json``, ``summary.json``,
``merged_archive.json``) and the report to ``docs/example-report/families``; a quick run writes to
``runs/figures-families-quick`` and is marked ``quick`` in the JSON (the docs then say so).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figurelib import (  # noqa: E402
    ROOT,
    command_text,
    environment,
    executable,
    fmt_mean_std,
    fmt_number,
    fmt_p,
    fmt_percent,
    markdown_table,
    previous_record,
    repo_relative,
    run_command,
    write_figure_set,
)

FAMILIES = ("bombers", "papers", "scanners", "imps")
#: The experiment's settings: (documented run, quick run).
SETTINGS = {
    "full": {
        "budget": 640,
        "rounds": 10,
        "domain_rounds": 4,
        "cycles": 8000,
        "repeats": 10,
        "out": "docs/example-report/families",
    },
    "quick": {
        "budget": 32,
        "rounds": 2,
        "domain_rounds": 2,
        "cycles": 2000,
        "repeats": 2,
        "out": "runs/figures-families-quick",
    },
}
SEED = 100
#: Summary fields of each condition shown in the tables: (column, field path, as percent).
CONDITION_COLUMNS = (
    ("coverage (common)", "merged.common.coverage", True),
    ("QD-score (common)", "merged.common.qd_score", False),
    ("coverage (raw)", "merged.coverage", True),
    ("QD-score (raw)", "merged.qd_score", False),
    ("niche novelty", "niche_novelty", False),
    ("operator divergence", "operator_divergence", False),
)
#: Names an interval of a comparison may have, preferred first (the stats module may rename).
INTERVAL_KEYS = ("hl_ci95", "hl_ci", "ci95", "ci")
HOLM_KEYS = ("p_holm", "p_value_holm", "holm_p")
A12_KEYS = ("a12", "vd_a12", "vargha_delaney_a12")


def experiment_command(
    settings: Mapping[str, Any], *, repeats: int, seed: int, out: str, eval_workers: int
) -> list[str]:
    """The ``dei experiment`` command line of the family experiment."""
    command = ["dei", "experiment", "--domain", "coreware"]
    for family in FAMILIES:
        command += ["--operator", family]
    command += [
        "--conditions",
        "solo,homo,diverse",
        "--budget",
        str(settings["budget"]),
        "--rounds",
        str(settings["rounds"]),
        "--repeats",
        str(repeats),
        "--seed",
        str(seed),
        "--domain-option",
        f"rounds={settings['domain_rounds']}",
        "--domain-option",
        f"cycles={settings['cycles']}",
        "--domain-option",
        f"generality_rounds={settings['domain_rounds']}",
        "--eval-workers",
        str(eval_workers),
        "--out",
        out,
        "--progress",
        "quiet",
    ]
    return command


def run_parallel(
    settings: Mapping[str, Any], *, repeats: int, parallel: int, out: Path, eval_workers: int
) -> list[dict[str, Any]]:
    """Runs repeat k as the single-repeat experiment of seed SEED + k, P at a time, then
    moves its runs into ``out`` and lets ``dei experiment --resume`` aggregate (it checks each
    run's configuration against the plan)."""
    shards = [out.parent / f"{out.name}.repeat-{k}" for k in range(repeats)]
    commands = [
        experiment_command(
            settings, repeats=1, seed=SEED + k, out=repo_relative(shard), eval_workers=eval_workers
        )
        + ["--no-report"]
        for k, shard in enumerate(shards)
    ]
    timings = []
    pending = list(zip(range(repeats), commands, strict=True))
    running: list[tuple[int, subprocess.Popen[bytes], float]] = []
    while pending or running:
        while pending and len(running) < parallel:
            k, command = pending.pop(0)
            print(f"$ {command_text(command)}", file=sys.stderr, flush=True)
            running.append(
                (
                    k,
                    subprocess.Popen(executable(command), cwd=ROOT, env=environment()),
                    time.perf_counter(),
                )
            )
        time.sleep(1)
        for entry in list(running):
            k, process, start = entry
            if process.poll() is None:
                continue
            running.remove(entry)
            if process.returncode != 0:
                raise SystemExit(f"error: repeat {k} exited with {process.returncode}")
            timings.append(
                {
                    "repeat": k,
                    "command": command_text(commands[k]),
                    "wall_s": round(time.perf_counter() - start, 2),
                }
            )
    timings.sort(key=lambda timing: timing["repeat"])
    plan = json.loads((shards[0] / "experiment.json").read_text())
    plan["repeats"] = repeats
    out.mkdir(parents=True)
    (out / "experiment.json").write_text(json.dumps(plan, indent=1))
    for k, shard in enumerate(shards):
        for condition_dir in sorted(p for p in shard.iterdir() if p.is_dir()):
            (out / condition_dir.name).mkdir(exist_ok=True)
            (condition_dir / "repeat-0").rename(out / condition_dir.name / f"repeat-{k}")
        shutil.rmtree(shard)
    timings.append(
        run_command(["dei", "experiment", "--resume", repo_relative(out), "--progress", "quiet"])
    )
    return timings


def trim_runs(out: Path) -> None:
    """Keeps of every run folder only what the report and the figures read."""
    keep = {"config.json", "summary.json", "merged_archive.json"}
    for run in out.glob("*/repeat-*"):
        for entry in run.iterdir():
            if entry.name not in keep:
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


# --- extraction: the one place that knows summary.json's keys ---------------------------------


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


def extract(summary: Mapping[str, Any]) -> dict[str, Any]:
    """What the figures need from an experiment's ``summary.json``.

    Reads what is there: comparison entries may carry the interval under any name of
    :data:`INTERVAL_KEYS`, and optionally Holm-adjusted p-values and the A12 effect size.
    """
    conditions = {}
    for name, block in summary["conditions"].items():
        conditions[name] = {
            "operators": block.get("operators"),
            "nodes": block.get("nodes"),
            "n": block.get("repeats_completed"),
            **{path: stat(field(block, path)) for _, path, _ in CONDITION_COLUMNS},
        }
    comparisons = []
    for entry in summary.get("comparisons", []):
        comparisons.append(
            {
                "a": entry["a"],
                "b": entry["b"],
                "metric": entry["metric"],
                "diff": entry.get("diff"),
                # The interval is the Hodges-Lehmann shift's when the summary has a shift (at
                # the exact level "ci_level"), else the difference of means'.
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
        )
    return {
        "budget": summary.get("budget"),
        "rounds": summary.get("rounds"),
        "repeats": summary.get("repeats"),
        "seeds": summary.get("seeds"),
        "equal_compute": summary.get("equal_compute"),
        "common_reference": summary.get("common_reference"),
        "conditions": conditions,
        "comparisons": comparisons,
    }


# --- layout ------------------------------------------------------------------------------------


def operators_text(operators: Sequence[str] | None) -> str:
    if not operators:
        return "–"
    if len(set(operators)) == 1 and len(operators) > 1:
        return f"{operators[0]} x{len(operators)}"
    return ", ".join(operators)


def conditions_table(data: Mapping[str, Any]) -> str:
    rows = []
    for name, block in data["conditions"].items():
        rows.append(
            [name, operators_text(block["operators"]), str(block["n"])]
            + [fmt_mean_std(block[path], percent=percent) for _, path, percent in CONDITION_COLUMNS]
        )
    header = ["condition", "operators", "n", *(column for column, _, _ in CONDITION_COLUMNS)]
    return markdown_table(header, rows) + units_note(data)


def units_note(data: Mapping[str, Any]) -> str:
    """A line naming what each column's mean ± std is over (``n`` counts repeats), when the
    summary's statistics say (``unit``); empty for summaries without units."""
    units: dict[str, set[str]] = {}
    for block in data["conditions"].values():
        for column, path, _ in CONDITION_COLUMNS:
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


def comparisons_table(data: Mapping[str, Any], metrics: Sequence[tuple[str, str, bool]]) -> str:
    """Diverse − each other condition on ``metrics`` ((label, metric, percent)): the
    difference with its interval, p, and Holm-adjusted p and A12 where the summary has them."""
    entries = {(e["b"], e["metric"]): e for e in data["comparisons"]}
    has_holm = any(e.get("p_holm") is not None for e in data["comparisons"])
    has_a12 = any(e.get("a12") is not None for e in data["comparisons"])
    header = ["Diverse −"]
    for label, _, _ in metrics:
        header += [label, "p"] + (["p (Holm)"] if has_holm else []) + (["A12"] if has_a12 else [])
    rows = []
    others = [name for name in data["conditions"] if name != "diverse"]
    for other in others:
        row = [other]
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


def comparison_values(data: Mapping[str, Any]) -> dict[str, str]:
    """Inline values ``diverse-<other>.<metric>`` (difference) and ``...<metric>.p``."""
    short = {
        "merged.common.coverage": ("common-coverage", True),
        "merged.common.qd_score": ("common-qd", False),
        "merged.coverage": ("raw-coverage", True),
        "merged.qd_score": ("raw-qd", False),
    }
    values = {}
    for entry in data["comparisons"]:
        if entry["a"] != "diverse" or entry["metric"] not in short:
            continue
        label, percent = short[entry["metric"]]
        key = f"diverse-{entry['b'].replace(':', '-')}.{label}"
        values[key] = (
            fmt_percent(entry["diff"], 1, signed=True)
            if percent
            else fmt_number(entry["diff"], 2, signed=True)
        )
        values[f"{key}.ci"] = difference(entry, percent)
        values[f"{key}.p"] = fmt_p(entry["p"])
    return values


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


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    seeds = data.get("seeds") or []
    values = {
        "repeats": str(data.get("repeats")),
        "seeds": f"{seeds[0]}–{seeds[-1]}" if seeds else "–",
        "budget": str(data.get("budget")),
        "rounds": str(data.get("rounds")),
        "equal-compute": "held" if data.get("equal_compute") else "did not hold",
    }
    values["command"] = "```sh\n" + shell_lines(data.get("command", "")) + "\n```"
    values |= comparison_values(data)
    homo = {name: block for name, block in data["conditions"].items() if name.startswith("homo")}
    values["homo-families"] = conditions_table({"conditions": homo})
    values["all-conditions"] = conditions_table(data)
    values["diverse-vs-common"] = comparisons_table(
        data,
        (
            ("coverage (common)", "merged.common.coverage", True),
            ("QD-score (common)", "merged.common.qd_score", False),
        ),
    )
    values["diverse-vs-raw"] = comparisons_table(
        data,
        (("coverage (raw)", "merged.coverage", True), ("QD-score (raw)", "merged.qd_score", False)),
    )
    tests = sorted({e["test"] for e in data["comparisons"] if e.get("test")})
    methods = sorted(
        {e["interval_method"] for e in data["comparisons"] if e.get("interval_method")}
    )
    levels = sorted({e["ci_level"] for e in data["comparisons"] if e.get("ci_level")})
    if levels:
        methods.append("interval level " + ", ".join(f"{level:.3f}" for level in levels))
    values["methods"] = "; ".join(tests + methods) or "–"
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a tiny run (2 repeats, 2 rounds, 32 calls) to test the pipeline",
    )
    parser.add_argument("--repeats", type=int, help="repeats per condition (default 10; quick 2)")
    parser.add_argument(
        "--parallel", type=int, default=1, metavar="P", help="run P repeats at once (default 1)"
    )
    parser.add_argument(
        "--eval-workers", type=int, default=1, help="evaluation processes per run (default 1)"
    )
    parser.add_argument("--out", help="experiment directory (default: see the module docstring)")
    parser.add_argument(
        "--extract-only", action="store_true", help="run nothing; re-read the experiment in --out"
    )
    parser.add_argument(
        "--keep-runs",
        action="store_true",
        help="do not trim run folders to config, summary and merged archive",
    )
    args = parser.parse_args(argv)
    settings = SETTINGS["quick" if args.quick else "full"]
    repeats = args.repeats or settings["repeats"]
    out = ROOT / (args.out or settings["out"])
    command = experiment_command(
        settings, repeats=repeats, seed=SEED, out=repo_relative(out), eval_workers=args.eval_workers
    )
    timings: list[dict[str, Any]] = []
    totals = git = None
    if not args.extract_only:
        if out.exists() and args.quick:
            shutil.rmtree(out)  # a quick run's folder is scratch
        if out.exists():
            raise SystemExit(
                f"error: {out} exists; remove it for a fresh run, or pass "
                "--extract-only to re-read it"
            )
        if args.parallel > 1:
            timings = run_parallel(
                settings,
                repeats=repeats,
                parallel=args.parallel,
                out=out,
                eval_workers=args.eval_workers,
            )
        else:
            timings = [run_command(command)]
        if not args.keep_runs:
            trim_runs(out)
    summary = json.loads((out / "summary.json").read_text())
    data = extract(summary)
    if data["repeats"] != repeats:  # --extract-only of an experiment run with other repeats
        repeats = data["repeats"]
        command = experiment_command(
            settings,
            repeats=repeats,
            seed=SEED,
            out=repo_relative(out),
            eval_workers=args.eval_workers,
        )
    n = f"{data['repeats']} repeats per condition (seeds {figures(data)['seeds']})"
    # A parallel run's commands are the single-repeat experiments and the aggregation; the
    # serial command, which gives the same runs, is recorded too.
    commands = [t["command"] for t in timings] if args.parallel > 1 else [command_text(command)]
    previous = previous_record("families")
    if args.extract_only and previous and previous["data"].get("command") == command_text(command):
        # The run's commands and cost, not those of this re-reading.
        commands, timings = previous["commands"], previous["timings"]
        totals, git = previous.get("totals"), previous.get("git")
    data["command"] = command_text(command)
    write_figure_set(
        "families",
        commands=commands,
        data=data,
        n=n,
        totals=totals,
        git=git,
        spread="mean ± sample std over repeats; differences of means with the "
        "interval and test named in each comparison",
        quick=args.quick,
        timings=timings,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
