"""Figure set ``migration``: does migration pay on a static domain (symreg)?

Four ``symreg-gp`` nodes with continual archives share an equal budget; what changes between
the settings is only how often they migrate (``--rounds``: a round is a migration interval, one
round is no migration at all) and what they send (``--sharing champion``: each node's round
champion; ``top-k`` with ``k = 50``: every elite, since the grid has 48 cells). One node with
the whole budget (Solo) is shown for reference. Every setting is one ``dei experiment`` with
the same seeds; each migrating setting is compared with no migration on the common-ground
merged coverage and QD-score (Hodges–Lehmann shift with its exact interval, exact
Mann–Whitney p, Holm-adjusted within each metric over the migrating settings, A12).

Usage::

    python docs/figures/migration.py                 # the documented runs (minutes)
    python docs/figures/migration.py --quick         # a tiny run that tests the pipeline
    python docs/figures/migration.py --extract-only  # re-read the finished experiments
    python docs/figures/render.py                    # then render the docs

The experiments go to ``runs/figures-migration`` (``-quick`` for a quick run).
"""

from __future__ import annotations

import argparse
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
    fmt_mean_std,
    fmt_number,
    fmt_p,
    markdown_table,
    previous_record,
    run_command,
    stat,
    trim_runs,
    write_figure_set,
)

SEED = 100
#: The settings: name → (sharing policy, rounds, sharing options). ``none`` is the baseline.
SETTINGS: dict[str, tuple[str, int, Mapping[str, int]]] = {
    "none": ("champion", 1, {}),
    "champion x2": ("champion", 2, {}),
    "champion x4": ("champion", 4, {}),
    "champion x8": ("champion", 8, {}),
    "all elites x4": ("top-k", 4, {"k": 50}),
    "all elites x8": ("top-k", 8, {"k": 50}),
}
BASELINE = "none"
SIZES = {"full": {"budget": 1600, "repeats": 10}, "quick": {"budget": 96, "repeats": 2}}
#: (label, dotted field of a condition's summary, shown as percent).
METRICS = (
    ("coverage (common)", "merged.common.coverage", True),
    ("QD-score (common)", "merged.common.qd_score", False),
)
ALPHA = 0.05


def out_root(quick: bool) -> Path:
    return ROOT / ("runs/figures-migration" + ("-quick" if quick else ""))


def slug(name: str) -> str:
    return name.replace(" ", "-")


def experiment_command(name: str, out: Path, *, quick: bool) -> list[str]:
    """The ``dei experiment`` command of one setting (the baseline also runs Solo)."""
    policy, rounds, options = SETTINGS[name]
    size = SIZES["quick" if quick else "full"]
    command = ["dei", "experiment", "--domain", "symreg", "--operator", "symreg-gp"]
    command += ["--conditions", "solo,homo" if name == BASELINE else "homo"]
    command += ["--lifecycle", "continual", "--sharing", policy, "--rounds", str(rounds)]
    if options:
        command += ["--config", str((out / f"{slug(name)}.toml").relative_to(ROOT))]
    command += ["--budget", str(size["budget"]), "--repeats", str(size["repeats"])]
    command += ["--seed", str(SEED), "--eval-workers", "0"]
    command += ["--out", str((out / slug(name)).relative_to(ROOT))]
    return command + ["--progress", "quiet", "--no-report"]


def write_options(name: str, out: Path) -> None:
    """The setting's ``[sharing_options]`` as the config file its command names."""
    options = SETTINGS[name][2]
    if options:
        lines = ["[sharing_options]", *(f"{key} = {value}" for key, value in options.items())]
        (out / f"{slug(name)}.toml").write_text("\n".join(lines) + "\n")


def condition_block(summary: Mapping[str, Any], condition: str) -> dict[str, Any]:
    block = summary["conditions"][condition]
    values: dict[str, Any] = {
        "operators": block.get("operators"),
        "nodes": block.get("nodes"),
        "n": block.get("repeats_completed"),
    }
    for _, path, _ in METRICS:
        node: Any = block
        for key in path.split("."):
            node = node.get(key) if isinstance(node, Mapping) else None
        values[path] = stat(node)
    return values


