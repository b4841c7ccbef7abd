"""OpenEvolve's own example folders, each run unchanged by ``dei-run``: what a switching user sees.

Every folder of an OpenEvolve checkout's ``examples/`` that holds an ``evaluator.py`` (the
``algotune/`` and ``alphaevolve_math_problems/`` collections hold one task per sub-folder), and
every top-level folder that holds none, is given as it is to::

    dei-run --domain python --task DIR --operator python-ast --nodes 2 --budget 12 --rounds 2

(the offline ``python-ast`` operator: no model, no network). Per folder the script prints the
exit status, the wall time, the merged coverage, QD-score and elites, the candidates evaluated
and invalid, the run's one-line reason when it kept no elite, and for a refused folder the
``error:`` line ``dei-run`` printed. One JSON object on standard output::

    python benchmarks/openevolve_examples.py --examples ~/openevolve/examples

OpenEvolve is not a DEI dependency and this repository holds none of its files: point
``--examples`` (or ``$OPENEVOLVE_EXAMPLES``) at a checkout of its repository's ``examples/``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: The command of issue 48, after ``--task DIR``.
RUN_FLAGS = ("--operator", "python-ast", "--nodes", "2", "--budget", "12", "--rounds", "2")


def task_folders(examples: Path) -> list[Path]:
    """Every folder holding an ``evaluator.py`` (at any depth: the collections nest tasks one
    or two levels down), and each top-level folder holding none (run too, to show what DEI
    says of it), sorted by path."""
    tasks = {path.parent for path in examples.rglob("evaluator.py")}
    tasks = {task for task in tasks if not any(parent in tasks for parent in task.parents)}
    bare = {
        folder
        for folder in examples.iterdir()
        if folder.is_dir() and not any(task.is_relative_to(folder) for task in tasks)
    }
    return sorted(tasks | bare)


def run_one(
    dei_run: str, folder: Path, examples: Path, *, seed: int, timeout: float
) -> dict[str, Any]:
    """Runs one folder; returns its row (``rc`` -1: the time limit ended it)."""
    row: dict[str, Any] = {"example": str(folder.relative_to(examples))}
    with tempfile.TemporaryDirectory(prefix="dei-oe-") as scratch:
        out = Path(scratch) / "run"
        command = [dei_run, "--domain", "python", "--task", str(folder), *RUN_FLAGS]
        command += ["--seed", str(seed), "--out", str(out)]
        started = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            row.update(rc=-1, seconds=round(time.perf_counter() - started, 1))
            return row
        row.update(rc=done.returncode, seconds=round(time.perf_counter() - started, 1))
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        if errors:
            row["error"] = errors[0]
        summary_path = out / "summary.json"
        if summary_path.is_file():
            summary = json.loads(summary_path.read_text())
            merged = summary["merged"]
            row.update(
                coverage=merged["coverage"],
                qd_score=merged["qd_score"],
                elites=merged["num_elites"],
                evaluated=summary["evaluated"],
                invalid=summary["invalid"],
            )
            if summary.get("no_elite"):
                row["no_elite"] = summary["no_elite"]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--examples",
        type=Path,
        default=os.environ.get("OPENEVOLVE_EXAMPLES"),
        help="an OpenEvolve checkout's examples/ folder (default: $OPENEVOLVE_EXAMPLES)",
    )
    parser.add_argument(
        "--revision", default="", help="the OpenEvolve commit the examples are at, recorded"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per folder")
    parser.add_argument("--only", nargs="*", default=(), help="run only these example names")
    args = parser.parse_args(argv)
    if args.examples is None or not args.examples.is_dir():
        print(
            "error: give --examples DIR (an OpenEvolve checkout's examples/ folder)",
            file=sys.stderr,
        )
        return 2
    dei_run = shutil.which("dei-run")
    if dei_run is None:
        print("error: dei-run is not on PATH (pip install -e . first)", file=sys.stderr)
        return 2
    examples = args.examples.resolve()
    folders = [
        folder
        for folder in task_folders(examples)
        if not args.only or str(folder.relative_to(examples)) in args.only
    ]
    rows = []
    for folder in folders:
        rows.append(run_one(dei_run, folder, examples, seed=args.seed, timeout=args.timeout))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)  # progress, one line per folder
    kept = sum(1 for row in rows if row.get("elites", 0) > 0)
    result = {
        "command": "dei-run --domain python --task DIR " + " ".join(RUN_FLAGS),
        "openevolve_revision": args.revision,
        "seed": args.seed,
        "folders": len(rows),
        "kept_elites": kept,
        "rows": rows,
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
