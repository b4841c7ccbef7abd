"""Check: re-measure the common-ground elites of finished runs on fresh seeds; prints JSON.

Common ground chooses each cell's elite on one measurement and reports the mean of K other,
fresh ones, every program on seeds of its own (``dei_framework/analysis/common_ground.py``). If
that removes the winner's curse, scoring the same elites on further seeds — none of them used by
the run — must give the same common QD-score up to measurement noise. For every run directory given
(or every run of an experiment directory), this script re-evaluates each elite of
``merged_archive.json`` against the run's reference set with ``--seeds`` fresh seeds of its
own (hashes of the elite's text and fresh bases derived from the reference set with the
purpose ``remeasure``, never one of the seeds the run measured that text with) and compares:

* ``reported_qd`` / ``reported_sem``: the run's ``merged.common.qd_score`` and its standard
  error from its K seeds (``qd_score_sem``);
* ``fresh_qd`` / ``fresh_sem``: the same elites' QD-score on the fresh seeds, and its standard
  error by the same formula (:func:`dei_framework.analysis.common_ground.scoring_spread`: per-elite
  variances over seeds, divided by the seeds, summed — the elites' seeds are their own, so their
  errors are independent);
* ``difference`` = fresh − reported, ``z`` = difference / sqrt(reported_sem² + fresh_sem²) (the
  two measurements use disjoint seeds, so their errors are independent too);
* ``within_reported_sem``: whether |difference| < reported_sem (the literal criterion of
  issue 22), and ``p_within_if_unbiased``: how often that holds when nothing is biased
  (``P(|Z| < reported_sem / sqrt(reported_sem² + fresh_sem²))``, Z standard normal);
* ``selection_qd``: the QD-score on the selection measurement (biased upward), for contrast.

Over all runs it prints ``mean_difference`` and its standard error (the runs are independent:
no seed is shared between elites) and ``pooled_z`` = sum of z / sqrt(n): a bias common to the
runs shows there even when no single run's z does.

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

from dei_framework.analysis.common_ground import (
    build_reference,
    score_with_seeds,
    scoring_seeds,
    scoring_spread,
    text_seeds,
)
from dei_framework.contract.context import FactoryContext
from dei_framework.evaluation.local import Evaluator
from dei_framework.plugin.manager import PluginRegistry, load_plugins
from dei_framework.runtime.files.run_dir import RunDir

#: The purpose the fresh bases are derived with (the run's are ``score``).
FRESH_PURPOSE = "remeasure"


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
    """Re-measures one finished run's common-ground elites on ``seeds`` fresh seeds each."""
    registry = registry or load_plugins()
    config = RunDir(run_dir).read_config()
    summary = json.loads((run_dir / "summary.json").read_text())
    common = summary["merged"].get("common")
    if common is None:
        raise SystemExit(f"{run_dir}: no common ground measured")
    entries = json.loads((run_dir / "merged_archive.json").read_text())
    domain = registry.domain(config.domain).factory(
        FactoryContext(registry=registry, options=dict(config.domain_options), seed=config.seed)
    )
    reference = build_reference(domain, scoring=max(1, common.get("common_seeds") or 1))
    bases = scoring_seeds(reference.record["sha256"], seeds, reference.seed, purpose=FRESH_PURPOSE)
    fresh_seeds = {}
    for entry in entries:
        used = (reference.selection_seed(entry["text"]), *reference.seeds_for(entry["text"]))
        fresh_seeds[entry["text"]] = text_seeds(bases, entry["text"], exclude=used)
    evaluator = Evaluator(domain, workers=workers)
    try:
        scores = asyncio.run(score_with_seeds(evaluator, fresh_seeds, reference))
    finally:
        evaluator.close()
    fresh_entries, shift = [], 0.0
    for entry in entries:
        score = scores[entry["text"]]
        if score.mean is None:
            continue
        shift += score.mean - entry["common_fitness"]
        fresh_entries.append(
            {
                "common_fitness": score.mean,
                "common_fitness_std": score.std,
                "common_fitness_n": len(score.values),
                "selection_fitness": score.mean,
            }
        )
    # The run's formula (scoring_spread), so that the two errors are comparable.
    fresh_sem = scoring_spread(fresh_entries)["qd_score_sem"] or 0.0
    reported_sem = common.get("qd_score_sem") or 0.0
    combined = math.sqrt(reported_sem**2 + fresh_sem**2)
    return {
        "run": str(run_dir),
        "elites": len(entries),
        "remeasured": len(fresh_entries),
        "common_seeds": common.get("common_seeds"),
        "fresh_seeds": seeds,
        "reported_qd": common["qd_score"],
        "reported_sem": common.get("qd_score_sem"),
        "fresh_qd": common["qd_score"] + shift,
        "fresh_sem": fresh_sem,
        "difference": shift,
        "z": shift / combined if combined else None,
        "within_reported_sem": abs(shift) < reported_sem,
        "p_within_if_unbiased": (
            math.erf(reported_sem / combined / math.sqrt(2)) if combined else None
        ),
        "selection_qd": (
            common["qd_score"] + common["selection_qd_gap"]
            if common.get("selection_qd_gap") is not None
            else None
        ),
    }


def overall(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the runs say together: how many stay within their spread, and a common shift."""
    zs = [r["z"] for r in runs if r["z"] is not None]
    n = len(runs)
    variances = [
        r["reported_sem"] ** 2 + r["fresh_sem"] ** 2 for r in runs if r["reported_sem"] is not None
    ]
    return {
        "n_runs": n,
        "within_2_standard_errors": sum(abs(z) <= 2 for z in zs),
        "within_reported_sem": sum(r["within_reported_sem"] for r in runs),
        "expected_within_reported_sem": (
            sum(r["p_within_if_unbiased"] or 0.0 for r in runs) if runs else None
        ),
        "mean_difference": statistics.fmean(r["difference"] for r in runs) if runs else None,
        "mean_difference_sem": (
            math.sqrt(sum(variances)) / n if runs and len(variances) == n else None
        ),
        "pooled_z": sum(zs) / math.sqrt(len(zs)) if zs else None,
        "negative_differences": sum(r["difference"] < 0 for r in runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="run or experiment directories")
    parser.add_argument("--seeds", type=int, default=10, help="fresh seeds per elite")
    parser.add_argument("--workers", type=int, default=0, help="evaluation worker processes")
    args = parser.parse_args()
    runs = [remeasure(path, args.seeds, workers=args.workers) for path in run_dirs(args.dirs)]
    print(json.dumps({"runs": runs, **overall(runs)}, indent=1))


if __name__ == "__main__":
    main()
