"""Figure set ``adaptive``: the baselines and the bandit against Diverse (docs/adaptive.md).

Runs ``dei experiment`` on the four Core War families with every condition that could explain
a Diverse win away — Solo, a Homo per family, ``homo-temp`` (bombers at mutation strengths
0.5 ... 2.0), ``sample`` (every call from scratch) — and ``adaptive`` (Diverse with
``--allocation bandit``), at equal compute and with the settings of the ``families`` set (so
its Solo, Homo and Diverse runs are the same runs). It extracts the conditions, the
comparisons and, for ``adaptive``, the share of the calls each family got, into
``docs/figures/adaptive.json``. Usage::

    python docs/figures/adaptive.py                  # the documented run: 10 repeats
    python docs/figures/adaptive.py --quick          # a tiny run that tests the pipeline
    python docs/figures/adaptive.py --extract-only   # re-read an existing experiment
    python docs/figures/render.py                    # then render the docs

The runs go to ``runs/figures-adaptive`` (``runs/figures-adaptive-quick`` for a quick run,
marked ``quick`` in the JSON); the experiment's ``experiment.json``, ``report.md`` and
plots are copied to ``docs/example-report/adaptive``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import (  # noqa: E402
    ROOT,
    command_text,
    comparison_values,
    comparisons_table,
    conditions_table,
    extract_experiment,
    fmt_percent,
    markdown_table,
    methods_text,
    previous_record,
    repo_relative,
    run_command,
    shell_lines,
    write_figure_set,
)

FAMILIES = ("bombers", "papers", "scanners", "imps")
CONDITIONS = "solo,homo,homo-temp,sample,diverse,adaptive"
#: The experiment's settings: (documented run, quick run); the full one is the families set's.
SETTINGS = {
    "full": {
        "budget": 640,
        "rounds": 10,
        "domain_rounds": 4,
        "cycles": 8000,
        "repeats": 10,
        "out": "runs/figures-adaptive",
    },
    "quick": {
        "budget": 64,
        "rounds": 4,
        "domain_rounds": 2,
        "cycles": 2000,
        "repeats": 2,
        "out": "runs/figures-adaptive-quick",
    },
}
SEED = 100
#: Where the experiment-level files of the documented run are kept.
KEPT = "docs/example-report/adaptive"
CONDITION_COLUMNS = (
    ("coverage (common)", "merged.common.coverage", True),
    ("QD-score (common)", "merged.common.qd_score", False),
    ("coverage (raw)", "merged.coverage", True),
    ("QD-score (raw)", "merged.qd_score", False),
)
COMMON_METRICS = (
    ("coverage (common)", "merged.common.coverage", True),
    ("QD-score (common)", "merged.common.qd_score", False),
)


def experiment_command(settings: Mapping[str, Any], *, repeats: int, out: str) -> list[str]:
    """The ``dei experiment`` command line of the experiment."""
    command = ["dei", "experiment", "--domain", "coreware"]
    for family in FAMILIES:
        command += ["--operator", family]
    command += [
        "--conditions",
        CONDITIONS,
        "--budget",
        str(settings["budget"]),
        "--rounds",
        str(settings["rounds"]),
        "--repeats",
        str(repeats),
        "--seed",
        str(SEED),
        "--domain-option",
        f"rounds={settings['domain_rounds']}",
        "--domain-option",
        f"cycles={settings['cycles']}",
        "--domain-option",
        f"generality_rounds={settings['domain_rounds']}",
        "--eval-workers",
        "1",
        "--out",
        out,
        "--progress",
        "quiet",
    ]
    return command


def allocation_shares(out: Path) -> dict[str, Any]:
    """For every ``adaptive`` run: the share of its calls each family's node made, and the
    decisions' floor hits; aggregated over repeats (mean, min, max per family)."""
    shares: dict[str, list[float]] = {family: [] for family in FAMILIES}
    floors: dict[str, list[int]] = {family: [] for family in FAMILIES}
    for run in sorted((out / "adaptive").glob("repeat-*")):
        summary = json.loads((run / "summary.json").read_text())
        nodes = summary["budget"]["nodes"]
        total = sum(node["calls"] for node in nodes.values())
        by_family: dict[str, int] = {}
        for node in nodes.values():
            by_family[node["model"]] = by_family.get(node["model"], 0) + node["calls"]
        for family in FAMILIES:
            shares[family].append(by_family.get(family, 0) / total)
        names = {name: node["model"] for name, node in nodes.items()}
        hits = dict.fromkeys(FAMILIES, 0)
        events = (json.loads(line) for line in (run / "events.jsonl").read_text().splitlines())
        for event in events:
            if event.get("event") == "allocation":
                for name, quota in event["quotas"].items():
                    if quota == event["floor_calls"]:
                        hits[names[name]] += 1
        for family in FAMILIES:
            floors[family].append(hits[family])
    return {
        family: {
            "mean": statistics.fmean(values) if values else None,
            "min": min(values) if values else None,
            "max": max(values) if values else None,
            "floor_rounds": statistics.fmean(floors[family]) if floors[family] else None,
        }
        for family, values in shares.items()
    }


