"""Figure set ``quickstart``: the README's main job, its output and what it costs.

Runs ``dei-run --domain coreware`` (the offline default ensemble) ``--repeats`` times with line
progress, keeps the first run's output (seeded: every repeat prints the same figures) and
measures each run's CPU time (user + system of the process and its children: what the job
costs, little affected by other load) and wall time with the load average around it. Usage::

    python docs/figures/quickstart.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import command_text, run_command, write_figure_set  # noqa: E402

COMMAND = ["dei-run", "--domain", "coreware", "--progress", "lines"]


def excerpt(output: str) -> str:
    """The first two round lines, the last one and the closing lines, with a fixed run folder."""
    lines = [line for line in output.splitlines() if line.strip()]
    rounds = [line for line in lines if line.startswith("[node-")]
    rest = [
        line.replace("runs/<time>-coreware", "runs/20260101-120000-coreware")
        for line in lines
        if not line.startswith("[node-")
    ]
    return "\n".join([*rounds[:2], "...", rounds[-1], *rest])


def median_seconds(values: list[float]) -> str:
    """The median of ``values`` in seconds, to 0.1 s."""
    return f"{statistics.median(values):.1f} s"


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    runs = data["runs"]
    loads = [run["load_before"][0] for run in runs if run.get("load_before")]
    cpu = [run["cpu_s"] for run in runs]
    return {
        "output": "```\n" + data["output"] + "\n```",
        "cpu": median_seconds(cpu),
        "cpu-range": f"{min(cpu):.1f}–{max(cpu):.1f} s",
        "wall": median_seconds([run["wall_s"] for run in runs]),
        "load": f"{min(loads):.1f}–{max(loads):.1f}" if loads else "unknown",
        "cores": str(data["cores"]),
        "runs": str(len(runs)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(args.repeats):
            runs.append(
                run_command(
                    [*COMMAND, "--out", f"{scratch}/run-{repeat}"], capture=True, with_stderr=True
                )
            )
        output = excerpt(runs[0]["stdout"].replace(f"{scratch}/run-0", "runs/<time>-coreware"))
    data = {
        "output": output,
        "cores": os.cpu_count(),
        "runs": [
            {key: run[key] for key in ("cpu_s", "wall_s", "load_before", "load_after")}
            for run in runs
        ],
    }
    timings = [{key: value for key, value in run.items() if key != "stdout"} for run in runs]
    write_figure_set(
        "quickstart",
        commands=[command_text(COMMAND)],
        data=data,
        n=f"{args.repeats} runs",
        spread="median and range over runs",
        timings=timings,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
