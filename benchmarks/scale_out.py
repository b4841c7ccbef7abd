"""Benchmark: evaluations per second of one node on the local pool vs the Dask backend; JSON.

Every system evaluates the same Core War candidates against the same opponents under the
``--preset dei-paper`` battle settings (core 8000, 80 000 cycles, 8000 processes, 20 battle
rounds per evaluation), as one node's :class:`~dei_framework.evaluation.Evaluator` does:
all evaluations of a turn asked for at once, batched one job per worker. Systems:

* ``local-1``, ``local-2`` — the ``local`` backend (process pool) with 1 and 2 workers;
* ``dask-1``, ``dask-2`` — the ``dask`` backend on a ``LocalCluster`` started here with 1 and
  2 worker processes (one thread each), reached through its scheduler address as a remote
  cluster would be.

Per system and repeat: ``evals_per_second`` (wall clock; the candidates are the domain's
reference warriors, cycled, the opponents its initial pool, as in a node's first round) and
``overhead_ms_per_eval`` — wall time x workers / evaluations minus the mean time a worker
spent inside the evaluation (``Outcome.seconds``): what moving jobs and results costs per
evaluation. Separately, ``roundtrip_ms``: one trivial job (parsing
a one-line warrior) at a time, the engine's bare per-task latency. Each metric is reported as
mean, std, n and a 95 % t interval over ``--repeats``; the machine's load average is recorded
before and after (wall-clock figures are only as good as the machine is quiet).

The issue's targets: ``dask-2`` >= 1.6 x ``dask-1`` evaluations per second on a 2-core machine,
and ``dask-2``'s overhead per evaluation within 20 % of ``local-2``'s.

Usage::

    python benchmarks/scale_out.py [--evals 40] [--repeats 3] [--write FILE]

Each measurement is a line on stderr; the summary is the one JSON object on stdout
(``docs/figures/scale_out.py`` renders it into docs/multi-machine.md).

Needs Dask distributed (``pip install -e .[dask]``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dei_framework.context import FactoryContext
from dei_framework.dask_backend import DaskBackend
from dei_framework.evaluation import Evaluator, LocalBackend, Outcome, _parse
from dei_framework.plugins import load_plugins
from dei_framework.presets import DEI_PAPER

#: Trivial jobs per round-trip measurement.
ROUNDTRIPS = 30
#: Two-sided 95 % Student t quantiles by degrees of freedom (n - 1).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262}  # fmt: skip


def dei_paper_domain() -> Any:
    """The Core War domain with the dei-paper battle settings."""
    registry = load_plugins()
    context = FactoryContext(registry=registry, options=dict(DEI_PAPER.domain_options), seed=0)
    return registry.domain("coreware").factory(context)


def describe(values: Sequence[float]) -> dict[str, Any]:
    """Mean, std, n and a 95 % t interval."""
    n = len(values)
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if n > 1 else 0.0
    half = T95.get(n - 1, 1.96) * std / math.sqrt(n) if n > 1 else float("nan")
    return {"mean": round(mean, 4), "std": round(std, 4), "n": n,
            "ci95": [round(mean - half, 4), round(mean + half, 4)],
            "values": [round(v, 4) for v in values]}  # fmt: skip


async def _measure(evaluator: Evaluator, texts: Sequence[str], opponents: Sequence[Any],
                   evals: int) -> dict[str, float]:  # fmt: skip
    await evaluator.start()
    installed = evaluator.install(opponents)
    # Warm-up: every worker loads the domain and the opponent set once, as in a run's round.
    await asyncio.gather(*(evaluator.evaluate(text, installed, seed=1) for text in texts[:4]))
    started = time.perf_counter()
    outcomes: list[Outcome] = await asyncio.gather(
        *(evaluator.evaluate(texts[i % len(texts)], installed, seed=i) for i in range(evals))
    )
    wall = time.perf_counter() - started
    inside = statistics.fmean(outcome.seconds for outcome in outcomes)
    workers = evaluator.workers
    trips = []
    for _ in range(ROUNDTRIPS):
        began = time.perf_counter()
        await evaluator._run(_parse, "dat #0")
        trips.append(time.perf_counter() - began)
    return {
        "evals_per_second": evals / wall,
        "overhead_ms_per_eval": 1000 * (wall * workers / evals - inside),
        "eval_ms": 1000 * inside,
        "roundtrip_ms": 1000 * statistics.median(trips),
        "workers": workers,
    }


def measure(system: str, domain: Any, texts: Sequence[str], opponents: Sequence[Any],
            evals: int, cluster: Any = None) -> dict[str, float]:  # fmt: skip
    """One repeat of one system."""
    kind, _, count = system.partition("-")
    if kind == "local":
        backend = LocalBackend(domain, workers=int(count))
    else:
        backend = DaskBackend(domain, address=cluster.scheduler_address)
    evaluator = Evaluator(domain, backend=backend)
    try:
        return asyncio.run(_measure(evaluator, texts, opponents, evals))
    finally:
        evaluator.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=40, help="evaluations per measurement")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--systems", nargs="+",
                        default=["local-1", "local-2", "dask-1", "dask-2"])  # fmt: skip
    parser.add_argument("--write", type=Path, help="also write the JSON to this file")
    args = parser.parse_args()
    import distributed

    domain = dei_paper_domain()
    # A node's first round: its initial opponents; the candidates are the reference warriors.
    opponents = [domain.parse(text) for text in domain.initial_opponents()]
    texts = [domain.parse(text).text for text in domain.reference_opponents()]
    load_before = os.getloadavg()
    rows: dict[str, list[dict[str, float]]] = {system: [] for system in args.systems}
    clusters: dict[str, Any] = {}
    try:
        for system in args.systems:
            if system.startswith("dask-"):
                clusters[system] = distributed.LocalCluster(
                    n_workers=int(system.partition("-")[2]), threads_per_worker=1,
                    processes=True, dashboard_address=None,
                )  # fmt: skip
        for repeat in range(args.repeats):  # systems interleaved: load drifts hit all alike
            for system in args.systems:
                row = measure(system, domain, texts, opponents, args.evals, clusters.get(system))
                rows[system].append(row)
                print(json.dumps({"system": system, "repeat": repeat, **row}), file=sys.stderr,
                      flush=True)  # fmt: skip
    finally:
        for cluster in clusters.values():
            cluster.close()
    summary = {
        system: {metric: describe([row[metric] for row in values])
                 for metric in ("evals_per_second", "overhead_ms_per_eval", "eval_ms",
                                "roundtrip_ms")}
        for system, values in rows.items()
    }  # fmt: skip
    result: dict[str, Any] = {
        "benchmark": "scale_out",
        "settings": {"domain_options": dict(DEI_PAPER.domain_options),
                     "opponents": "the domain's initial opponents", "evals": args.evals,
                     "repeats": args.repeats},
        "machine": {"cpus": os.cpu_count(), "loadavg_before": load_before,
                    "loadavg_after": os.getloadavg()},
        "systems": summary,
    }  # fmt: skip
    if {"dask-1", "dask-2"} <= set(summary):
        result["dask_2_over_dask_1"] = round(
            summary["dask-2"]["evals_per_second"]["mean"]
            / summary["dask-1"]["evals_per_second"]["mean"],
            3,
        )
    if {"local-2", "dask-2"} <= set(summary):
        local = summary["local-2"]["overhead_ms_per_eval"]["mean"]
        result["dask_2_overhead_over_local_2"] = (
            round(summary["dask-2"]["overhead_ms_per_eval"]["mean"] / local, 3) if local else None
        )
    text = json.dumps(result, indent=1)
    print(text)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(text + "\n")


if __name__ == "__main__":
    main()
