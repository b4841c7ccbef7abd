"""Figure set ``watch_load``: ``dei watch`` on a large run directory (``benchmarks/watch_load.py``).

Usage::

    python docs/figures/watch_load.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import command_text, markdown_table, run_benchmark, write_figure_set  # noqa: E402


def seconds(stat: Mapping[str, float]) -> str:
    """``1.90 s median, 2.10 s max``."""
    return f"{stat['median']:.2f} s median, {stat['max']:.2f} s max"


def spaced(count: int) -> str:
    """``200 000``: thousands separated by a space, as the docs write them."""
    return f"{count:,}".replace(",", " ")


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    result, repeats = data["result"], data["repeats"]
    rows = [
        [
            f"cold read: first complete state of all {spaced(result['events'])} events "
            f"({result['events_mb']} MB), CPU",
            seconds(result["cold_read_cpu_s"]),
        ],
        ["cold read, wall", seconds(result["cold_read_s"])],
        [
            "from a cold server until `/api/state` has read every event, wall / CPU",
            f"{result['catch_up_s']:.2f} s / {result['catch_up_cpu_s']:.2f} s in "
            f"{result['catch_up_requests']} request(s)",
        ],
        [
            "page load (`/`, script, style, `/api/runs`, full `/api/state`), caught-up server",
            seconds(result["page_load_s"]),
        ],
        [
            f"refresh after {spaced(result['refresh_events'])} new events (`/api/state?since=…`)",
            seconds(result["refresh_s"]),
        ],
        ["poll when nothing changed", seconds(result["unchanged_poll_s"])],
        ["state document", f"{result['state_kb']:.0f} KB"],
    ]
    load = data.get("load_average")
    header = ["measure", f"n = {repeats}, load average {load:.1f}" if load is not None else "n"]
    return {"table": markdown_table(header, rows)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    command = [sys.executable, "benchmarks/watch_load.py", "--repeats", str(args.repeats)]
    result, timing = run_benchmark(command)
    load = timing["load_before"][0] if timing["load_before"] else None
    write_figure_set(
        "watch_load",
        commands=[command_text(["python", *command[1:]])],
        data={"result": result, "repeats": args.repeats, "load_average": load},
        n=f"{args.repeats} repeats of each measure (the catch-up: one)",
        spread="median and maximum over repeats",
        timings=[timing],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
