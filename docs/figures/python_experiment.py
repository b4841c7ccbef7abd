"""Figure set ``python_experiment``: Solo / Homo / Diverse on the bundled bin-packing task.

Starts the scripted loopback model (``benchmarks/scripted_model.py``) and runs
``dei experiment --domain python`` against it with two of its models as the operators:
``scripted-ast-full`` (python-ast's syntax-tree edits, answered as whole programs) and
``scripted-terms-diff`` (a weighted term added to the priority, answered as SEARCH/REPLACE
edits). Solo is the first, each Homo one model on every node, Diverse the two in turn; equal
compute, common ground, 10 repeats. Besides the experiment's own comparisons (coverage and
QD-score), the best score (``merged.obj_max``) is compared the same way (Diverse against each
other condition, Holm-adjusted within the metric). Usage::

    python docs/figures/python_experiment.py [--repeats 10] [--budget 32]

The runs go to ``runs/figures-python-experiment`` (removed first when it exists).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import (  # noqa: E402
    ROOT,
    command_text,
    comparison,
    comparisons_table,
    conditions_table,
    environment,
    extract_experiment,
    fmt_number,
    markdown_table,
    methods_text,
    run_command,
    shell_lines,
    trim_runs,
    write_figure_set,
)

from dei_framework.analysis.stats import compare, holm, mean_interval  # noqa: E402
from dei_framework.experiment.summary import metric_values  # noqa: E402

MODELS = ("openai/scripted-ast-full", "openai/scripted-terms-diff")
SEED = 100
OUT = "runs/figures-python-experiment"
#: What the command records in place of the scripted model's port (a free one each run).
API_BASE = "http://127.0.0.1:PORT/v1"
COLUMNS = (
    ("best score", "merged.obj_max", False),
    ("coverage (common)", "merged.common.coverage", True),
    ("QD-score (common)", "merged.common.qd_score", False),
)
COMPARED = (
    ("best score", "merged.obj_max", False),
    ("coverage (common)", "merged.common.coverage", True),
    ("QD-score (common)", "merged.common.qd_score", False),
)


def experiment_command(api_base: str, *, repeats: int, budget: int) -> list[str]:
    command = ["dei", "experiment", "--domain", "python"]
    for model in MODELS:
        command += ["--operator", model]
    return command + [
        "--api-base",
        api_base,
        "--conditions",
        "solo,homo,diverse",
        "--budget",
        str(budget),
        "--rounds",
        "2",
        "--repeats",
        str(repeats),
        "--seed",
        str(SEED),
        "--eval-workers",
        "1",
        "--out",
        OUT,
        "--progress",
        "quiet",
        "--no-report",
    ]


def best_score_comparisons(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Diverse against every other condition on ``merged.obj_max``, Holm within the metric."""
    conditions = summary["conditions"]
    entries = [
        compare(
            "diverse",
            metric_values(conditions["diverse"], "merged.obj_max"),
            name,
            metric_values(block, "merged.obj_max"),
            "merged.obj_max",
        )
        for name, block in conditions.items()
        if name != "diverse"
    ]
    for entry, adjusted in zip(entries, holm([e["p_value"] for e in entries]), strict=True):
        entry["p_holm"] = adjusted
    return entries


def best_table(data: Mapping[str, Any]) -> str:
    """Per condition the best score's mean ± sample std and 95 % t-interval, five decimals
    (the conditions table's two would hide the differences)."""
    rows = []
    for name, values in data["best_scores"].items():
        mean, std, half = mean_interval([v for v in values if v is not None])
        interval = (
            "–"
            if half is None
            else (f"[{fmt_number(mean - half, 5)}, {fmt_number(mean + half, 5)}]")
        )
        rows.append(
            [name, str(len(values)), f"{fmt_number(mean, 5)} ± {fmt_number(std, 5)}", interval]
        )
    return markdown_table(["condition", "n", "best score", "95 % t-interval"], rows)


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    seeds = data.get("seeds") or []
    return {
        "best": best_table(data),
        "command": "```sh\n" + shell_lines(data["command"]) + "\n```",
        "conditions": conditions_table(data, COLUMNS),
        "comparisons": comparisons_table(data, COMPARED),
        "methods": methods_text(data),
        "repeats": str(data.get("repeats")),
        "seeds": f"{seeds[0]}–{seeds[-1]}" if seeds else "–",
        "equal-compute": "held" if data.get("equal_compute") else "did not hold",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--budget", type=int, default=32)
    args = parser.parse_args(argv)
    out = ROOT / OUT
    if out.exists():
        shutil.rmtree(out)
    server = subprocess.Popen(
        [sys.executable, "benchmarks/scripted_model.py", "--seed", "0"],
        cwd=ROOT,
        env=environment(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        api_base = json.loads(server.stdout.readline())["api_base"]
        command = experiment_command(api_base, repeats=args.repeats, budget=args.budget)
        timing = run_command(command)
    finally:
        server.terminate()
        server.wait()
    recorded = command_text(experiment_command(API_BASE, repeats=args.repeats, budget=args.budget))
    timing["command"] = recorded
    summary = json.loads((out / "summary.json").read_text())
    data = extract_experiment(summary, COLUMNS)
    # Only the metrics whose per-run values the set keeps: a comparison must be checkable
    # from them (tests/docs/test_figure_consistency.py); Holm runs within a metric, so dropping the
    # raw (not common-ground) ones leaves the kept p-values as they are.
    kept = {metric for _, metric, _ in COLUMNS} - {"merged.obj_max"}  # compared below
    data["comparisons"] = [entry for entry in data["comparisons"] if entry["metric"] in kept]
    data["comparisons"] += [comparison(entry) for entry in best_score_comparisons(summary)]
    data["best_scores"] = {
        name: metric_values(block, "merged.obj_max")
        for name, block in summary["conditions"].items()
    }
    data["command"] = recorded
    trim_runs(out)
    write_figure_set(
        "python_experiment",
        commands=["python benchmarks/scripted_model.py --seed 0  # prints the api_base", recorded],
        data=data,
        n=f"{data['repeats']} repeats per condition (seeds {figures(data)['seeds']})",
        spread="mean ± sample std over repeats; Diverse − other: difference of means, "
        "Hodges-Lehmann shift with its exact interval, exact Mann-Whitney p, Holm within "
        "each metric, A12",
        timings=[timing],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
