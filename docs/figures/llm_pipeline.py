"""Figure set ``llm_pipeline``: one LLM node over real HTTP under heavy-tailed latency.

Runs ``benchmarks/llm_pipeline.py`` twice — with the toy domain's own (instant) evaluations and
with every evaluation taking 0.15 s — and records the throughput ratio (achieved ÷ ideal calls
per second) of each, and the bytes of an evaluation job. Usage::

    python docs/figures/llm_pipeline.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import command_text, markdown_table, run_benchmark, write_figure_set  # noqa: E402

#: (label, extra arguments) of each configuration.
CONFIGURATIONS = (
    ("toy evaluations (about 1 ms)", []),
    ("evaluations of 0.15 s, 2 workers", ["--eval-s", "0.15", "--eval-workers", "2"]),
)


def ratio_text(result: Mapping[str, Any]) -> str:
    """``0.915`` (sd, 95 % t-interval, range of runs)."""
    runs = [run["throughput_ratio"] for run in result["runs"]]
    text = f"**{result['throughput_ratio']:.3f}**"
    details = []
    if result.get("throughput_ratio_sd") is not None:
        details.append(f"sd {result['throughput_ratio_sd']:.3f}")
    if result.get("throughput_ratio_ci95"):
        low, high = result["throughput_ratio_ci95"]
        details.append(f"95 % t-interval {low:.3f}–{high:.3f}")
    details.append(f"runs {min(runs):.3f}–{max(runs):.3f}")
    return f"{text} ({'; '.join(details)})"


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    rows = []
    for entry in data["configurations"]:
        result, load = entry["result"], entry["load_before"]
        rows.append(
            [
                entry["label"],
                ratio_text(result),
                str(result["n"]),
                f"{load:.1f}" if load is not None else "–",
            ]
        )
    first = data["configurations"][0]["result"]
    latency = sum(run["mean_latency_s"] for run in first["runs"]) / len(first["runs"])
    jobs = first.get("coreware_job_bytes") or {}
    return {
        "table": markdown_table(
            ["evaluation", "throughput ratio (achieved ÷ ideal), mean", "n", "load average"], rows
        ),
        "mean-latency": f"{latency:.3f} s",
        "ideal": f"{first['concurrency'] / latency:.2f} calls/s",
        "ratio": f"{first['throughput_ratio']:.3f}",
        "job-bytes": (
            f"{jobs['opponents']} opponents: {jobs['installed_set']} bytes per job "
            f"with the installed opponent set, {jobs['inline']} bytes with the "
            "opponents inside"
        )
        if jobs.get("installed_set")
        else "–",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    configurations, commands, timings = [], [], []
    for label, extra in CONFIGURATIONS:
        command = [
            sys.executable,
            "benchmarks/llm_pipeline.py",
            "--repeats",
            str(args.repeats),
            *extra,
        ]
        result, timing = run_benchmark(command)
        load = timing["load_before"][0] if timing["load_before"] else None
        configurations.append({"label": label, "result": result, "load_before": load})
        commands.append(command_text(["python", *command[1:]]))
        timings.append(timing)
    write_figure_set(
        "llm_pipeline",
        commands=commands,
        data={"configurations": configurations},
        n=f"{args.repeats} runs per configuration",
        spread="mean, sample sd and 95 % t-interval over runs, and the range of runs",
        timings=timings,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
