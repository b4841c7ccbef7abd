"""Figure set ``common_remeasure``: does the families experiment's common QD-score re-measure?

Runs ``benchmarks/common_remeasure.py`` on every run of the families experiment
(``docs/example-report/families``, written by ``docs/figures/families.py``): each merged elite
is scored again on fresh seeds of its own, none used by the run, and the fresh common QD-score
is set against the reported one and its standard error. Usage::

    python docs/figures/common_remeasure.py                 # 10 fresh seeds per elite
    python docs/figures/common_remeasure.py --seeds 20 --workers 2
    python docs/figures/render.py                           # then render the docs

The verdict (:func:`verdict`) is stated in the docs as it comes out: the check **passes** when
the differences show no common shift (the pooled z = sum of z / sqrt(n) lies within ±2) and
the runs within two standard errors of their reported figure are not significantly fewer than
the 95 % an unbiased measure gives (exact one-sided binomial p ≥ 0.05). The literal reading
"every run within its reported standard error" cannot hold even for an unbiased measure (the
fresh measurement has an error of its own); the share that does is shown beside the share
expected without bias.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import (  # noqa: E402
    ROOT,
    command_text,
    fmt_number,
    fmt_p,
    markdown_table,
    previous_record,
    repo_relative,
    run_benchmark,
    write_figure_set,
)

#: The experiment re-measured (the families figure set's).
EXPERIMENT = "docs/example-report/families"
#: |z| within which a run counts as agreeing, and the share of runs expected within it.
Z_LIMIT = 2.0
EXPECTED_WITHIN = 0.9545


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), exactly."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def verdict(data: Mapping[str, Any]) -> dict[str, Any]:
    """Whether the re-measurement agrees with the reported figures (see the module doc)."""
    n, within = data["n_runs"], data["within_2_standard_errors"]
    p_few = binomial_cdf(within, n, EXPECTED_WITHIN) if n else None
    pooled = data.get("pooled_z")
    passes = bool(n) and pooled is not None and abs(pooled) <= Z_LIMIT and p_few >= 0.05
    return {"passes": passes, "p_too_few_within": p_few}


def run_label(run: str) -> tuple[str, str]:
    """``(condition, repeat)`` of a run directory ``.../<condition>/repeat-<k>``."""
    parts = Path(run).parts
    return parts[-2], parts[-1].removeprefix("repeat-")


def runs_table(runs: Sequence[Mapping[str, Any]]) -> str:
    """One row per run: reported QD ± its standard error, fresh QD ± its, difference, z."""
    rows = []
    for run in runs:
        condition, repeat = run_label(run["run"])
        rows.append(
            [
                condition,
                repeat,
                str(run["elites"]),
                f"{fmt_number(run['reported_qd'])} ± {fmt_number(run['reported_sem'])}",
                f"{fmt_number(run['fresh_qd'])} ± {fmt_number(run['fresh_sem'])}",
                fmt_number(run["difference"], signed=True),
                fmt_number(run["z"], signed=True),
                "yes" if run["within_reported_sem"] else "no",
            ]
        )
    header = [
        "condition",
        "repeat",
        "elites",
        "reported QD ± sem",
        "fresh QD ± sem",
        "fresh − reported",
        "z",
        "within reported sem",
    ]
    return markdown_table(header, rows)


def reported_spread(runs: Sequence[Mapping[str, Any]]) -> float | None:
    """The spread an experiment report gives a condition's common QD-score: the sample standard
    deviation of the runs' reported values (``None`` below two runs)."""
    values = [r["reported_qd"] for r in runs]
    return statistics.stdev(values) if len(values) > 1 else None


