"""Benchmark: evaluations per second of one node on the local pool vs the Dask backend; JSON.

Every system evaluates the same Core War candidates against the same opponents under the
``--preset dei-paper`` battle settings (core 8000, 80 000 cycles, 8000 processes, 20 battle
rounds per evaluation) through a node's :class:`~dei_framework.evaluation.local.Evaluator`, which
sends the evaluations asked for in one turn of the event loop as jobs: one per worker, up to
four per worker once it has measured that evaluations are dear (these are). Systems:

* ``local-1``, ``local-2`` — the ``local`` backend (process pool) with 1 and 2 workers;
* ``dask-1``, ``dask-2`` — the ``dask`` backend on a cluster started here as a remote one is:
  a ``dask scheduler`` process and 1 or 2 ``dask worker --nthreads 1 --no-nanny`` processes,
  reached through the scheduler's address, with the settings docs/multi-machine.md gives them
  (``dei_framework.evaluation.dask_backend.QUIET_CLUSTER``: Dask's statistical profiler off, its
  event-loop check once a second).

Per system and repeat (systems interleaved within a repeat, so that load drifts hit all):

* ``evals_per_second`` — ``--evals`` evaluations asked for at once (as a node's turn with
  many candidates, or common ground), by wall clock;
* ``task_ms`` and ``task_overhead_ms`` — ``--singles`` evaluations one after the other, each
  awaited before the next is asked for (as a node waiting on one operator reply): the wall
  time of one job carrying one evaluation, and that minus the time the worker spent inside
  the evaluation (``Outcome.seconds``): **the per-task overhead** (moving the job and its
  result, scheduling);
* ``roundtrip_ms`` — the median wall time of a trivial job (parsing a one-line warrior);
* CPU time, which a loaded machine does not distort the way it distorts wall time (it still
  perturbs caches): ``cpu_ms_per_eval`` — user + system CPU of every process of the system
  (this one, with the Dask client or the pool's manager; the scheduler; the workers) during
  the batch, per evaluation; ``idle_cpu_ms_per_s`` — what those processes burn per second
  doing nothing (heartbeats, polling; measured for a second before the batch);
  ``busy_cpu_ms_per_eval`` — the batch's CPU less that idle rate times its wall time, per
  evaluation; ``work_cpu_ms_per_eval`` — CPU of evaluating the same candidates one by one in
  this process (the work itself); ``overhead_cpu_ms_per_eval`` — busy less work: the CPU the
  backend spends on moving jobs and results; ``cpu_parallelism`` — the workers' CPU over the
  busiest worker's (2.0: the batch split evenly over two workers, which two free cores turn
  into a 2x speed-up).

Headline ratios, each the mean of the per-repeat ratios with std and a 95 % t interval:

* ``dask_2_over_dask_1`` — ``evals_per_second`` of dask-2 over dask-1 (target >= 1.6 on a
  quiet 2-core machine);
* ``dask_task_over_local_task`` — ``task_ms`` of dask-1 over local-1: a job of one
  evaluation costs this much more on the engine, overhead included (target <= 1.2);
* ``dask_2_batch_over_local_2`` — seconds per evaluation in the batch, dask-2 over local-2;
* ``dask_cpu_over_local_cpu`` — ``busy_cpu_ms_per_eval`` of dask-2 over local-2: the
  load-proof form of the overhead target (CPU per evaluation, the idle rate taken out).

The machine's own ceiling, ``machine_2_over_1``: evaluations per second of two forked
processes evaluating the batch side by side, with no backend between them, over one process
alone (each repeat). A backend's 2-over-1 cannot beat it: read ``dask_2_over_dask_1`` against it.

The load average before and after is recorded: wall-clock figures are only as good as the
machine is quiet (on a 2-core machine, a load above ~0.5 from others already bends them).

Usage::

    python benchmarks/scale_out.py [--evals 40] [--singles 8] [--repeats 5] [--pool-size N]
                                   [--write FILE]

Each measurement is a line on stderr; the summary is the one JSON object on stdout
(``docs/figures/scale_out.py`` renders it into docs/multi-machine.md). A few minutes on a
quiet 2-core machine with the defaults. Needs Dask distributed (``pip install -e .[dask]``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import psutil

from dei_framework.analysis.stats import mean_interval
from dei_framework.contract.context import FactoryContext
from dei_framework.evaluation import local as evaluation
from dei_framework.evaluation.dask_backend import DaskBackend, quiet_environment
from dei_framework.evaluation.local import Evaluator, LocalBackend, Outcome, _parse, evaluate
from dei_framework.plugin.manager import load_plugins
from dei_framework.runtime.config.settings import DEI_PAPER

#: Seconds the idle CPU of a system's processes is measured over, before each batch.
IDLE_SECONDS = 1.0
#: Trivial jobs per round-trip measurement.
ROUNDTRIPS = 20
SYSTEMS = ("local-1", "local-2", "dask-1", "dask-2")


def dei_paper_domain() -> Any:
    """The Core War domain with the dei-paper battle settings."""
    registry = load_plugins()
    context = FactoryContext(registry=registry, options=dict(DEI_PAPER.domain_options), seed=0)
    return registry.domain("coreware").factory(context)


def describe(values: Sequence[float]) -> dict[str, Any]:
    """Mean, std, n and a 95 % t interval."""
    mean, std, half = mean_interval(values)
    half = float("nan") if half is None else half
    return {
        "mean": round(mean, 4),
        "std": round(std, 4),
        "n": len(values),
        "ci95": [round(mean - half, 4), round(mean + half, 4)],
        "values": [round(v, 4) for v in values],
    }


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _dask_cli() -> list[str]:
    found = shutil.which("dask", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-P", "-m", "dask"]


@attrs.define
class Cluster:
    """A ``dask scheduler`` and ``workers`` one-thread ``dask worker`` processes on loopback."""

    workers: int
    address: str = ""
    processes: list[subprocess.Popen] = attrs.Factory(list)

    def start(self) -> Cluster:
        import distributed

        port = _free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        # As docs/multi-machine.md starts a cluster: Dask's profiler and loop check slowed.
        quiet = {
            "stdout": subprocess.DEVNULL,
            "stderr": subprocess.DEVNULL,
            "env": {**os.environ, **quiet_environment()},
        }
        self.processes.append(
            subprocess.Popen(
                [
                    *_dask_cli(),
                    "scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--no-dashboard",
                ],
                **quiet,
            )
        )
        for _ in range(self.workers):
            self.processes.append(
                subprocess.Popen(
                    [
                        *_dask_cli(),
                        "worker",
                        self.address,
                        "--nworkers",
                        "1",
                        "--nthreads",
                        "1",
                        "--no-nanny",
                        "--no-dashboard",
                        "--host",
                        "127.0.0.1",
                    ],
                    **quiet,
                )
            )
        with distributed.Client(self.address, timeout=120, set_as_default=False) as client:
            client.wait_for_workers(self.workers, timeout=120)
        return self

    @property
    def worker_processes(self) -> list[psutil.Process]:
        return [psutil.Process(process.pid) for process in self.processes[1:]]

    @property
    def other_processes(self) -> list[psutil.Process]:
        return [psutil.Process(self.processes[0].pid)]

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def _pool_processes(backend: LocalBackend) -> list[psutil.Process]:
    """The local pool's worker processes (those of its candidate lane)."""
    return [
        psutil.Process(process.pid)
        for pool in backend._pools.values()
        for process in evaluation._worker_processes(pool)
    ]