def extract(summary: Mapping[str, Any], out: Path) -> dict[str, Any]:
    """What the figures need: :func:`figurelib.extract_experiment` and the adaptive shares."""
    data = extract_experiment(summary, CONDITION_COLUMNS)
    data["shares"] = allocation_shares(out)
    data["decisions_per_run"] = summary.get("rounds", 1) - 1
    return data


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
    values["all-conditions"] = conditions_table(data, CONDITION_COLUMNS)
    values["diverse-vs-common"] = comparisons_table(data, COMMON_METRICS)
    rows = [
        [
            family,
            fmt_percent(block["mean"]),
            f"{fmt_percent(block['min'])} – {fmt_percent(block['max'])}",
            f"{block['floor_rounds']:.1f} of {data['decisions_per_run']}"
            if block["floor_rounds"] is not None
            else "–",
        ]
        for family, block in data["shares"].items()
    ]
    values["shares"] = markdown_table(
        ["family", "share of the calls (mean)", "range over repeats", "rounds at the floor"], rows
    )
    for family, block in data["shares"].items():
        values[f"share-{family}"] = fmt_percent(block["mean"])
    values["methods"] = methods_text(data)
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run to test the pipeline")
    parser.add_argument("--repeats", type=int, help="repeats per condition (default 10; quick 2)")
    parser.add_argument("--out", help="experiment directory (default: see the module docstring)")
    parser.add_argument(
        "--extract-only", action="store_true", help="run nothing; re-read the experiment in --out"
    )
    args = parser.parse_args(argv)
    settings = SETTINGS["quick" if args.quick else "full"]
    repeats = args.repeats or settings["repeats"]
    out = ROOT / (args.out or settings["out"])
    command = experiment_command(settings, repeats=repeats, out=repo_relative(out))
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
        timings = [run_command(command)]
    summary = json.loads((out / "summary.json").read_text())
    data = extract(summary, out)
    if data["repeats"] != repeats:  # --extract-only of an experiment run with other repeats
        repeats = data["repeats"]
        command = experiment_command(settings, repeats=repeats, out=repo_relative(out))
    commands = [command_text(command)]
    previous = previous_record("adaptive")
    if args.extract_only and previous and previous["data"].get("command") == command_text(command):
        # The run's commands and cost, not those of this re-reading.
        commands, timings = previous["commands"], previous["timings"]
        totals, git = previous.get("totals"), previous.get("git")
    if not args.quick:
        kept = ROOT / KEPT
        kept.mkdir(parents=True, exist_ok=True)
        # The report and its plots (summary.json, megabytes, stays with the runs: the seeded
        # command gives the same runs again).
        for name in ("experiment.json", "report.md"):
            if (out / name).exists():
                shutil.copy2(out / name, kept / name)
        if (out / "plots").is_dir():
            shutil.copytree(out / "plots", kept / "plots", dirs_exist_ok=True)
    data["command"] = command_text(command)
    n = f"{data['repeats']} repeats per condition (seeds {figures(data)['seeds']})"
    write_figure_set(
        "adaptive",
        commands=commands,
        data=data,
        n=n,
        totals=totals,
        git=git,
        spread="mean ± sample std over repeats; differences of means with the "
        "interval and test named in each comparison; shares: mean and range over repeats",
        quick=args.quick,
        timings=timings,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
