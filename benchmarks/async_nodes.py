"""Benchmark: DEI nodes never wait for each other; a 10x slower peer leaves fast ones alone.

DEI publishes round champions without a barrier: a node drains its inbox at the start of a round
and goes on. This measures it. Fast nodes (an operator that sleeps ``--fast-ms`` per call) run
once on their own and once next to one slow peer (``--slow-ms`` per call, 10x slower by
default), all in one process over the in-memory transport with in-process evaluation; the fast
nodes' operator calls per second must stay within 10% (``ratio >= 0.9``). It also counts how many
of the slow peer's champions the fast nodes received (late champions still arrive).

Usage::

    python benchmarks/async_nodes.py [--fast-ms 20] [--slow-ms 200] [--fast-nodes 3]
                                     [--calls 100] [--rounds 10] [--repeats 3] [--check]
                                     [--delivery wallclock|virtual]

The claim holds for wall-clock delivery (``--delivery wallclock``, the default here, and what a
run across processes uses); with virtual-time delivery, the default of an in-process run, nodes
wait for each other at round starts by design, to be reproducible (docs/architecture.md).

Prints one JSON object; ``--check`` exits 1 when the ratio is below ``--tolerance``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "toy"))

import toy_domain  # noqa: E402

from dei_framework import hookimpl  # noqa: E402
from dei_framework.contract.operators import Operator, OperatorRequest, OperatorSpec  # noqa: E402
from dei_framework.plugin.manager import PluginRegistry, load_plugins  # noqa: E402
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig  # noqa: E402
from dei_framework.runtime.ensemble import run  # noqa: E402
from dei_framework.runtime.files.run_dir import read_jsonl  # noqa: E402


class SleepyOperator(Operator):
    """The toy operator behind a fixed delay per call, one call at a time (a model's latency)."""

    offline = True
    max_in_flight = 1

    def __init__(self, label: str, delay: float) -> None:
        self.label = label
        self.delay = delay
        self._inner = toy_domain.ToyOperator(label=label)

    async def propose(self, request: OperatorRequest):
        await asyncio.sleep(self.delay)
        return await self._inner.propose(request)


class SleepyPlugin:
    """Registers ``toy-sleep`` (option ``delay``: seconds per call)."""

    @hookimpl
    def dei_operators(self):
        return [
            OperatorSpec(
                name="toy-sleep",
                factory=lambda ctx: SleepyOperator(
                    f"toy-sleep-{ctx.options['delay'] * 1000:g}ms", float(ctx.options["delay"])
                ),
                domains=("toy",),
                description="toy operator with a fixed delay per call (benchmarks)",
            )
        ]


def measure(
    registry: PluginRegistry,
    *,
    fast_nodes: int,
    fast_s: float,
    slow_s: float | None,
    calls: int,
    rounds: int,
    seed: int,
    delivery: str,
) -> dict[str, Any]:
    """One run; returns the fast nodes' calls per second (first to last call, per node)."""
    nodes = [
        NodeConfig(name=f"fast-{i}", operator="toy-sleep", options={"delay": fast_s})
        for i in range(fast_nodes)
    ]
    if slow_s is not None:
        nodes.append(NodeConfig(name="slow", operator="toy-sleep", options={"delay": slow_s}))
    config = RunConfig(
        domain="toy",
        transport="inmemory",
        nodes=nodes,
        budget=calls * len(nodes),
        rounds=rounds,
        seed=seed,
        eval_workers=0,
        checkpoint_seconds=3600.0,
        delivery=delivery,
    )
    stamps: dict[str, list[float]] = {node.name: [] for node in nodes}

    def progress(kind: str, data: dict[str, Any]) -> None:
        if kind == "evaluated" and data.get("kind") in ("new", "mutate"):
            stamps[data["node"]].append(time.perf_counter())

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        run(config, Path(tmp) / "run", registry=registry, progress=progress)
        wall = time.perf_counter() - started
        received = [
            e
            for e in read_jsonl(Path(tmp) / "run" / "events.jsonl")
            if e.get("event") == "received"
        ]
    rates = {}
    for name, times in stamps.items():
        # From the first call's result to the last: covers every round boundary (inbox
        # drain, warm start), where waiting for a peer would show.
        rates[name] = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else None
    fast = [rates[f"fast-{i}"] for i in range(fast_nodes)]
    return {
        "fast_ips": statistics.fmean(r for r in fast if r is not None),
        "fast_done_s": max(stamps[f"fast-{i}"][-1] for i in range(fast_nodes)) - started,
        "slow_ips": rates.get("slow"),
        "slow_done_s": stamps["slow"][-1] - started if "slow" in stamps else None,
        "wall_s": wall,
        "received_from_slow": sum(
            1 for e in received if e.get("from") == "slow" and e["node"] != "slow"
        ),
        "received_by_fast": sum(1 for e in received if e["node"].startswith("fast")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast-ms", type=float, default=20.0)
    parser.add_argument("--slow-ms", type=float, default=200.0)
    parser.add_argument("--fast-nodes", type=int, default=3)
    parser.add_argument("--calls", type=int, default=100, help="Calls per node (all rounds).")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="Pairs of runs; medians reported.")
    parser.add_argument("--tolerance", type=float, default=0.9)
    parser.add_argument("--check", action="store_true", help="Exit 1 below the tolerance.")
    parser.add_argument(
        "--delivery",
        choices=["wallclock", "virtual"],
        default="wallclock",
        help="Champion delivery (default wallclock: the never-wait mode; virtual, the default "
        "of an in-process run, makes nodes wait at round starts for determinism).",
    )
    args = parser.parse_args(argv)
    registry = load_plugins([toy_domain, SleepyPlugin()])
    common = dict(
        fast_nodes=args.fast_nodes,
        fast_s=args.fast_ms / 1000,
        calls=args.calls,
        rounds=args.rounds,
        delivery=args.delivery,
    )
    alone, together = [], []
    for k in range(args.repeats):
        # Interleaved, so drifting machine load hits both settings alike.
        alone.append(measure(registry, slow_s=None, seed=k, **common))
        together.append(measure(registry, slow_s=args.slow_ms / 1000, seed=k, **common))
    fast_alone = statistics.median(m["fast_ips"] for m in alone)
    fast_with = statistics.median(m["fast_ips"] for m in together)
    ratio = fast_with / fast_alone
    result = {
        "fast_alone_ips": round(fast_alone, 3),
        "fast_with_slow_peer_ips": round(fast_with, 3),
        "ratio": round(ratio, 4),
        "within_tolerance": ratio >= args.tolerance,
        "tolerance": args.tolerance,
        "ideal_fast_ips": round(1000 / args.fast_ms, 3),
        "slow_peer_ips": round(statistics.median(m["slow_ips"] for m in together), 3),
        "fast_done_s_alone": round(statistics.median(m["fast_done_s"] for m in alone), 3),
        "fast_done_s_with_slow_peer": round(
            statistics.median(m["fast_done_s"] for m in together), 3
        ),
        "slow_done_s": round(statistics.median(m["slow_done_s"] for m in together), 3),
        "champions_received_from_slow_peer": [m["received_from_slow"] for m in together],
        "fast_nodes": args.fast_nodes,
        "calls_per_node": args.calls,
        "rounds": args.rounds,
        "fast_ms": args.fast_ms,
        "slow_ms": args.slow_ms,
        "repeats": args.repeats,
        "delivery": args.delivery,
        "per_repeat_ratio": [
            round(t["fast_ips"] / a["fast_ips"], 4) for a, t in zip(alone, together, strict=True)
        ],
    }
    print(json.dumps(result, indent=1))
    return 1 if args.check and not result["within_tolerance"] else 0


if __name__ == "__main__":
    sys.exit(main())
