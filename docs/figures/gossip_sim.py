"""Figure set ``gossip_sim``: GossipSub delivery on virtual time (``benchmarks/gossip_sim.py``).

Runs the simulation with and without flood-publish at a few sizes (10 % loss, 100 messages,
seed 1) and records one row per run. Usage::

    python docs/figures/gossip_sim.py [--nodes 16,64,128]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import command_text, markdown_table, run_benchmark, write_figure_set  # noqa: E402


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    rows = []
    for result in data["runs"]:
        rows.append(
            [
                "flood-publish" if result["flood_publish"] else "mesh only",
                str(result["nodes"]),
                f"{result['delivery_ratio']:.4g} ({result['undelivered']} undelivered)",
                f"{result['duplicates_per_node_per_publish']:.2f}",
                f"{result['control_frames_per_node_per_publish']:.2f}",
                f"{result['mean_hops']:.2f}",
                str(result["max_hops"]),
                f"{result['wall_seconds']:.0f} s",
            ]
        )
    header = [
        "publish",
        "nodes",
        "delivery_ratio",
        "duplicates / node / publish",
        "control frames / node / publish",
        "mean_hops",
        "max_hops",
        "wall time",
    ]
    return {"table": markdown_table(header, rows)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="16,64,128", help="comma-separated sizes")
    args = parser.parse_args(argv)
    runs, commands, timings = [], [], []
    for flood in (True, False):
        for nodes in (int(n) for n in args.nodes.split(",")):
            command = [
                sys.executable,
                "benchmarks/gossip_sim.py",
                "--nodes",
                str(nodes),
                "--loss",
                "0.1",
                "--messages",
                "100",
                "--seed",
                "1",
                "--json",
            ]
            command += [] if flood else ["--no-flood-publish"]
            result, timing = run_benchmark(command)
            runs.append(result)
            commands.append(command_text(["python", *command[1:]]))
            timings.append(timing)
    write_figure_set(
        "gossip_sim",
        commands=commands,
        data={"runs": runs},
        n="one seeded run per row (virtual time: the figures other than wall time do not "
        "depend on the machine)",
        spread="none (deterministic simulation)",
        timings=timings,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
