"""Figure set ``plan``: does ``dei plan``'s pick hold up in an experiment? (docs/adaptive.md)

Runs ``dei plan`` on the four Core War families with K = 2 (pilots within a stated budget),
then ``dei experiment`` with every pair of families as a condition (the pick among them), at
equal compute and with the settings of the ``families`` set, and reports each pair's merged
common-ground coverage and QD-score, and the pick against the best and the worst pair (exact
Mann-Whitney, Hodges-Lehmann shift, A12, Holm over the two comparisons), into
``docs/figures/plan.json``. Usage::

    python docs/figures/plan.py                  # the documented run: 10 repeats
    python docs/figures/plan.py --quick          # a tiny run that tests the pipeline
    python docs/figures/plan.py --extract-only   # re-read an existing plan and experiment
    python docs/figures/render.py                # then render the docs

Everything goes to ``runs/figures-plan`` (``runs/figures-plan-quick`` for a quick run, marked
``quick`` in the JSON): ``plan/`` (the pilots and ``plan.json``) and ``experiment/``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import (  # noqa: E402
    ROOT,
    command_text,
    comparison,
    difference,
    field,
    fmt_mean_std,
    fmt_number,
    fmt_p,
    fmt_percent,
    markdown_table,
    methods_text,
    previous_record,
    repo_relative,
    run_command,
    shell_lines,
    stat,
    write_figure_set,
)

from dei_framework.analysis.stats import compare, holm  # noqa: E402

FAMILIES = ("bombers", "papers", "scanners", "imps")
PICK = 2
SETTINGS = {
    "full": {
        "pilot_budget": 160,
        "pilot_rounds": 2,
        "budget": 640,
        "rounds": 10,
        "domain_rounds": 4,
        "cycles": 8000,
        "repeats": 10,
        "out": "runs/figures-plan",
    },
    "quick": {
        "pilot_budget": 16,
        "pilot_rounds": 2,
        "budget": 32,
        "rounds": 2,
        "domain_rounds": 2,
        "cycles": 2000,
        "repeats": 2,
        "out": "runs/figures-plan-quick",
    },
}
SEED = 100
METRICS = (
    ("coverage (common)", "merged.common.coverage", True),
    ("QD-score (common)", "merged.common.qd_score", False),
)


def _domain_options(settings: Mapping[str, Any]) -> list[str]:
    return [
        "--domain-option",
        f"rounds={settings['domain_rounds']}",
        "--domain-option",
        f"cycles={settings['cycles']}",
        "--domain-option",
        f"generality_rounds={settings['domain_rounds']}",
    ]


def plan_command(settings: Mapping[str, Any], out: str) -> list[str]:
    """The ``dei plan`` command line."""
    command = ["dei", "plan", "--domain", "coreware"]
    for family in FAMILIES:
        command += ["--operator", family]
    command += ["--pick", str(PICK), "--pilot-budget", str(settings["pilot_budget"])]
    command += ["--rounds", str(settings["pilot_rounds"]), "--seed", str(SEED)]
    return [*command, *_domain_options(settings), "--eval-workers", "1", "--out", out]


def pairs() -> list[tuple[str, str]]:
    return list(itertools.combinations(FAMILIES, PICK))


def pair_name(pair: Sequence[str]) -> str:
    return "+".join(pair)


def experiment_command(settings: Mapping[str, Any], *, repeats: int, out: str) -> list[str]:
    """The ``dei experiment`` of every pair (one custom condition each)."""
    command = ["dei", "experiment", "--domain", "coreware"]
    for family in FAMILIES:
        command += ["--operator", family]
    for pair in pairs():
        command += ["--condition", f"{pair_name(pair)}={','.join(pair)}"]
    command += ["--budget", str(settings["budget"]), "--rounds", str(settings["rounds"])]
    command += ["--repeats", str(repeats), "--seed", str(SEED), *_domain_options(settings)]
    return [*command, "--eval-workers", "1", "--out", out, "--progress", "quiet"]


def extract(plan: Mapping[str, Any], summary: Mapping[str, Any]) -> dict[str, Any]:
    """Each pair's figures, the pick, the best and worst pair, and the two comparisons."""
    chosen = pair_name(plan["chosen"]["operators"])
    conditions = {
        name: {path: stat(field(block, path)) for _, path, _ in METRICS}
        for name, block in summary["conditions"].items()
    }
    coverage = "merged.common.coverage"

    def mean(name: str) -> float:
        return (conditions[name][coverage] or {}).get("mean") or 0.0

    others = [name for name in conditions if name != chosen]
    best = max(others, key=mean)
    worst = min(others, key=mean)
    comparisons = []
    for _, path, _ in METRICS:
        family = [
            compare(
                chosen,
                conditions[chosen][path]["values"],
                other,
                conditions[other][path]["values"],
                path,
            )
            for other in (best, worst)
        ]
        for entry, adjusted in zip(family, holm([e["p_value"] for e in family]), strict=True):
            entry["p_holm"] = adjusted
            comparisons.append(comparison(entry))
    return {
        "pilot_budget": plan["pilot_budget"],
        "pilot_spent": plan["pilot_spent"],
        "predicted": {pair_name(r["operators"]): r["coverage"] for r in plan["ranked"]},
        "chosen": chosen,
        "best_other": best,
        "worst_other": worst,
        "budget": summary.get("budget"),
        "rounds": summary.get("rounds"),
        "repeats": summary.get("repeats"),
        "seeds": summary.get("seeds"),
        "equal_compute": summary.get("equal_compute"),
        "conditions": conditions,
        "comparisons": comparisons,
    }


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    seeds = data.get("seeds") or []
    values = {
        "repeats": str(data.get("repeats")),
        "seeds": f"{seeds[0]}–{seeds[-1]}" if seeds else "–",
        "pilot-budget": str(data["pilot_budget"]),
        "budget": str(data.get("budget")),
        "chosen": f"`{data['chosen']}`",
        "best-other": f"`{data['best_other']}`",
        "worst-other": f"`{data['worst_other']}`",
        "equal-compute": "held" if data.get("equal_compute") else "did not hold",
    }
    values["commands"] = "```sh\n" + "\n".join(shell_lines(c) for c in data["commands"]) + "\n```"
    ranked = sorted(
        data["conditions"],
        key=lambda name: (
            -(data["conditions"][name]["merged.common.coverage"] or {}).get("mean", 0.0)
        ),
    )
    rows = []
    for rank, name in enumerate(ranked, 1):
        block = data["conditions"][name]
        label = f"**{name}** (pick)" if name == data["chosen"] else name
        rows.append(
            [
                str(rank),
                label,
                fmt_percent(data["predicted"].get(name)),
                *(fmt_mean_std(block[path], percent=percent) for _, path, percent in METRICS),
            ]
        )
    values["pick-rank"] = f"{ranked.index(data['chosen']) + 1} of {len(ranked)}"
    for key, other in (("best", data["best_other"]), ("worst", data["worst_other"])):
        for short, (_, path, percent) in zip(("coverage", "qd"), METRICS, strict=True):
            entry = next(e for e in data["comparisons"] if e["b"] == other and e["metric"] == path)
            values[f"pick-{key}.{short}.ci"] = difference(entry, percent)
            values[f"pick-{key}.{short}.p_holm"] = fmt_p(entry["p_holm"])
    values["pairs"] = markdown_table(
        ["rank", "pair", "pilots' expected coverage", *(label for label, _, _ in METRICS)], rows
    )
    header = ["pick −"]
    for label, _, _ in METRICS:
        header += [label, "p (Holm)", "A12"]
    lines = []
    for other in (data["best_other"], data["worst_other"]):
        role = "best other pair" if other == data["best_other"] else "worst other pair"
        cells = [f"{other} ({role})"]
        for _, path, percent in METRICS:
            entry = next(e for e in data["comparisons"] if e["b"] == other and e["metric"] == path)
            cells += [difference(entry, percent), fmt_p(entry["p_holm"]), fmt_number(entry["a12"])]
        lines.append(cells)
    values["pick-vs-best-worst"] = markdown_table(header, lines)
    values["methods"] = methods_text(data)
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run to test the pipeline")
    parser.add_argument("--repeats", type=int, help="repeats per pair (default 10; quick 2)")
    parser.add_argument(
        "--extract-only", action="store_true", help="run nothing; re-read the runs in the folder"
    )
    args = parser.parse_args(argv)
    settings = SETTINGS["quick" if args.quick else "full"]
    repeats = args.repeats or settings["repeats"]
    out = ROOT / settings["out"]
    commands = [
        plan_command(settings, repo_relative(out / "plan")),
        experiment_command(settings, repeats=repeats, out=repo_relative(out / "experiment")),
    ]
    timings: list[dict[str, Any]] = []
    totals = git = None
    if not args.extract_only:
        if out.exists() and args.quick:
            shutil.rmtree(out)  # a quick run's folder is scratch
        if out.exists():
            raise SystemExit(
                f"error: {out} exists; remove it for a fresh run, or pass --extract-only"
            )
        timings = [run_command(command) for command in commands]
    plan = json.loads((out / "plan" / "plan.json").read_text())
    summary = json.loads((out / "experiment" / "summary.json").read_text())
    data = extract(plan, summary)
    texts = [command_text(command) for command in commands]
    previous = previous_record("plan")
    if args.extract_only and previous and previous["commands"] == texts:
        timings, totals, git = previous["timings"], previous.get("totals"), previous.get("git")
    data["commands"] = texts
    write_figure_set(
        "plan",
        commands=texts,
        data=data,
        n=f"{data['repeats']} repeats per pair (seeds {figures(data)['seeds']})",
        totals=totals,
        git=git,
        spread="mean ± sample std over repeats; the pick against the best other and the worst "
        "pair with the interval and test named in each comparison, Holm over the two",
        quick=args.quick,
        timings=timings,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
