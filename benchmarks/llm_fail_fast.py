"""Measures how long `dei-run` takes to report an LLM configuration mistake.

Usage::

    python benchmarks/llm_fail_fast.py --repeats 5

Runs the two headline mistakes of issue 24 as a user would, each ``--repeats`` times:

* ``missing-key``: ``env -u OPENAI_API_KEY dei-run --domain coreware --operator
  openai/gpt-4o-mini --budget 40 --rounds 1``;
* ``refused``: the same with ``--api-base http://127.0.0.1:9`` (nothing listens there).

For each run it records the wall-clock seconds from start to exit, the CPU seconds of the
process and its children (user + sys, less sensitive to a loaded machine than wall-clock
time), the exit status and the ``error:`` line. Prints one JSON object: per case the runs and
the median and range of both times, with the machine's load average at the start.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

COMMAND = [
    "dei-run",
    "--domain",
    "coreware",
    "--operator",
    "openai/gpt-4o-mini",
    "--budget",
    "40",
    "--rounds",
    "1",
    "--progress",
    "lines",
]
CASES = {"missing-key": [], "refused": ["--api-base", "http://127.0.0.1:9"]}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _one_run(extra: list[str], out: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    cpu_before = _children_cpu()
    started = time.monotonic()
    result = subprocess.run(
        [*COMMAND, "--out", str(out), *extra], env=env, capture_output=True, text=True, timeout=600
    )
    seconds = time.monotonic() - started
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    return {
        "seconds": round(seconds, 3),
        "cpu_seconds": round(_children_cpu() - cpu_before, 3),
        "exit_status": result.returncode,
        "error": errors[0] if errors else None,
    }


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "min": min(values), "max": max(values)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per case (default 3)")
    args = parser.parse_args()
    report: dict[str, Any] = {"load_average": os.getloadavg(), "repeats": args.repeats}
    with tempfile.TemporaryDirectory(prefix="dei-fail-fast-") as scratch:
        for case, extra in CASES.items():
            runs = [_one_run(extra, Path(scratch) / f"{case}-{i}") for i in range(args.repeats)]
            report[case] = {
                "runs": runs,
                "seconds": _spread([run["seconds"] for run in runs]),
                "cpu_seconds": _spread([run["cpu_seconds"] for run in runs]),
            }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
