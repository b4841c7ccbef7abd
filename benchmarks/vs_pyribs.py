"""Benchmark: DEI's search core against pyribs on pyribs' own tutorial problem; prints JSON.

The problem is the ``numeric`` domain's default (``plugins/numeric``): the negative shifted
sphere in 20 dimensions, normalised to [0, 100], with the linear-projection descriptor on a
100 x 100 grid, as pyribs' documentation sets it up. Three systems make the same number of
evaluations in one process each, with Gaussian mutation (sigma 0.5, new programs around the
origin):

* ``pyribs`` — ``GridArchive`` + one ``GaussianEmitter`` (its default batch of 64) + ``Scheduler``;
* ``dei-asktell`` — DEI's ask/tell core as a library user drives it: ``Scheduler`` over the
  ``numeric`` domain, the ``gaussian`` operator's array form (``propose_genomes``), the
  domain's vectorised objective and descriptor, and ``Scheduler.tell_batch`` on each batch;
* ``dei-run`` — the ``dei-run`` command with one node and in-process evaluation
  (``--eval-workers 0``; its array path: docs/performance.md), its click command called in
  this process after a warm-up call (so interpreter start and imports are not counted); its
  CPU time minus the median of three calls of the same command with ``--budget 1`` (plugins,
  configuration, run directory), measured each repeat.

``overhead_us_per_eval`` is the CPU time (user + system; the machine may be shared, so not wall
time) minus the objective's own CPU time, per evaluation. The objective's CPU time is measured
by timing the pure vectorised objective and descriptor on the same genomes in the same batch
sizes, after the run (``dei-run`` keeps no record of its genomes: as many seeded ones). Each
metric is reported as mean, std and n over ``--repeats`` seeds, and the ratio of DEI's mean
overhead to pyribs'.

Usage::

    python benchmarks/vs_pyribs.py [--evals 2000 20000] [--repeats 3] [--write FILE.json]

The documented figures come from ``docs/figures/vs_pyribs.py``, which runs this script and
keeps its JSON lines in ``docs/figures/vs_pyribs.json`` (rendered into docs/performance.md).

Needs pyribs (``pip install -e .[test]`` installs ``ribs``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from dei_numeric.domain import NumericDomain
from dei_numeric.operators import create_gaussian

from dei_framework import OperatorSettings, Scheduler
from dei_framework.analysis.stats import mean_interval

SIGMA = 0.5
DIM = 20
#: Planning lag and ask size of the ask/tell loop (the batch pyribs' emitter uses by default).
ASKTELL_BATCH = 64
#: ``dei-run`` goes through the array path: each step evaluates what the lag rule lets be
#: planned, ``lag + 1`` items (its default lag is 6 x the operator's concurrency of 8).
DEI_RUN_BATCH = 6 * 8 + 1
#: ``dei-run --budget 1`` calls whose median CPU and wall time are the fixed cost subtracted.
BASE_RUNS = 3
#: Evaluations of the unmeasured run each system makes first (pyribs' first run in a process
#: costs 20x its later ones).
WARMUP_EVALS = 512
METRICS = ("coverage", "qd_score", "evals_per_s", "overhead_us_per_eval", "cpu_s", "objective_s")


def objective_seconds(domain: NumericDomain, genomes: np.ndarray, batch: int) -> float:
    """CPU seconds of the pure objective and descriptor over ``genomes``, ``batch`` at a time."""
    started = time.process_time()
    for start in range(0, len(genomes), batch):
        chunk = genomes[start : start + batch]
        domain.objective(chunk)
        domain.descriptors(chunk)
    return time.process_time() - started


def run_pyribs(evals: int, seed: int) -> dict[str, Any]:
    from ribs.archives import GridArchive
    from ribs.emitters import GaussianEmitter
    from ribs.schedulers import Scheduler as RibsScheduler

    domain = NumericDomain({"dim": DIM})
    limit = domain.half * domain.high
    archive = GridArchive(
        solution_dim=DIM, dims=(100, 100), ranges=[(-limit, limit)] * 2, seed=seed
    )
    emitter = GaussianEmitter(archive, sigma=SIGMA, x0=np.zeros(DIM), seed=seed)
    scheduler = RibsScheduler(archive, [emitter])
    batches: list[np.ndarray] = []
    done = 0
    started, wall = time.process_time(), time.perf_counter()
    while done < evals:
        solutions = scheduler.ask()[: evals - done]
        if len(solutions) == emitter.batch_size:
            scheduler.tell(domain.objective(solutions), domain.descriptors(solutions))
        else:
            _tell_partial(scheduler, domain, solutions, emitter)
        batches.append(solutions)
        done += len(solutions)
    cpu, wall = time.process_time() - started, time.perf_counter() - wall
    genomes = np.concatenate(batches)
    stats = archive.stats
    return _row(
        evals,
        cpu,
        wall,
        objective_seconds(domain, genomes, emitter.batch_size),
        coverage=float(stats.coverage),
        qd_score=float(stats.qd_score),
        batch=emitter.batch_size,
    )


def _tell_partial(scheduler: Any, domain: NumericDomain, solutions: np.ndarray, emitter: Any):
    """The last, shorter batch: pyribs wants a full batch told, so the rest is padded with
    copies of the last solution (they cannot improve the archive beyond it)."""
    padded = np.concatenate(
        [solutions, np.repeat(solutions[-1:], emitter.batch_size - len(solutions), axis=0)]
    )
    scheduler.tell(domain.objective(padded), domain.descriptors(padded))


async def _asktell(evals: int, seed: int) -> tuple[Scheduler, NumericDomain, list[np.ndarray]]:
    """DEI's array path, as pyribs' loop: ask items, the operator's genomes for all of them in
    one pass, the vectorised objective, one ``tell_batch`` (texts written only for the
    candidates the archive takes)."""
    domain = NumericDomain({"dim": DIM})
    operator = create_gaussian(
        OperatorSettings(spec="gaussian", node="n", options={"sigma": SIGMA}), domain
    )
    scheduler = Scheduler.for_domain(
        domain, name="n", calls=evals, rounds=1, seed=seed, lag=ASKTELL_BATCH
    )
    genomes = []
    while not scheduler.finished:
        items = scheduler.ask(ASKTELL_BATCH)
        batch = operator.propose_genomes(items)
        scheduler.tell_batch(
            items,
            texts=domain.genome_texts(batch),
            fitness=domain.objective(batch),
            descriptors=domain.descriptors(batch),
            data=batch,
            operator=operator.label,
        )
        genomes.append(batch)
    return scheduler, domain, genomes


def run_asktell(evals: int, seed: int) -> dict[str, Any]:
    started, wall = time.process_time(), time.perf_counter()
    scheduler, domain, genomes = asyncio.run(_asktell(evals, seed))
    cpu, wall = time.process_time() - started, time.perf_counter() - wall
    stats = scheduler.history[-1].stats
    objective = sum(objective_seconds(domain, batch, len(batch)) for batch in genomes)
    return _row(
        evals,
        cpu,
        wall,
        objective,
        coverage=stats.coverage,
        qd_score=stats.qd_score,
        batch=ASKTELL_BATCH,
    )


def _dei_run(budget: int, seed: int, out: Path) -> tuple[float, float]:
    """CPU and wall seconds of the ``dei-run`` command (its click command, what the console
    script runs) called in this process: interpreter start and imports, which vary by a
    tenth of a second between identical processes, are not in them."""
    from dei_framework.app.cli import dei_run

    args = [
        "--domain",
        "numeric",
        "--operator",
        "gaussian",
        "--nodes",
        "1",
        "--rounds",
        "1",
        "--budget",
        str(budget),
        "--seed",
        str(seed),
        "--eval-workers",
        "0",
        "--progress",
        "quiet",
        "--no-report",
        "--out",
        str(out),
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        started, wall = time.process_time(), time.perf_counter()
        dei_run.main(args=args, prog_name="dei-run", standalone_mode=False)
        return time.process_time() - started, time.perf_counter() - wall


def run_dei_run(evals: int, seed: int) -> dict[str, Any]:
    domain = NumericDomain({"dim": DIM})
    with tempfile.TemporaryDirectory(prefix="dei-vs-pyribs-") as tmp:
        # The fixed cost of a run (plugins, configuration, run directory): the median of three.
        bases = []
        for k in range(BASE_RUNS):
            gc.collect()
            bases.append(_dei_run(1, seed, Path(tmp) / f"base-{k}"))
        gc.collect()
        base_cpu = statistics.median(cpu for cpu, _ in bases)
        base_wall = statistics.median(wall for _, wall in bases)
        cpu, wall = _dei_run(evals, seed, Path(tmp) / "run")
        summary = json.loads((Path(tmp) / "run" / "summary.json").read_text())
    # The array path logs no calls (so no genomes): the objective's cost does not depend on
    # the values, so it is timed on as many seeded genomes.
    genomes = np.random.default_rng(seed).normal(size=(evals, DIM))
    merged = summary["merged"]
    return _row(
        evals,
        cpu - base_cpu,
        wall - base_wall,
        objective_seconds(domain, genomes, DEI_RUN_BATCH),
        coverage=merged["coverage"],
        qd_score=merged["qd_score"],
        batch=DEI_RUN_BATCH,
    )


def _row(evals: int, cpu: float, wall: float, objective: float, **fields: Any) -> dict[str, Any]:
    return {
        "evals": evals,
        "cpu_s": cpu,
        "objective_s": objective,
        "evals_per_s": evals / wall if wall > 0 else None,
        "overhead_us_per_eval": (cpu - objective) / evals * 1e6,
        **fields,
    }


SYSTEMS: dict[str, Callable[[int, int], dict[str, Any]]] = {
    "pyribs": run_pyribs,
    "dei-asktell": run_asktell,
    "dei-run": run_dei_run,
}


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """mean, std (sample) and n per metric."""
    out: dict[str, Any] = {}
    for metric in METRICS:
        values = [row[metric] for row in rows if row.get(metric) is not None]
        out[metric] = {
            "mean": statistics.fmean(values) if values else None,
            "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "n": len(values),
        }
    return out


def paired_ratio(
    rows: Sequence[dict[str, Any]], reference: Sequence[dict[str, Any]], metric: str
) -> dict[str, Any]:
    """Repeat by repeat, ``metric`` over the reference system's in the same repeat: mean,
    sample std, n and the 95 % Student t interval of the mean."""
    ratios = [row[metric] / ref[metric] for row, ref in zip(rows, reference, strict=True)]
    mean, std, half = mean_interval(ratios)
    half = half or 0.0
    return {"mean": mean, "std": std, "n": len(ratios), "ci95": [mean - half, mean + half]}


def _commit() -> str:
    """HEAD, with ``+dirty`` when the work tree differs from it (taken before measuring)."""
    try:
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            check=True,
        ).stdout.strip()
        return subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            check=True,
        ).stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", type=Path, help="Also write every line to this JSON file.")
    args = parser.parse_args()
    commit = _commit()
    lines = []
    for system in args.systems:
        SYSTEMS[system](WARMUP_EVALS, args.seed)  # lazy imports and caches, not measured
    for evals in args.evals:
        # Interleaved: repeat k runs every system once, so that a slow spell of a shared
        # machine falls on all of them alike, and each repeat gives a paired ratio.
        rows: dict[str, list[dict[str, Any]]] = {system: [] for system in args.systems}
        for k in range(args.repeats):
            for system in args.systems:
                gc.collect()  # no collection of an earlier run's garbage inside this one
                rows[system].append(SYSTEMS[system](evals, args.seed + k))
        summaries = {
            system: {
                "system": system,
                "evals": evals,
                "repeats": args.repeats,
                "batch": rows[system][0]["batch"],
                **summarise(rows[system]),
            }
            for system in args.systems
        }
        reference = summaries.get("pyribs")
        for system, line in summaries.items():
            if reference is not None:
                line["ratio_to_pyribs"] = {
                    metric: (
                        line[metric]["mean"] / reference[metric]["mean"]
                        if reference[metric]["mean"]
                        else None
                    )
                    for metric in ("coverage", "qd_score", "evals_per_s", "overhead_us_per_eval")
                }
                line["paired_overhead_ratio"] = paired_ratio(
                    rows[system], rows["pyribs"], "overhead_us_per_eval"
                )
            print(json.dumps(line), flush=True)
            lines.append(line)
    if args.write is not None:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(
            json.dumps(
                {
                    "benchmark": "benchmarks/vs_pyribs.py",
                    "commit": commit,
                    "command": " ".join(["python", "benchmarks/vs_pyribs.py", *sys.argv[1:]]),
                    "problem": {
                        "domain": "numeric",
                        "function": "sphere",
                        "dim": DIM,
                        "grid": [100, 100],
                        "sigma": SIGMA,
                    },
                    "cpu_count": os.cpu_count(),
                    "python": sys.version.split()[0],
                    "metrics": {
                        "overhead_us_per_eval": "CPU time minus the objective's CPU time, per "
                        "evaluation (microseconds)",
                        "evals_per_s": "evaluations per wall second",
                        "coverage": "occupied share of the 100 x 100 grid",
                        "qd_score": "sum of elite objectives (objective in [0, 100])",
                    },
                    "results": lines,
                },
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
