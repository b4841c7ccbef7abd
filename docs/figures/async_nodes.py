"""Figure set ``async_nodes``: fast nodes next to a 10x slower peer (``benchmarks/async_nodes.py``).

Runs it with wall-clock delivery (nodes never wait) and with virtual-time delivery (the
default in one process: nodes wait at round starts, for reproducibility).

Usage::

    python docs/figures/async_nodes.py [--repeats 3]
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
    results = data["results"]
    first = results[0]
    slower = f"{first['slow_ms'] / first['fast_ms']:.0f}x"
    loads = data["load_averages"]

    def column(result: Mapping[str, Any]) -> list[str]:
        pairs = ", ".join(f"{ratio:.2f}" for ratio in result["per_repeat_ratio"])
        return [
            f"{result['fast_alone_ips']:.1f}",
            f"{result['fast_with_slow_peer_ips']:.1f}",
            f"**{result['ratio']:.3f}** (per pair {pairs})",
            f"{result['fast_done_s_alone']:.1f} s / {result['fast_done_s_with_slow_peer']:.1f} s",
            f"{result['slow_done_s']:.1f} s",
            ", ".join(str(n) for n in result["champions_received_from_slow_peer"]),
        ]

    labels = [
        f"{first['fast_nodes']} fast nodes alone, calls/s",
        f"the same {first['fast_nodes']} next to a {slower} slower peer, calls/s",
        "ratio (median of pairs)",
        "fast nodes done after (alone / with the slow peer)",
        "slow peer done after",
        "champions of the slow peer received, per run",
    ]
    columns = [column(result) for result in results]
    header = [""] + [
        f"`--delivery {result['delivery']}` (load average {load:.1f})"
        if load is not None
        else f"`--delivery {result['delivery']}`"
        for result, load in zip(results, loads, strict=True)
    ]
    rows = [[label, *(col[i] for col in columns)] for i, label in enumerate(labels)]
    values = {"table": markdown_table(header, rows), "repeats": str(first["repeats"])}
    values |= {f"ratio.{result['delivery']}": f"{result['ratio']:.3f}" for result in results}
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    results, loads, commands, timings = [], [], [], []
    for delivery in ("wallclock", "virtual"):
        command = [
            sys.executable,
            "benchmarks/async_nodes.py",
            "--repeats",
            str(args.repeats),
            "--delivery",
            delivery,
        ]
        result, timing = run_benchmark(command)
        results.append(result)
        loads.append(timing["load_before"][0] if timing["load_before"] else None)
        commands.append(command_text(["python", *command[1:]]))
        timings.append(timing)
    write_figure_set(
        "async_nodes",
        commands=commands,
        data={"results": results, "load_averages": loads},
        n=f"{args.repeats} interleaved pairs of runs per delivery mode",
        spread="median over pairs, and each pair's ratio",
        timings=timings,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
