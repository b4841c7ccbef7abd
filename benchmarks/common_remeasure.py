"""Check: re-measure the common-ground elites of finished runs on fresh seeds; prints JSON.

Common ground chooses each cell's elite on one measurement and reports the mean of K other,
fresh ones (``dei_framework/common.py``). If that removes the winner's curse, scoring the same
elites on further seeds — none of them used by the run — must give the same common QD-score
up to measurement noise. For every run directory given (or every run of an experiment
directory), this script re-evaluates each elite of ``merged_archive.json`` against the run's
reference set with ``--seeds`` fresh seeds and compares:

* ``reported_qd`` / ``reported_sem``: the run's ``merged.common.qd_score`` and its standard
  error from its K seeds (``qd_score_sem``);
* ``fresh_qd`` / ``fresh_sem``: the same elites' QD-score on the fresh seeds, and its error;
* ``difference`` = fresh − reported, ``z`` = difference / sqrt(reported_sem² + fresh_sem²);
* ``selection_qd``: the QD-score on the selection measurement (biased upward), for contrast.

Usage::

    python benchmarks/common_remeasure.py DIR [DIR ...] [--seeds 10] [--workers 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from dei_framework.common import build_reference, score_texts
from dei_framework.config import RunConfig
from dei_framework.context import FactoryContext
from dei_framework.evaluation import Evaluator
from dei_framework.plugins import PluginRegistry, load_plugins
from dei_framework.runlog import RunDir

#: First fresh seed; fresh seeds are consecutive from here, skipping any the run used.
FIRST_FRESH_SEED = 1_000_003


def run_dirs(paths: Sequence[Path]) -> list[Path]:
    """The run directories among ``paths``; an experiment directory stands for its runs."""
    found = []
    for path in paths:
        if (path / "experiment.json").exists():
            found += sorted(p.parent for p in path.glob("*/repeat-*/merged_archive.json"))
        else:
            found.append(path)
    return found


def remeasure(
    run_dir: Path, seeds: int, *, registry: PluginRegistry | None = None, workers: int = 0
) -> dict[str, Any]:
    """Re-measures one finished run's common-ground elites on ``seeds`` fresh seeds."""
    registry = registry or load_plugins()
    config = RunConfig.from_json(RunDir(run_dir).read_config())
    summary = json.loads((run_dir / "summary.json").read_text())
    common = summary["merged"].get("common")
    if common is None:
        raise SystemExit(f"{run_dir}: no common ground measured")
    entries = json.loads((run_dir / "merged_archive.json").read_text())
    domain = registry.domain(config.domain).factory(
        FactoryContext(registry=registry, options=dict(config.domain_options), seed=config.seed)
    )
    reference = build_reference(domain, scoring=max(1, common.get("common_seeds") or 1))
    used = {reference.seed, *reference.scoring_seeds}
    fresh_seeds = [s for s in range(FIRST_FRESH_SEED, FIRST_FRESH_SEED + seeds + len(used))
                   if s not in used][:seeds]  # fmt: skip
    fresh_reference = attrs.evolve(reference, scoring_seeds=fresh_seeds)
    evaluator = Evaluator(domain, workers=workers)
    try:
        scores = asyncio.run(score_texts(evaluator, [e["text"] for e in entries], fresh_reference))
    finally:
        evaluator.close()
    shift, variance = 0.0, 0.0
    for entry in entries:
        score = scores[entry["text"]]
        if score.mean is None:
            continue
        shift += score.mean - entry["common_fitness"]
        variance += (score.std or 0.0) ** 2 / len(score.values)
    fresh_sem = math.sqrt(variance)
    # The seeds are shared by every elite: the error of a QD-score comes from per-seed totals
    # (as the run's own qd_score_sem), unless an evaluation failed.
    if len(fresh_seeds) > 1 and all(scores[e["text"]].complete for e in entries):
        totals = [sum(column) for column in zip(*(scores[e["text"]].values for e in entries),
                                                strict=True)]  # fmt: skip
        fresh_sem = statistics.stdev(totals) / math.sqrt(len(totals))
    reported_sem = common.get("qd_score_sem") or 0.0
    combined = math.sqrt(reported_sem**2 + fresh_sem**2)
    return {
        "run": str(run_dir),
        "elites": len(entries),
        "common_seeds": common.get("common_seeds"),
        "fresh_seeds": len(fresh_seeds),
        "reported_qd": common["qd_score"],
        "reported_sem": common.get("qd_score_sem"),
        "fresh_qd": common["qd_score"] + shift,
        "fresh_sem": fresh_sem,
        "difference": shift,
        "z": shift / combined if combined else None,
        "selection_qd": (
            common["qd_score"] + common["selection_qd_gap"]
            if common.get("selection_qd_gap") is not None
            else None
        ),  # fmt: skip
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="run or experiment directories")
    parser.add_argument("--seeds", type=int, default=10, help="fresh seeds per elite")
    parser.add_argument("--workers", type=int, default=0, help="evaluation worker processes")
    args = parser.parse_args()
    runs = [remeasure(path, args.seeds, workers=args.workers) for path in run_dirs(args.dirs)]
    within = [abs(r["z"]) <= 2 for r in runs if r["z"] is not None]
    print(json.dumps({"runs": runs, "n_runs": len(runs),
                      "within_2_standard_errors": sum(within),
                      "mean_difference": (sum(r["difference"] for r in runs) / len(runs)
                                          if runs else None)}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
