"""Figure set ``async_nodes``: fast nodes next to a 10x slower peer (``benchmarks/async_nodes.py``).

Usage::

    python docs/figures/async_nodes.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figurelib import command_text, markdown_table, run_benchmark, write_figure_set  # noqa: E402


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    result = data["result"]
    pairs = ", ".join(f"{ratio:.2f}" for ratio in result["per_repeat_ratio"])
    load = data["load_average"]
    table = markdown_table(
        ["", f"load average {load:.1f} before the run" if load is not None else "load unknown"],
        [
            [
                f"{result['fast_nodes']} fast nodes alone, calls/s",
                f"{result['fast_alone_ips']:.1f}",
            ],
            [
                f"the same {result['fast_nodes']} next to a "
                f"{result['slow_ms'] / result['fast_ms']:.0f}x slower peer, calls/s",
                f"{result['fast_with_slow_peer_ips']:.1f}",
            ],
            ["ratio (median of pairs)", f"**{result['ratio']:.3f}** (per pair {pairs})"],
            [
                "fast nodes done after (alone / with the slow peer)",
                f"{result['fast_done_s_alone']:.1f} s / "
                f"{result['fast_done_s_with_slow_peer']:.1f} s",
            ],
            ["slow peer done after", f"{result['slow_done_s']:.1f} s"],
            [
                "champions of the slow peer received, per run",
                ", ".join(str(n) for n in result["champions_received_from_slow_peer"]),
            ],
        ],
    )
    return {"table": table, "ratio": f"{result['ratio']:.3f}", "repeats": str(result["repeats"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    command = [sys.executable, "benchmarks/async_nodes.py", "--repeats", str(args.repeats)]
    result, timing = run_benchmark(command)
    load = timing["load_before"][0] if timing["load_before"] else None
    shown = command_text(["python", *command[1:]])
    write_figure_set(
        "async_nodes",
        commands=[shown],
        data={"result": result, "load_average": load},
        n=f"{args.repeats} interleaved pairs of runs",
        spread="median over pairs, and each pair's ratio",
        timings=[timing],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