async def _measure(
    evaluator: Evaluator,
    texts: Sequence[str],
    opponents: Sequence[Any],
    args: argparse.Namespace,
    workers_of: Callable[[], list[psutil.Process]],
    others: list[psutil.Process],
) -> dict[str, float]:
    await evaluator.start()
    installed = evaluator.install(opponents)
    # Warm-up: every worker loads the domain and the opponent set once, as in a run's round.
    await asyncio.gather(*(evaluator.evaluate(text, installed, seed=1) for text in texts[:4]))
    workers = workers_of()
    watched = [*workers, *others]
    # What the system's processes burn doing nothing (heartbeats, polling): subtracted from
    # the batch's CPU in proportion to its wall time, which a loaded machine stretches.
    idle_before = sum(_cpu_seconds(process) for process in watched) + time.process_time()
    idle_started = time.perf_counter()
    await asyncio.sleep(IDLE_SECONDS)
    idle_rate = (
        sum(_cpu_seconds(process) for process in watched) + time.process_time() - idle_before
    ) / (time.perf_counter() - idle_started)
    cpu_before = [_cpu_seconds(process) for process in watched]
    own_before = time.process_time()
    started = time.perf_counter()
    await asyncio.gather(
        *(evaluator.evaluate(texts[i % len(texts)], installed, seed=i) for i in range(args.evals))
    )
    wall = time.perf_counter() - started
    own = time.process_time() - own_before
    spent = [
        _cpu_seconds(process) - before for process, before in zip(watched, cpu_before, strict=True)
    ]
    worker_cpu = spent[: len(workers)]
    singles: list[tuple[float, Outcome]] = []
    for i in range(args.singles):
        began = time.perf_counter()
        outcome = await evaluator.evaluate(texts[i % len(texts)], installed, seed=10_000 + i)
        singles.append((time.perf_counter() - began, outcome))
    trips = []
    for _ in range(ROUNDTRIPS):
        began = time.perf_counter()
        await evaluator._run(_parse, "dat #0")
        trips.append(time.perf_counter() - began)
    task = statistics.fmean(seconds for seconds, _ in singles)
    inside = statistics.fmean(outcome.seconds for _, outcome in singles)
    return {
        "evals_per_second": args.evals / wall,
        "task_ms": 1000 * task,
        "task_overhead_ms": 1000 * (task - inside),
        "roundtrip_ms": 1000 * statistics.median(trips),
        "cpu_ms_per_eval": 1000 * (own + sum(spent)) / args.evals,
        "idle_cpu_ms_per_s": 1000 * idle_rate,
        "busy_cpu_ms_per_eval": 1000 * (own + sum(spent) - idle_rate * wall) / args.evals,
        "cpu_parallelism": sum(worker_cpu) / max(max(worker_cpu), 1e-9),
        "workers": evaluator.workers,
    }