def conditions_below_spread(runs: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """How many conditions' mean change (fresh − reported) is smaller than their reported
    spread, out of how many conditions with a spread."""
    by_condition: dict[str, list[Mapping[str, Any]]] = {}
    for run in runs:
        by_condition.setdefault(run_label(run["run"])[0], []).append(run)
    below = total = 0
    for mine in by_condition.values():
        spread = reported_spread(mine)
        if spread is None:
            continue
        total += 1
        below += abs(sum(r["difference"] for r in mine) / len(mine)) < spread
    return below, total


def conditions_table(runs: Sequence[Mapping[str, Any]]) -> str:
    """Per condition: runs, mean difference ± its standard error, pooled z, runs within 2 sem."""
    by_condition: dict[str, list[Mapping[str, Any]]] = {}
    for run in runs:
        by_condition.setdefault(run_label(run["run"])[0], []).append(run)
    rows = []
    for condition, mine in by_condition.items():
        n = len(mine)
        variance = sum(r["reported_sem"] ** 2 + r["fresh_sem"] ** 2 for r in mine)
        zs = [r["z"] for r in mine if r["z"] is not None]
        spread = reported_spread(mine)
        shift = sum(r["difference"] for r in mine) / n
        rows.append(
            [
                condition,
                str(n),
                f"{fmt_number(shift, signed=True)} ± {fmt_number(math.sqrt(variance) / n)}",
                fmt_number(spread) if spread is not None else "–",
                ("yes" if abs(shift) < spread else "**no**") if spread is not None else "–",
                fmt_number(sum(zs) / math.sqrt(len(zs)), signed=True) if zs else "–",
                f"{sum(abs(z) <= Z_LIMIT for z in zs)} of {len(zs)}",
                f"{sum(r['within_reported_sem'] for r in mine)} of {n}",
            ]
        )
    header = [
        "condition",
        "runs",
        "mean fresh − reported ± se",
        "reported spread (std over runs)",
        "change below spread",
        "pooled z",
        "within 2 se",
        "within reported sem",
    ]
    return markdown_table(header, rows)


def summary_sentence(data: Mapping[str, Any]) -> str:
    """One sentence: what the re-measurement shows, and whether the check passes."""
    n = data["n_runs"]
    judged = verdict(data)
    below, total = conditions_below_spread(data["runs"])
    outcome = "**the check passes**" if judged["passes"] else "**the check fails**"
    return (
        f"Re-measured on {data['fresh_seeds']} fresh seeds per elite, the {n} runs' common "
        f"QD-scores moved by {fmt_number(data['mean_difference'], signed=True)} on average "
        f"(standard error {fmt_number(data['mean_difference_sem'])}; pooled z "
        f"{fmt_number(data['pooled_z'], signed=True)}; {data['negative_differences']} of {n} "
        f"lower); {data['within_2_standard_errors']} of {n} runs lie within two standard "
        f"errors (an unbiased measure: 95 %; chance of so few or fewer: p = "
        f"{fmt_p(judged['p_too_few_within'])}) and {data['within_reported_sem']} of {n} "
        f"within their reported standard error "
        f"({fmt_number(data['expected_within_reported_sem'], 1)} expected if nothing is "
        f"biased): {outcome}. Per condition, the mean change is smaller than the spread the "
        f"experiment report gives (std over runs) in {below} of {total} conditions."
    )


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    per_condition = {}
    for condition in dict.fromkeys(run_label(r["run"])[0] for r in data["runs"]):
        mine = [r for r in data["runs"] if run_label(r["run"])[0] == condition]
        zs = [r["z"] for r in mine if r["z"] is not None]
        error = math.sqrt(sum(r["reported_sem"] ** 2 + r["fresh_sem"] ** 2 for r in mine))
        per_condition[f"{condition}.mean-difference"] = (
            f"{fmt_number(sum(r['difference'] for r in mine) / len(mine), signed=True)} ± "
            f"{fmt_number(error / len(mine))}"
        )
        per_condition[f"{condition}.pooled-z"] = (
            fmt_number(sum(zs) / math.sqrt(len(zs)), signed=True) if zs else "–"
        )
        per_condition[f"{condition}.runs"] = str(len(mine))
    return {
        **per_condition,
        "conditions-below-spread": "{} of {}".format(*conditions_below_spread(data["runs"])),
        "outside-2-se": str(data["n_runs"] - data["within_2_standard_errors"]),
        "n-runs": str(data["n_runs"]),
        "p-too-few-within": fmt_p(verdict(data)["p_too_few_within"]),
        "runs": runs_table(data["runs"]),
        "by-condition": conditions_table(data["runs"]),
        "summary": summary_sentence(data),
        "verdict": "passes" if verdict(data)["passes"] else "fails",
        "experiment-commit": (data.get("experiment_commit") or "unknown")[:7],
        "fresh-seeds": str(data["fresh_seeds"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="fresh seeds per elite (default 10)")
    parser.add_argument("--workers", type=int, default=1, help="evaluation processes (default 1)")
    parser.add_argument(
        "--experiment", default=EXPERIMENT, help=f"experiment directory (default {EXPERIMENT})"
    )
    args = parser.parse_args(argv)
    experiment = ROOT / args.experiment
    if not (experiment / "experiment.json").is_file():
        raise SystemExit(
            f"error: {repo_relative(experiment)} is no finished experiment; "
            "run python docs/figures/families.py first"
        )
    command = [
        sys.executable,
        "benchmarks/common_remeasure.py",
        repo_relative(experiment),
        "--seeds",
        str(args.seeds),
        "--workers",
        str(args.workers),
    ]
    result, timing = run_benchmark(command)
    for run in result["runs"]:
        run["run"] = repo_relative(Path(run["run"]))
    families = previous_record("families") or {}
    data = {
        **result,
        "fresh_seeds": args.seeds,
        "experiment": repo_relative(experiment),
        # The commit the re-measured experiment ran at (the families set's record).
        "experiment_commit": (families.get("git") or {}).get("commit")
        if args.experiment == EXPERIMENT
        else None,
    }
    write_figure_set(
        "common_remeasure",
        commands=[command_text(["python", *command[1:]])],
        data=data,
        n=f"{result['n_runs']} runs (every condition and repeat of {repo_relative(experiment)}); "
        f"{args.seeds} fresh seeds per elite",
        spread="standard errors over scoring seeds (per-elite variances summed); z of a "
        "difference over both standard errors",
        timings=[timing],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
