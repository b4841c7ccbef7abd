"""Benchmark: how long the test suite takes, as the README and CI run it; prints JSON.

Runs a pytest command in a child process and reports its wall time, the CPU time of the
whole process tree (user + sys of pytest, its xdist workers and every subprocess they waited
for: the operating system's ``RUSAGE_CHILDREN``), the cores and the load average before and
after. Wall time depends on the load of the machine; CPU time much less so, which is why both
are printed: on an idle machine with ``C`` cores the wall time of a parallel run is roughly
``cpu_s / C`` plus the time tests spend waiting (sleeps, timeouts, network).

Usage::

    python benchmarks/suite_duration.py                 # the README's command (the default set)
    python benchmarks/suite_duration.py --set slow      # what .ci/run runs after it, then
    python benchmarks/suite_duration.py --set axl       # the AXL tests, one at a time
    python benchmarks/suite_duration.py --per-test times.jsonl  # plus one line per test

With ``--per-test FILE`` this module is also loaded into pytest (``-p suite_duration``) and
appends one JSON line per test to ``FILE``: its node id, wall seconds and CPU seconds (its
own process and the subprocesses it waited for), sorted out afterwards with e.g.
``jq -s 'sort_by(-.cpu_s) | .[:20]' FILE``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The README's test command and the rest of the suite, which .ci/run runs after it.
SETS = {
    "default": ["pytest", "-n", "auto", "-m", "not slow and not axl"],
    "slow": ["pytest", "-n", "auto", "-m", "slow and not axl"],
    "axl": ["pytest", "-m", "axl"],
    "rest": ["pytest", "-n", "auto", "-m", "slow or axl"],  # both at once, axl ones in parallel
}
#: Where the pytest plugin below appends its per-test lines (set by main for the child).
LOG_VARIABLE = "DEI_SUITE_DURATION_LOG"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(SETS), default="default")
    parser.add_argument("--per-test", type=Path, help="append one JSON line per test here")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()
    command = [*SETS[args.set], *args.pytest_args]
    env = dict(os.environ)
    if args.per_test:
        env[LOG_VARIABLE] = str(args.per_test.resolve())
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(Path(__file__).parent), env.get("PYTHONPATH")])
        )
        command += ["-p", "suite_duration"]
    load_before = os.getloadavg()
    cpu_before = _children_cpu()
    started = time.perf_counter()
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    cpu = _children_cpu() - cpu_before
    summary = next(
        (
            line
            for line in reversed(result.stdout.splitlines())
            if re.search(r"\b(passed|failed|error)", line)
        ),
        "",
    )
    print(
        json.dumps(
            {
                "command": shlex.join(command),
                "exit_status": result.returncode,
                "summary": summary.strip("= "),
                "wall_s": round(wall, 1),
                "cpu_s": round(cpu, 1),
                "cores": os.cpu_count(),
                "load_before": [round(x, 2) for x in load_before],
                "load_after": [round(x, 2) for x in os.getloadavg()],
            }
        )
    )
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-2000:])
        raise SystemExit(result.returncode)


# --- the pytest plugin (-p suite_duration) ----------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # noqa: ARG001 (the hook's signature)
    """Times one test (setup, call and teardown) and appends its line to the log."""
    log = os.environ.get(LOG_VARIABLE)
    wall, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
    yield
    if log:
        line = {
            "test": item.nodeid,
            "wall_s": round(time.perf_counter() - wall, 3),
            "cpu_s": round(time.process_time() - cpu + _children_cpu() - children, 3),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        }
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
