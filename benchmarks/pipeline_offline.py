"""Benchmark: a pipelined node keeps its slots busy under heavy-tailed operator latency.

One node of the toy domain, in-process evaluation, an operator whose latency is heavy-tailed
(``--slow-share`` of calls take ``--slow-ms``, the rest ``--fast-ms``, drawn from the request
seed) and ``--concurrency`` slots. Ideal throughput is ``concurrency / mean latency``; the node
reaches a share of it (``throughput_ratio``) — with a batch barrier every batch would wait for
its slowest call. The same seeded run twice must give identical round archives
(``identical``).

Usage::

    python benchmarks/pipeline_offline.py [--calls 400] [--concurrency 8] [--fast-ms 50]
                                          [--slow-ms 500] [--slow-share 0.1]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "toy"))

import toy_domain  # noqa: E402

from dei_framework import NodeConfig, RunConfig, hookimpl, load_plugins, run  # noqa: E402
from dei_framework.operators import OperatorRequest, OperatorSpec  # noqa: E402


class HeavyTailed(toy_domain.ToyOperator):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(label="heavy-tailed", max_in_flight=args.concurrency)
        self.args = args

    async def propose(self, request: OperatorRequest):
        slow = random.Random(request.seed ^ 0x5EED).random() < self.args.slow_share
        await asyncio.sleep((self.args.slow_ms if slow else self.args.fast_ms) / 1000)
        return await super().propose(request)


def measure(args: argparse.Namespace, registry) -> tuple[float, list]:
    config = RunConfig(domain="toy", nodes=[NodeConfig(name="n", operator="heavy-tailed")],
                       budget=args.calls, rounds=2, seed=args.seed, sharing="none",
                       eval_workers=0)  # fmt: skip
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        summary = run(config, out, registry=registry)
        seconds = time.perf_counter() - started
        archives = [json.loads(p.read_text())["archive"]
                    for p in sorted(Path(out, "nodes", "n").glob("round-*.json"))]  # fmt: skip
    return summary["budget"]["calls"] / seconds, archives


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--fast-ms", type=float, default=50)
    parser.add_argument("--slow-ms", type=float, default=500)
    parser.add_argument("--slow-share", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    class Plugin:
        @hookimpl
        def dei_operators(self):
            return [OperatorSpec(name="heavy-tailed", factory=lambda s, d: HeavyTailed(args))]

    registry = load_plugins(extra=[toy_domain, Plugin()], entry_points=False)
    mean_s = ((1 - args.slow_share) * args.fast_ms + args.slow_share * args.slow_ms) / 1000
    ideal = args.concurrency / mean_s
    first, archives = measure(args, registry)
    second, again = measure(args, registry)
    achieved = max(first, second)
    print(json.dumps({"calls": args.calls, "concurrency": args.concurrency,
                      "mean_latency_s": mean_s, "ideal_calls_per_s": round(ideal, 2),
                      "achieved_calls_per_s": round(achieved, 2),
                      "throughput_ratio": round(achieved / ideal, 3),
                      "identical": archives == again}))  # fmt: skip


if __name__ == "__main__":
    main()
