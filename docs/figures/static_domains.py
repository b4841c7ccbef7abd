"""Figure set ``static_domains``: the DEI question on static-objective domains.

Runs ``dei experiment`` with continual archives (a round is a migration interval: each node
keeps its archive and offers its peers its round champion) on the project's two static
domains, then extracts the conditions and comparisons into ``docs/figures/static_domains.json``:

* ``numeric`` (``plugins/numeric``: shifted sphere, 20 dimensions, 100 x 100 grid) with its two
  offline operators ``gaussian`` and ``iso-line``: Solo, a Homo per operator, Diverse;
* ``symreg`` (``examples/symreg``) has one offline operator, ``symreg-gp``: Solo against Homo
  only (a Diverse condition needs a second operator). The experiment compares Diverse with the
  others; Homo − Solo is computed here with the experiment's own statistics
  (:func:`dei_framework.analysis.stats.compare`, Holm within each metric).

Usage::

    python docs/figures/static_domains.py                 # the documented runs
    python docs/figures/static_domains.py --quick         # a tiny run that tests the pipeline
    python docs/figures/static_domains.py --extract-only  # re-read the finished experiments
    python docs/figures/render.py                         # then render the docs

The experiments go to ``runs/figures-static-<domain>`` (``-quick`` for a quick run), trimmed to
what the figures read; a quick run is marked ``quick`` in the JSON (the docs then say so).
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

from figurelib import (  # noqa: E402
    ROOT,
    Column,
    command_text,
    comparison,
    comparison_values,
    comparisons_table,
    conditions_table,
    extract_experiment,
    fmt_number,
    fmt_p,
    fmt_percent,
    methods_text,
    previous_record,
    run_command,
    shell_lines,
    trim_runs,
    write_figure_set,
)

SEED = 100
#: Per domain: its operators, conditions and (documented, quick) settings. Numeric
#: evaluations cost microseconds, so its budget is the issue's 4 nodes x 8 000 calls; symreg's
#: evaluations are dearer and its grid small.
EXPERIMENTS: dict[str, dict[str, Any]] = {
    "numeric": {
        "operators": ("gaussian", "iso-line"),
        "conditions": "solo,homo,diverse",
        "full": {"budget": 8000, "rounds": 4, "repeats": 5},
        "quick": {"budget": 400, "rounds": 2, "repeats": 2},
    },
    "symreg": {
        "operators": ("symreg-gp",),
        "conditions": "solo,homo",
        "full": {"budget": 2000, "rounds": 4, "repeats": 10},
        "quick": {"budget": 200, "rounds": 2, "repeats": 2},
    },
}
COLUMNS: tuple[Column, ...] = (
    ("coverage (common)", "merged.common.coverage", True),
    ("QD-score (common)", "merged.common.qd_score", False),
    ("coverage (raw)", "merged.coverage", True),
    ("QD-score (raw)", "merged.qd_score", False),
)
COMMON: tuple[Column, ...] = COLUMNS[:2]
RAW: tuple[Column, ...] = COLUMNS[2:]
#: Below this Holm-adjusted p-value a difference counts as a win or a loss in the reading.
ALPHA = 0.05


def out_dir(domain: str, quick: bool) -> str:
    return f"runs/figures-static-{domain}" + ("-quick" if quick else "")


def experiment_command(domain: str, *, quick: bool, eval_workers: int) -> list[str]:
    """The ``dei experiment`` command line of ``domain``'s experiment."""
    plan = EXPERIMENTS[domain]
    settings = plan["quick" if quick else "full"]
    command = ["dei", "experiment", "--domain", domain]
    for operator in plan["operators"]:
        command += ["--operator", operator]
    command += [
        "--conditions",
        plan["conditions"],
        "--lifecycle",
        "continual",
        "--budget",
        str(settings["budget"]),
        "--rounds",
        str(settings["rounds"]),
        "--repeats",
        str(settings["repeats"]),
        "--seed",
        str(SEED),
        "--eval-workers",
        str(eval_workers),
        "--out",
        out_dir(domain, quick),
        "--progress",
        "quiet",
        "--no-report",
    ]
    return command


# --- extraction ------------------------------------------------------------------------------