def measure(
    system: str,
    domain: Any,
    texts: Sequence[str],
    opponents: Sequence[Any],
    args: argparse.Namespace,
    cluster: Cluster | None,
) -> dict[str, float]:
    """One repeat of one system."""
    kind, _, count = system.partition("-")
    if kind == "local":
        backend: Any = LocalBackend(domain, workers=int(count))
        workers_of, others = (lambda: _pool_processes(backend)), []
    else:
        assert cluster is not None
        backend = DaskBackend(domain, address=cluster.address)
        workers_of, others = (lambda: cluster.worker_processes), cluster.other_processes
    evaluator = Evaluator(domain, backend=backend)
    try:
        return asyncio.run(_measure(evaluator, texts, opponents, args, workers_of, others))
    finally:
        evaluator.close()


def work_cpu_ms(domain: Any, texts: Sequence[str], opponents: Sequence[Any], evals: int) -> float:
    """CPU milliseconds per evaluation of the batch's evaluations, one by one, here."""
    started = time.process_time()
    for i in range(evals):
        evaluate(domain, texts[i % len(texts)], opponents, seed=i)
    return 1000 * (time.process_time() - started) / evals


def _evaluate_after(
    gate: Any, ends: Any, domain: Any, texts: Sequence[str], opponents: Sequence[Any], evals: int
) -> None:
    """A process of :func:`machine_2_over_1`: waits at ``gate``, evaluates, reports its end."""
    gate.wait()
    for i in range(evals):
        evaluate(domain, texts[i % len(texts)], opponents, seed=i)
    ends.put(time.perf_counter())


def machine_2_over_1(
    domain: Any, texts: Sequence[str], opponents: Sequence[Any], evals: int
) -> float:
    """The machine's own ceiling for a 2-over-1 speed-up: evaluations per second of two
    processes evaluating side by side, with nothing to say to each other, over one alone.

    On a machine whose two cores share more than they seem to (hyperthreads, a busy host
    under a virtual machine), this stays below 2 whatever the backend does.
    """
    context = multiprocessing.get_context("fork")  # the domain and opponents as they are
    times = []
    for processes in (1, 2):
        gate, ends = context.Barrier(processes + 1), context.Queue()
        children = [
            context.Process(
                target=_evaluate_after, args=(gate, ends, domain, texts, opponents, evals)
            )
            for _ in range(processes)
        ]
        for child in children:
            child.start()
        gate.wait()
        began = time.perf_counter()
        finished = max(ends.get() for _ in children)
        for child in children:
            child.join()
        times.append(finished - began)
    one, two = times
    return 2 * one / two


