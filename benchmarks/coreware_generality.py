"""Champion generality over rounds for offline Core War ensembles: gp alone, templates alone, mixed.

Runs three 4-node ensembles with the same budget and seed (``gp`` x4, ``templates`` x4, and
``gp, templates, gp, templates``), then prints JSON and a Markdown table of the champions'
generality (share of the human warrior set beaten or tied one-on-one) per round: mean over the
four nodes, best node in parentheses. Usage::

    python benchmarks/coreware_generality.py --human-set ../shared/corewar/warriors/human \\
        --rounds 4 --budget 240 --seed 3 --out runs/coreware-generality
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from dei_framework import NodeConfig, RunConfig, run

CONFIGURATIONS = {
    "gp": ["gp"] * 4,
    "templates": ["templates"] * 4,
    "mixed": ["gp", "templates", "gp", "templates"],
}


def run_configuration(name: str, operators: list[str], args: argparse.Namespace) -> dict:
    nodes = [NodeConfig(name=f"node-{i}", operator=op) for i, op in enumerate(operators)]
    options = {"human_set": str(Path(args.human_set).resolve())} if args.human_set else {}
    options.update(dict(item.split("=", 1) for item in args.domain_option))
    config = RunConfig(
        domain="coreware",
        nodes=nodes,
        rounds=args.rounds,
        budget=args.budget,
        seed=args.seed,
        domain_options=options,
    )
    started = time.perf_counter()
    summary = run(config, Path(args.out) / name)
    per_node = {n: node.generality_per_round for n, node in summary.nodes.items()}
    per_round = []
    for r in range(args.rounds):
        values = [g[r] for g in per_node.values() if r < len(g) and g[r] is not None]
        per_round.append(
            {
                "round": r,
                "mean": sum(values) / len(values) if values else None,
                "max": max(values) if values else None,
            }
        )
    return {
        "operators": operators,
        "seconds": round(time.perf_counter() - started, 1),
        "merged_coverage": summary.merged.stats.coverage,
        "merged_qd_score": summary.merged.stats.qd_score,
        "generality_per_node": per_node,
        "generality_per_round": per_round,
        # What each node's figures leave out (generality warriors it fought or produced), and
        # the rounds whose champion was an initial opponent (their generality is that of the
        # round's best other elite).
        "generality_reference_count": (summary.generality["reference"] or {}).get("count"),
        "generality_excluded_per_node": {
            n: node.generality_excluded for n, node in summary.nodes.items()
        },
        "champion_initial_per_node": {
            n: node.champion_initial_per_round for n, node in summary.nodes.items()
        },
    }


def markdown(results: dict[str, dict], rounds: int) -> str:
    names = list(results)
    lines = ["| round | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for r in range(rounds):
        cells = []
        for name in names:
            row = results[name]["generality_per_round"][r]
            cells.append("-" if row["mean"] is None else f"{row['mean']:.3f} ({row['max']:.3f})")
        lines.append(f"| {r} | " + " | ".join(cells) + " |")
    lines.append(
        "| merged coverage | "
        + " | ".join(f"{results[n]['merged_coverage']:.1%}" for n in names)
        + " |"
    )
    lines.append(
        "| merged QD-score | "
        + " | ".join(f"{results[n]['merged_qd_score']:.2f}" for n in names)
        + " |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--human-set", help="folder of human warriors (default: bundled ones)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--budget", type=int, default=240, help="total calls per ensemble")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--domain-option", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--only", action="append", choices=sorted(CONFIGURATIONS))
    parser.add_argument("--out", default="runs/coreware-generality")
    args = parser.parse_args()
    results = {
        name: run_configuration(name, ops, args)
        for name, ops in CONFIGURATIONS.items()
        if not args.only or name in args.only
    }
    print(json.dumps(results, indent=2))
    print()
    print(markdown(results, args.rounds))


if __name__ == "__main__":
    main()
