"""Figure set ``adaptive_numeric``: the baselines and the bandit against Diverse on a static
domain (docs/adaptive.md).

The ``adaptive`` set's six conditions on ``numeric`` (``plugins/numeric``: the shifted sphere,
continual archives, the settings of the ``static_domains`` set) with its two offline operators
``gaussian`` and ``iso-line``: Solo, a Homo per operator, ``homo-temp`` (``gaussian`` at sigma
0.25 ... 1.0), ``sample``, Diverse and ``adaptive``; the conditions, the comparisons and each
operator's share of the adaptive runs' calls go to ``docs/figures/adaptive_numeric.json``.
Usage::

    python docs/figures/adaptive_numeric.py                 # the documented run: 10 repeats
    python docs/figures/adaptive_numeric.py --quick         # a tiny run that tests the pipeline
    python docs/figures/adaptive_numeric.py --extract-only  # re-read an existing experiment
    python docs/figures/render.py                           # then render the docs

The runs go to ``runs/figures-adaptive-numeric`` (``-quick`` for a quick run, marked ``quick``
in the JSON).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from adaptive import CONDITION_COLUMNS, CONDITIONS, figures  # noqa: E402
from figurelib import (  # noqa: E402
    ROOT,
    command_text,
    extract_experiment,
    previous_record,
    repo_relative,
    run_command,
    write_figure_set,
)

OPERATORS = ("gaussian", "iso-line")
SETTINGS = {
    "full": {"budget": 8000, "rounds": 4, "repeats": 10, "out": "runs/figures-adaptive-numeric"},
    "quick": {
        "budget": 400,
        "rounds": 2,
        "repeats": 2,
        "out": "runs/figures-adaptive-numeric-quick",
    },
}
SEED = 100


def experiment_command(settings: Mapping[str, Any], *, repeats: int, out: str) -> list[str]:
    """The ``dei experiment`` command line (four nodes for every ensemble condition)."""
    command = ["dei", "experiment", "--domain", "numeric"]
    for operator in OPERATORS:
        command += ["--operator", operator]
    return [
        *command,
        "--conditions",
        CONDITIONS,
        "--lifecycle",
        "continual",
        "--budget",
        str(settings["budget"]),
        "--rounds",
        str(settings["rounds"]),
        "--repeats",
        str(repeats),
        "--seed",
        str(SEED),
        "--eval-workers",
        "0",
        "--out",
        out,
        "--progress",
        "quiet",
        "--no-report",
    ]


def allocation_shares(out: Path) -> dict[str, Any]:
    """Each operator's share of the calls of the ``adaptive`` runs (its two nodes together),
    and the rounds its nodes spent at the floor (mean per node), over repeats."""
    shares: dict[str, list[float]] = {operator: [] for operator in OPERATORS}
    floors: dict[str, list[float]] = {operator: [] for operator in OPERATORS}
    for run in sorted((out / "adaptive").glob("repeat-*")):
        nodes = json.loads((run / "summary.json").read_text())["budget"]["nodes"]
        total = sum(node["calls"] for node in nodes.values())
        models = {name: node["model"] for name, node in nodes.items()}
        for operator in OPERATORS:
            shares[operator].append(
                sum(n["calls"] for n in nodes.values() if n["model"] == operator) / total
            )
        hits = dict.fromkeys(OPERATORS, 0)
        for line in (run / "events.jsonl").read_text().splitlines():
            event = json.loads(line)
            if event.get("event") == "allocation":
                for name, quota in event["quotas"].items():
                    hits[models[name]] += quota == event["floor_calls"]
        for operator in OPERATORS:
            per_node = sum(1 for model in models.values() if model == operator)
            floors[operator].append(hits[operator] / per_node)
    return {
        operator: {
            "mean": sum(values) / len(values) if values else None,
            "min": min(values) if values else None,
            "max": max(values) if values else None,
            "floor_rounds": sum(floors[operator]) / len(floors[operator])
            if floors[operator]
            else None,
        }
        for operator, values in shares.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run to test the pipeline")
    parser.add_argument("--repeats", type=int, help="repeats per condition (default 10; quick 2)")
    parser.add_argument(
        "--extract-only", action="store_true", help="run nothing; re-read the experiment"
    )
    args = parser.parse_args(argv)
    settings = SETTINGS["quick" if args.quick else "full"]
    repeats = args.repeats or settings["repeats"]
    out = ROOT / settings["out"]
    command = experiment_command(settings, repeats=repeats, out=repo_relative(out))
    timings: list[dict[str, Any]] = []
    totals = git = None
    if not args.extract_only:
        if out.exists() and args.quick:
            shutil.rmtree(out)  # a quick run's folder is scratch
        if out.exists():
            raise SystemExit(f"error: {out} exists; remove it for a fresh run, or --extract-only")
        timings = [run_command(command)]
    summary = json.loads((out / "summary.json").read_text())
    data = extract_experiment(summary, CONDITION_COLUMNS)
    data["shares"] = allocation_shares(out)
    data["decisions_per_run"] = summary.get("rounds", 1) - 1
    data["command"] = command_text(command)
    previous = previous_record("adaptive_numeric")
    if args.extract_only and previous and previous["data"].get("command") == data["command"]:
        timings, totals, git = previous["timings"], previous.get("totals"), previous.get("git")
    write_figure_set(
        "adaptive_numeric",
        commands=[data["command"]],
        data=data,
        n=f"{data['repeats']} repeats per condition (seeds {figures(data)['seeds']})",
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
