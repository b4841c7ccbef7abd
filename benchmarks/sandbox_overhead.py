"""Benchmark: what the sandbox costs per evaluation, and whether a sandboxed LLM run keeps its
calls flowing; prints JSON.

**Overhead.** The naive program domain (``tests/naive``: FunSearch's online bin packing, its
``evaluate`` execs the program) evaluates one cheap program ``--evals`` times, one evaluation
at a time, through an :class:`~dei_framework.evaluation.local.Evaluator` with one worker
process, at each level: ``none`` (the program runs in the worker itself), ``process`` (a child
forked from the worker's warm process) and ``isolated`` (the same inside bubblewrap; left out
when bubblewrap cannot run). The levels take turns within each of ``--repeats`` repeats, so a
repeat's differences are measured under the same machine load; ``added_ms`` is the mean
wall-clock time per evaluation minus ``none``'s, as mean, std, n and the 95 % t half-width over
the repeats. Two modes: ``paced`` (``--pause-s`` between evaluations, as when candidates
arrive from a model: the warm process forks the next child and reaps the last one in the
pause, so this is the latency a candidate sees) and ``back_to_back`` (no pause: that work is
then in the way too, so this is the whole cost per evaluation, CPU included).

**Throughput.** ``dei-run``'s library entry point runs 4 nodes of the naive domain with
``--sandbox none`` and then ``process`` against a loopback OpenAI-compatible server (a
process of its own, ``benchmarks/llm_pipeline.py``'s) that answers every request after
``--latency-s`` with an ordinary program; ideal throughput is (nodes x concurrency) / mean
latency, achieved is calls served over the server's busy window; ``throughput_ratio`` is
their ratio per repeat.

Usage::

    python benchmarks/sandbox_overhead.py [--evals 300] [--repeats 5] [--calls 960]
                                          [--latency-s 1.0] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "naive"), str(REPO / "benchmarks")]

import llm_pipeline  # noqa: E402
import naive_domain  # noqa: E402

from dei_framework import NodeConfig, RunConfig, load_plugins, run  # noqa: E402
from dei_framework.analysis.stats import mean_interval  # noqa: E402
from dei_framework.contract.errors import ConfigError  # noqa: E402
from dei_framework.evaluation.local import Evaluator  # noqa: E402
from dei_framework.evaluation.sandbox import choose_policy  # noqa: E402

#: The cheap program: best fit in one line.
PROGRAM = "def priority(item, bins):\n    return [-(free - item) for free in bins]\n"
AXES = {"lines", "first_fit_share"}


def _interval(values: list[float]) -> dict:
    mean, std, half = mean_interval(values)
    return {
        "mean": round(mean, 4),
        "std": round(std, 4),
        "n": len(values),
        "ci95_half_width": None if half is None else round(half, 4),
    }


async def _per_evaluation_ms(evaluator: Evaluator, evals: int, pause: float) -> float:
    """Mean wall-clock milliseconds from asking for an evaluation to its outcome; ``pause``
    seconds between evaluations (not counted)."""
    for _ in range(10):  # warm: the pool worker, the warm process, the opponent set
        await evaluator.evaluate(PROGRAM, [], seed=1)
    total = 0.0
    for seed in range(evals):
        if pause:
            await asyncio.sleep(pause)
        started = time.perf_counter()
        outcome = await evaluator.evaluate(PROGRAM, [], seed=seed)
        total += time.perf_counter() - started
        assert outcome.evaluation is not None, outcome.error
    return total * 1000 / evals


def overhead(args: argparse.Namespace) -> dict:
    domain = naive_domain.NaiveBinPacking()
    levels = ["none", "process", "isolated"]
    try:
        choose_policy(domain, level="isolated")
    except ConfigError as exc:
        levels.remove("isolated")
        print(f"isolated left out: {exc}", file=sys.stderr)
    evaluators = {
        level: Evaluator(
            domain, workers=1, descriptor_keys=AXES, sandbox=choose_policy(domain, level=level)
        )
        for level in levels
    }
    modes = {"paced": args.pause_s, "back_to_back": 0.0}
    per_level = {(mode, level): [] for mode in modes for level in levels}

    async def measure() -> None:
        for _ in range(args.repeats):
            for mode, pause in modes.items():
                for level in levels:
                    per_level[mode, level].append(
                        await _per_evaluation_ms(evaluators[level], args.evals, pause)
                    )

    try:
        asyncio.run(measure())
    finally:
        for evaluator in evaluators.values():
            evaluator.close()
    result: dict = {"evals_per_repeat": args.evals, "pause_s": args.pause_s}
    for mode in modes:
        result[mode] = {}
        for level in levels:
            times = per_level[mode, level]
            added = [ms - base for ms, base in zip(times, per_level[mode, "none"], strict=True)]
            result[mode][level] = {
                "ms_per_eval": _interval(times),
                **({"added_ms": _interval(added)} if level != "none" else {}),
            }
    return result


class NaiveServer(llm_pipeline.HeavyTailedServer):
    """Every reply after the same delay, an ordinary program (seeded variety)."""

    def answer(self, body: dict) -> tuple[float, str]:
        with self.lock:
            text = naive_domain.ordinary(self.rng)
        return self.fast_s, f"```python\n{text}```"


def throughput(args: argparse.Namespace, repeat: int, level: str) -> dict:
    server = llm_pipeline.ServerProcess(
        args.latency_s, args.latency_s, seed=repeat, server_class=NaiveServer
    )
    options = {"api_base": server.base_url, "concurrency": args.concurrency, "timeout": 60.0}
    nodes = [
        NodeConfig(name=f"llm-{i}", operator="openai/bench", options=options) for i in range(4)
    ]
    config = RunConfig(
        domain="naive",
        nodes=nodes,
        budget=args.calls,
        rounds=2,
        seed=repeat,
        eval_workers=args.eval_workers,
        sandbox=level,
    )
    try:
        with tempfile.TemporaryDirectory() as out:
            summary = run(config, out, registry=load_plugins([naive_domain]))
    finally:
        served, latency, window = server.close()
    achieved, ideal = served / window, len(nodes) * args.concurrency / latency
    return {
        "calls": summary.budget["calls"],
        "invalid": summary.invalid,
        "mean_latency_s": round(latency, 4),
        "window_s": round(window, 2),
        "achieved_calls_per_s": round(achieved, 3),
        "ideal_calls_per_s": round(ideal, 3),
        "throughput_ratio": round(achieved / ideal, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pause-s", type=float, default=0.02)
    parser.add_argument("--calls", type=int, default=960)
    parser.add_argument("--latency-s", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--eval-workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--throughput-repeats", type=int, default=3)
    args = parser.parse_args()
    result = {"overhead": overhead(args), "cpus": os.cpu_count()}
    result["throughput"] = {
        "nodes": 4,
        "concurrency_per_node": args.concurrency,
        "latency_s": args.latency_s,
    }
    for level in ("none", "process"):  # the same server and seeds: common ground
        runs = [throughput(args, repeat, level) for repeat in range(args.throughput_repeats)]
        result["throughput"][level] = {
            "runs": runs,
            "throughput_ratio": _interval([r["throughput_ratio"] for r in runs]),
        }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