def homo_vs_solo(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Homo − Solo on the compared metrics, for an experiment without Diverse (the summary
    then has no comparisons): the experiment's own test, interval, A12 and Holm adjustment."""
    from dei_framework.analysis.stats import compare, holm
    from dei_framework.experiment.summary import COMPARED_METRICS, metric_values

    conditions = summary["conditions"]
    if "homo" not in conditions or "solo" not in conditions:
        return []
    entries = []
    for metric in COMPARED_METRICS:
        entry = compare(
            "homo",
            metric_values(conditions["homo"], metric),
            "solo",
            metric_values(conditions["solo"], metric),
            metric,
        )
        entry["p_holm"] = holm([entry["p_value"]])[0]  # a family of one per metric
        entries.append(comparison(entry))
    return entries


def sharing(out: Path) -> dict[str, dict[str, float]]:
    """Per condition, champions published and accepted per run (summed over nodes), the mean
    over repeats: evidence that champions cross between nodes in continual mode."""
    totals: dict[str, dict[str, float]] = {}
    for run in sorted(out.glob("*/repeat-*")):
        summary = json.loads((run / "summary.json").read_text())
        nodes = summary.get("nodes") or {}
        counts = [node.get("sharing") or {} for node in nodes.values()]
        condition = totals.setdefault(run.parent.name, {"published": 0, "accepted": 0, "runs": 0})
        condition["published"] += sum(c.get("published", 0) for c in counts)
        condition["accepted"] += sum(c.get("accepted", 0) for c in counts)
        condition["runs"] += 1
    return {
        name: {
            "published": c["published"] / c["runs"],
            "accepted": c["accepted"] / c["runs"],
            "runs": c["runs"],
        }
        for name, c in totals.items()
    }


def extract(domain: str, out: Path) -> dict[str, Any]:
    """The figures' data of one domain's finished experiment in ``out``."""
    summary = json.loads((out / "summary.json").read_text())
    data = extract_experiment(summary, COLUMNS)
    if not data["comparisons"]:
        data["comparisons"] = homo_vs_solo(summary)
    config = json.loads(next(out.glob("*/repeat-0/config.json")).read_text())
    data["domain"] = domain
    data["lifecycle"] = config.get("lifecycle")
    data["sharing_policy"] = config.get("sharing")
    data["sharing"] = sharing(out)
    return data


# --- layout ----------------------------------------------------------------------------------


def reference_of(data: Mapping[str, Any]) -> str:
    """The condition the comparisons are of: ``diverse`` or, without it, ``homo``."""
    return "diverse" if "diverse" in data["conditions"] else "homo"


def reading(data: Mapping[str, Any]) -> str:
    """One sentence per comparison on common ground: higher, lower or no significant
    difference at Holm-adjusted p < :data:`ALPHA` (the verdict follows the generated numbers)."""
    reference = reference_of(data)
    lines = []
    for label, metric, percent in COMMON:
        for entry in data["comparisons"]:
            if entry["a"] != reference or entry["metric"] != metric or entry["diff"] is None:
                continue
            p = entry.get("p_holm")
            if p is not None and p < ALPHA:
                verdict = "**higher**" if entry["diff"] > 0 else "**lower**"
            else:
                verdict = "**no significant difference**"
            shown = (
                fmt_percent(entry["diff"], 1, signed=True)
                if percent
                else fmt_number(entry["diff"], 2, signed=True)
            )
            holm_text = fmt_p(p) if fmt_p(p).startswith("<") else f"= {fmt_p(p)}"
            lines.append(
                f"- {label}, {reference.capitalize()} − {entry['b']}: {shown} "
                f"(Holm p {holm_text}, A12 = {fmt_number(entry.get('a12'), 2)}, "
                f"n = {entry['n_a']} + {entry['n_b']} repeats) — {verdict}"
            )
    return "\n".join(lines) or "- no comparison (fewer than two repeats)"


def tally(data: Mapping[str, Any]) -> str:
    """``wins 1, loses 2, ties 3`` of the reference condition over its common-ground
    comparisons (Holm-adjusted p < :data:`ALPHA`)."""
    reference = reference_of(data)
    counts = {"wins": 0, "loses": 0, "ties": 0}
    common = {metric for _, metric, _ in COMMON}
    for entry in data["comparisons"]:
        if entry["a"] != reference or entry["metric"] not in common or entry["diff"] is None:
            continue
        p = entry.get("p_holm")
        key = "ties" if p is None or p >= ALPHA else ("wins" if entry["diff"] > 0 else "loses")
        counts[key] += 1
    return ", ".join(f"{key} {value}" for key, value in counts.items())


def sharing_text(data: Mapping[str, Any]) -> str:
    """Champions accepted per run in each multi-node condition (Solo has no peers)."""
    parts = [
        f"{name} {fmt_number(counts['accepted'], 1)}"
        for name, counts in data["sharing"].items()
        if name != "solo"
    ]
    return ", ".join(parts) or "none"


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    values: dict[str, str] = {}
    for domain, block in data.items():
        reference = reference_of(block)
        seeds = block.get("seeds") or []
        values |= {
            f"{domain}.repeats": str(block.get("repeats")),
            f"{domain}.seeds": f"{seeds[0]}–{seeds[-1]}" if seeds else "–",
            f"{domain}.budget": str(block.get("budget")),
            f"{domain}.rounds": str(block.get("rounds")),
            f"{domain}.lifecycle": str(block.get("lifecycle")),
            f"{domain}.equal-compute": "held" if block.get("equal_compute") else "did not hold",
            f"{domain}.accepted": sharing_text(block),
            f"{domain}.tally": tally(block),
            f"{domain}.command": "```sh\n" + shell_lines(block.get("command", "")) + "\n```",
            f"{domain}.conditions": conditions_table(block, COLUMNS),
            f"{domain}.vs-common": comparisons_table(block, COMMON, reference=reference),
            f"{domain}.vs-raw": comparisons_table(block, RAW, reference=reference),
            f"{domain}.reading": reading(block),
            f"{domain}.methods": methods_text(block),
        }
        values |= {
            f"{domain}.{key}": value
            for key, value in comparison_values(block, reference=reference).items()
        }
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny runs that test the pipeline")
    parser.add_argument(
        "--eval-workers",
        type=int,
        default=0,
        help="evaluation processes per run (default 0: in-process, fastest for cheap domains)",
    )
    parser.add_argument(
        "--domains",
        nargs="+",
        choices=list(EXPERIMENTS),
        default=list(EXPERIMENTS),
        help="run only these; the others are re-read from their experiment folders",
    )
    parser.add_argument(
        "--extract-only", action="store_true", help="run nothing; re-read the experiments"
    )
    args = parser.parse_args(argv)
    previous = previous_record("static_domains")
    data: dict[str, Any] = {}
    commands: list[str] = []
    timings: list[dict[str, Any]] = []
    reread = set(EXPERIMENTS) if args.extract_only else set(EXPERIMENTS) - set(args.domains)
    for domain in EXPERIMENTS:
        command = experiment_command(domain, quick=args.quick, eval_workers=args.eval_workers)
        out = ROOT / out_dir(domain, args.quick)
        if domain not in reread:
            if out.exists():
                shutil.rmtree(out)  # the folder is this script's scratch (runs/ is not tracked)
            timings.append(run_command(command))
            trim_runs(out)
        elif not (out / "summary.json").is_file():
            raise SystemExit(f"error: {out} has no summary.json; run without --extract-only")
        data[domain] = extract(domain, out) | {"command": command_text(command)}
        commands.append(command_text(command))
    totals = git = None
    if reread == set(EXPERIMENTS) and previous and previous.get("commands") == commands:
        # A pure re-reading: keep the runs' cost and commit, not this re-reading's.
        timings, totals, git = previous["timings"], previous.get("totals"), previous.get("git")
    repeats = ", ".join(f"{domain} {block['repeats']}" for domain, block in data.items())
    write_figure_set(
        "static_domains",
        commands=commands,
        data=data,
        n=f"repeats per condition: {repeats} (seeds from {SEED})",
        spread="mean ± sample std over repeats; differences of means, Hodges–Lehmann shift "
        "with its exact interval, A12, exact Mann–Whitney p and Holm-adjusted p",
        quick=args.quick,
        timings=timings,
        totals=totals,
        git=git,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
