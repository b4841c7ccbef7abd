"""Benchmark: a pipelined node keeps its slots busy under heavy-tailed operator latency.

One node of the toy domain, in-process evaluation, an operator whose latency is heavy-tailed
(``--slow-share`` of calls take ``--slow-ms``, the rest ``--fast-ms``, drawn from the request
seed) and ``--concurrency`` slots. Ideal throughput is ``concurrency / mean latency``; the node
reaches a share of it (``throughput_ratio``) — with a batch barrier every batch would wait for
its slowest call. The same seeded run twice must give identical round archives
(``identical``).

``--virtual-clock`` runs the node's driver on an event loop whose clock jumps to the next timer
instead of sleeping, with evaluation done inline: what the driver's scheduling alone achieves
(lag stalls, round boundaries, end of run), whatever the machine's load. ``--lag-per-slot`` and
``--no-early-calls`` show the levers.

Usage::

    python benchmarks/pipeline_offline.py [--calls 400] [--rounds 2] [--concurrency 8]
                                          [--fast-ms 50] [--slow-ms 500] [--slow-share 0.1]
                                          [--virtual-clock [--lag-per-slot 6]
                                           [--no-early-calls] [--repeats 5]]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import selectors
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "toy"))

import toy_domain  # noqa: E402

from dei_framework import NodeConfig, RunConfig, Scheduler, hookimpl, load_plugins, run  # noqa: E402
from dei_framework.contract.operators import OperatorRequest, OperatorSpec  # noqa: E402
from dei_framework.evaluation.local import Evaluator  # noqa: E402
from dei_framework.runtime.budget.ledger import BudgetLedger  # noqa: E402
from dei_framework.runtime.driver import SearchDriver  # noqa: E402
from dei_framework.runtime.node.assembly import LAG_PER_SLOT  # noqa: E402


class HeavyTailed(toy_domain.ToyOperator):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(label="heavy-tailed", max_in_flight=args.concurrency)
        self.args = args
        self.latencies: list[float] = []

    async def propose(self, request: OperatorRequest):
        slow = random.Random(request.seed ^ 0x5EED).random() < self.args.slow_share
        self.latencies.append((self.args.slow_ms if slow else self.args.fast_ms) / 1000)
        await asyncio.sleep(self.latencies[-1])
        return await super().propose(request)


class _JumpingSelector(selectors.DefaultSelector):
    """Never blocks: when nothing is ready, the loop's clock jumps by the timeout instead."""

    def __init__(self) -> None:
        super().__init__()
        self.loop: VirtualClockLoop | None = None

    def select(self, timeout=None):
        ready = super().select(0)
        if not ready and timeout:
            self.loop.now += timeout
        return ready


class VirtualClockLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        selector = _JumpingSelector()
        super().__init__(selector)
        selector.loop = self
        self.now = 0.0

    def time(self) -> float:
        return self.now


class InlineEvaluator(Evaluator):
    """Evaluates on the loop itself (no thread), so no real time passes unseen by the clock."""

    async def _run(self, function, *args, lane: str = "candidates"):
        return function(self.domain, *args)


def virtual(args: argparse.Namespace, seed: int) -> tuple[float, list]:
    """Throughput ratio (against the ideal for the latencies drawn) and the round events of
    one run on the virtual clock."""
    domain = toy_domain.ToyDomain()
    lag = args.lag_per_slot * args.concurrency
    scheduler = Scheduler.for_domain(
        domain, name="n", calls=args.calls, rounds=args.rounds, seed=seed, lag=lag
    )
    operator = HeavyTailed(args)
    driver = SearchDriver(
        scheduler=scheduler,
        domain=domain,
        operator=operator,
        evaluator=InlineEvaluator(domain, workers=0),
        ledger=BudgetLedger(quotas={"n": args.calls}),
    )
    if args.no_early_calls:
        driver._call_early = lambda free: None
    loop = VirtualClockLoop()
    try:
        loop.run_until_complete(driver.run())
    finally:
        loop.close()
    ideal = args.concurrency / statistics.fmean(operator.latencies)  # as drawn in this run
    return args.calls / loop.now / ideal, driver.history


def measure(args: argparse.Namespace, registry) -> tuple[float, list]:
    config = RunConfig(
        domain="toy",
        nodes=[NodeConfig(name="n", operator="heavy-tailed")],
        budget=args.calls,
        rounds=args.rounds,
        seed=args.seed,
        sharing="none",
        eval_workers=0,
    )
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        summary = run(config, out, registry=registry)
        seconds = time.perf_counter() - started
        archives = [
            json.loads(p.read_text())["archive"]
            for p in sorted(Path(out, "nodes", "n").glob("round-*.json"))
        ]
    return summary.budget["calls"] / seconds, archives


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--fast-ms", type=float, default=50)
    parser.add_argument("--slow-ms", type=float, default=500)
    parser.add_argument("--slow-share", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--virtual-clock", action="store_true")
    parser.add_argument("--lag-per-slot", type=int, default=LAG_PER_SLOT)
    parser.add_argument("--no-early-calls", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    mean_s = ((1 - args.slow_share) * args.fast_ms + args.slow_share * args.slow_ms) / 1000
    ideal = args.concurrency / mean_s
    if args.virtual_clock:
        runs = [virtual(args, args.seed + k) for k in range(args.repeats)]
        ratios = [ratio for ratio, _ in runs]
        again = virtual(args, args.seed)
        print(
            json.dumps(
                {
                    "clock": "virtual",
                    "calls": args.calls,
                    "rounds": args.rounds,
                    "concurrency": args.concurrency,
                    "mean_latency_s": mean_s,
                    "lag": args.lag_per_slot * args.concurrency,
                    "early_calls": not args.no_early_calls,
                    "n": len(ratios),
                    "throughput_ratio": round(statistics.fmean(ratios), 3),
                    "throughput_ratio_min": round(min(ratios), 3),
                    "throughput_ratio_max": round(max(ratios), 3),
                    "identical": again[1] == runs[0][1],
                }
            )
        )
        return

    class Plugin:
        @hookimpl
        def dei_operators(self):
            return [OperatorSpec(name="heavy-tailed", factory=lambda ctx: HeavyTailed(args))]

    registry = load_plugins(extra=[toy_domain, Plugin()], entry_points=False)
    first, archives = measure(args, registry)
    second, again = measure(args, registry)
    achieved = max(first, second)
    print(
        json.dumps(
            {
                "calls": args.calls,
                "concurrency": args.concurrency,
                "mean_latency_s": mean_s,
                "ideal_calls_per_s": round(ideal, 2),
                "achieved_calls_per_s": round(achieved, 2),
                "throughput_ratio": round(achieved / ideal, 3),
                "identical": archives == again,
            }
        )
    )


if __name__ == "__main__":
    main()