def ratio(
    rows: dict[str, list[dict[str, float]]],
    top: tuple[str, str],
    bottom: tuple[str, str],
    *,
    invert: bool = False,
) -> dict[str, Any] | None:
    """Per-repeat ratios ``top / bottom`` (``(system, metric)`` each), described."""
    if top[0] not in rows or bottom[0] not in rows:
        return None
    pairs = zip(rows[top[0]], rows[bottom[0]], strict=True)
    values = [a[top[1]] / b[bottom[1]] for a, b in pairs]
    return describe([1 / v for v in values] if invert else values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=40, help="evaluations in the batch")
    parser.add_argument(
        "--singles", type=int, default=8, help="evaluations sent one at a time (per-task overhead)"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--pool-size",
        type=int,
        default=0,
        help="opponents per evaluation (default: the domain's initial ones; "
        "e.g. 20 for a dei-paper pool grown to max_champions, made of the "
        "initial and reference warriors, cycled)",
    )
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument("--write", type=Path, help="also write the JSON to this file")
    args = parser.parse_args()

    domain = dei_paper_domain()
    # A node's first round: its initial opponents; the candidates are the reference warriors.
    opponents = [domain.parse(text) for text in domain.initial_opponents()]
    texts = [domain.parse(text).text for text in domain.reference_opponents()]
    if args.pool_size:  # a later round's pool: the cost of an evaluation grows with it
        known = [*opponents, *(domain.parse(text) for text in texts)]
        opponents = [known[i % len(known)] for i in range(args.pool_size)]
    load_before = os.getloadavg()
    started = time.perf_counter()
    rows: dict[str, list[dict[str, float]]] = {system: [] for system in args.systems}
    work: list[float] = []
    ceiling: list[float] = []
    clusters: dict[str, Cluster] = {}
    try:
        for system in args.systems:
            if system.startswith("dask-"):
                clusters[system] = Cluster(int(system.partition("-")[2])).start()
        for repeat in range(args.repeats):
            work.append(work_cpu_ms(domain, texts, opponents, args.evals))
            ceiling.append(machine_2_over_1(domain, texts, opponents, args.evals))
            for system in args.systems:
                row = measure(system, domain, texts, opponents, args, clusters.get(system))
                row["overhead_cpu_ms_per_eval"] = row["busy_cpu_ms_per_eval"] - work[-1]
                rows[system].append(row)
                print(
                    json.dumps({"system": system, "repeat": repeat, **row}),
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        for cluster in clusters.values():
            cluster.stop()
    metrics = (
        "evals_per_second",
        "task_ms",
        "task_overhead_ms",
        "roundtrip_ms",
        "cpu_ms_per_eval",
        "idle_cpu_ms_per_s",
        "busy_cpu_ms_per_eval",
        "overhead_cpu_ms_per_eval",
        "cpu_parallelism",
    )
    summary = {
        system: {metric: describe([row[metric] for row in values]) for metric in metrics}
        for system, values in rows.items()
    }
    ratios = {
        "dask_2_over_dask_1": ratio(
            rows, ("dask-2", "evals_per_second"), ("dask-1", "evals_per_second")
        ),
        "dask_task_over_local_task": ratio(rows, ("dask-1", "task_ms"), ("local-1", "task_ms")),
        "dask_2_batch_over_local_2": ratio(
            rows, ("dask-2", "evals_per_second"), ("local-2", "evals_per_second"), invert=True
        ),
        "dask_cpu_over_local_cpu": ratio(
            rows, ("dask-2", "busy_cpu_ms_per_eval"), ("local-2", "busy_cpu_ms_per_eval")
        ),
        "local_2_over_local_1": ratio(
            rows, ("local-2", "evals_per_second"), ("local-1", "evals_per_second")
        ),
    }
    result: dict[str, Any] = {
        "benchmark": "scale_out",
        "settings": {
            "domain_options": dict(DEI_PAPER.domain_options),
            "opponents": (
                f"{len(opponents)}: the domain's initial and reference warriors, cycled"
                if args.pool_size
                else f"the domain's {len(opponents)} initial opponents"
            ),
            "candidates": f"the domain's {len(texts)} reference warriors, cycled",
            "evals": args.evals,
            "singles": args.singles,
            "repeats": args.repeats,
            "dask_workers": "dask worker --nthreads 1 --no-nanny, own scheduler process",
            "dask_settings": quiet_environment(),
        },
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg_before": load_before,
            "loadavg_after": os.getloadavg(),
        },
        "work_cpu_ms_per_eval": describe(work),
        "machine_2_over_1": describe(ceiling),
        "systems": summary,
        "ratios": {name: value for name, value in ratios.items() if value is not None},
        "seconds": round(time.perf_counter() - started, 1),
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(text + "\n")


if __name__ == "__main__":
    main()
