"""Figure set ``suite_duration``: how long the README's test command takes, and how many tests
it runs.

Runs ``benchmarks/suite_duration.py`` (the default set, as the README runs it) and records its
wall time, the CPU time of every test process, the test counts and the load around it.
Usage::

    python docs/figures/suite_duration.py [-- PYTEST-ARGS]   # extra arguments narrow the run

The documented figure is a run without extra arguments: the README's command as it is.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import command_text, run_benchmark, write_figure_set  # noqa: E402


def _count(summary: str, word: str) -> int:
    match = re.search(rf"(\d+) {word}", summary)
    return int(match.group(1)) if match else 0


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    result = data["result"]
    summary = result["summary"]
    load = max(result["load_before"][0], result["load_after"][0])
    sentence = (
        f"The default set: {_count(summary, 'passed')} tests passed and "
        f"{_count(summary, 'skipped')} skipped, took {result['wall_s'] / 60:.1f} min of wall "
        f"time and {result['cpu_s'] / 60:.1f} min of CPU time on {result['cores']} cores "
        f"(load average up to {load:.1f})."
    )
    return {"default": sentence}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)
    command = [sys.executable, "benchmarks/suite_duration.py"]
    if args.pytest_args:
        command += ["--", *args.pytest_args]
    result, timing = run_benchmark(command)
    write_figure_set(
        "suite_duration",
        commands=[command_text(["python", *command[1:]])],
        data={"result": result},
        n="one run of the default set"
        + (f" narrowed by {args.pytest_args}" if args.pytest_args else ""),
        spread="none (one run; wall time depends on the machine's load)",
        timings=[timing],
        quick=bool(args.pytest_args),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