def extract(out: Path) -> dict[str, Any]:
    """Per setting its common-ground statistics; each migrating setting − no migration."""
    from dei_framework.analysis.stats import compare, holm

    conditions: dict[str, Any] = {}
    accepted: dict[str, float] = {}
    for name in SETTINGS:
        folder = out / slug(name)
        summary = json.loads((folder / "summary.json").read_text())
        if name == BASELINE:
            conditions["solo"] = condition_block(summary, "solo")
        conditions[name] = condition_block(summary, "homo")
        runs = sorted(folder.glob("homo/repeat-*/summary.json"))
        taken = [
            sum((node.get("sharing") or {}).get("accepted", 0) for node in nodes.values())
            for nodes in (json.loads(run.read_text()).get("nodes") or {} for run in runs)
        ]
        accepted[name] = sum(taken) / len(taken) if taken else 0.0
    comparisons = []
    for _, metric, _ in METRICS:
        family = [
            compare(
                name,
                conditions[name][metric]["values"],
                BASELINE,
                conditions[BASELINE][metric]["values"],
                metric,
            )
            for name in SETTINGS
            if name != BASELINE
        ]
        for entry, adjusted in zip(family, holm([e["p_value"] for e in family]), strict=True):
            comparisons.append(comparison(entry | {"p_holm": adjusted}) | {"family": "vs-none"})
    first = json.loads((out / slug(BASELINE) / "summary.json").read_text())
    return {
        "budget": first.get("budget"),
        "repeats": first.get("repeats"),
        "seeds": first.get("seeds"),
        "equal_compute": first.get("equal_compute"),
        "settings": {name: list(setting) for name, setting in SETTINGS.items()},
        "accepted": accepted,
        "conditions": conditions,
        "comparisons": comparisons,
    }


# --- layout ----------------------------------------------------------------------------------


def settings_table(data: Mapping[str, Any]) -> str:
    rows = []
    for name, block in data["conditions"].items():
        policy, rounds, options = data["settings"].get(name, ["–", 1, {}])
        sends = (
            "–"
            if name in ("solo", BASELINE)
            else ("every elite" if options.get("k", 0) >= 48 else "the round champion")
        )
        rows.append(
            [name, str(block["nodes"]), str(rounds), sends, str(block["n"])]
            + [fmt_mean_std(block[path], percent=percent) for _, path, percent in METRICS]
        )
    header = ["setting", "nodes", "rounds", "migrants", "n", *(label for label, _, _ in METRICS)]
    return markdown_table(header, rows)


def vs_table(data: Mapping[str, Any]) -> str:
    entries = {(e["a"], e["metric"]): e for e in data["comparisons"]}
    rows = []
    for name in data["settings"]:
        if name == BASELINE:
            continue
        row = [name]
        for _, metric, percent in METRICS:
            entry = entries[(name, metric)]
            row += [difference(entry, percent), fmt_p(entry["p"]), fmt_p(entry["p_holm"])]
            row += [fmt_number(entry["a12"], 2)]
        rows.append(row)
    header = ["− no migration"]
    for label, _, _ in METRICS:
        header += [label, "p", "p (Holm)", "A12"]
    return markdown_table(header, rows)


def reading(data: Mapping[str, Any]) -> str:
    """One line per comparison: higher, lower or no significant difference (Holm p < ALPHA)."""
    lines = []
    for label, metric, _ in METRICS:
        for entry in data["comparisons"]:
            if entry["metric"] != metric:
                continue
            p = entry["p_holm"]
            verdict = (
                "no significant difference"
                if p is None or p >= ALPHA
                else ("higher" if entry["diff"] > 0 else "lower")
            )
            lines.append(
                f"- {label}, {entry['a']} − no migration: **{verdict}** (Holm p "
                f"{fmt_p(p)}, A12 {fmt_number(entry['a12'], 2)})"
            )
    return "\n".join(lines)


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    seeds: Sequence[int] = data.get("seeds") or []
    return {
        "repeats": str(data.get("repeats")),
        "seeds": f"{seeds[0]}–{seeds[-1]}" if seeds else "–",
        "budget": str(data.get("budget")),
        "settings": settings_table(data),
        "vs-none": vs_table(data),
        "reading": reading(data),
        "accepted": ", ".join(
            f"{name} {fmt_number(value, 1)}"
            for name, value in data["accepted"].items()
            if name != BASELINE
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny runs that test the pipeline")
    parser.add_argument(
        "--extract-only", action="store_true", help="run nothing; re-read the experiments"
    )
    args = parser.parse_args(argv)
    out = out_root(args.quick)
    commands = [command_text(experiment_command(n, out, quick=args.quick)) for n in SETTINGS]
    previous = previous_record("migration")
    timings: list[dict[str, Any]] = []
    totals = git = None
    if args.extract_only:
        if previous and previous.get("commands") == commands:
            timings, totals, git = previous["timings"], previous.get("totals"), previous.get("git")
    else:
        if out.exists():
            shutil.rmtree(out)  # this script's scratch (runs/ is not tracked)
        out.mkdir(parents=True)
        for name in SETTINGS:
            write_options(name, out)
            timings.append(run_command(experiment_command(name, out, quick=args.quick)))
            trim_runs(out / slug(name))
    size = SIZES["quick" if args.quick else "full"]
    write_figure_set(
        "migration",
        commands=commands,
        data=extract(out),
        n=f"{size['repeats']} repeats per setting (seeds from {SEED})",
        spread="mean ± sample std over repeats; Hodges–Lehmann shift with its exact interval, "
        "exact Mann–Whitney p, Holm-adjusted p over the migrating settings, A12",
        quick=args.quick,
        timings=timings,
        totals=totals,
        git=git,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
