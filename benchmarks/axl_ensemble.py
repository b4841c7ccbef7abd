"""Measures 8 node processes sharing champions over 8 real AXL nodes on loopback.

Usage::

    python benchmarks/axl_ensemble.py --nodes 8 --idle 10 --publish 30 --interval 5 --json

Starts ``--nodes`` AXL nodes the way ``dei-run --transport axl`` does on one machine
(``AxlLocalNetwork``: node ``i`` peers with nodes ``0`` and ``i - 1``, loopback only), and one
worker process per node running what a ``dei node`` process runs for sharing: a GossipSub router
over an ``AxlLink`` with the run's defaults (1 s heartbeat, adaptive polling 5-100 ms), and an
``InboxFilter`` that verifies every envelope's signature. Then:

1. **idle** (``--idle`` s, after a warm-up): nothing is published; each worker counts its HTTP
   requests to its AXL node and its own CPU time.
2. **publish** (``--publish`` s): every worker publishes one signed champion (a 1.5 kB program)
   every ``--interval`` s at staggered times; each receiver drains its inbox every 5 ms and
   records ``receive time - publish time`` (one clock: one machine) for each champion.

Prints one JSON object (``--json``) or an indented one: champion delivery latency p50/p90/p99
and max (ms), delivery ratio (champions received / published x (nodes - 1)), API requests per
second per node when idle, and CPU per node (the worker: GossipSub + HTTP polling + signature
checks; the AXL node: the Go process, from ``/proc``) as a percent of one core, idle and
publishing. The machine is shared, so figures vary run to run: report n, the spread and the
machine with them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROGRAM = ";redcode-94\n" + "".join(f"        mov.i  #{i}, @{i * 7 % 97}\n" for i in range(48))


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process, from /proc (Linux)."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- one worker: a node process's sharing stack ----------------------------------------------


async def _worker(args: argparse.Namespace) -> dict[str, Any]:
    from dei_transports.plugin import make_axl

    from dei_framework.net.envelope import ChampionEnvelope, InboxFilter, NodeIdentity

    identity = NodeIdentity.load(args.key)
    router = make_axl([args.name], {"axl_api": args.api})[0]
    inbox = InboxFilter(domain="bench", rate_per_minute=10_000, burst=10_000)
    await router.start()
    latencies: list[float] = []
    published = 0

    def drain() -> None:
        now = time.time()
        for delivery in router.drain():
            envelope = inbox.accept(delivery)
            if envelope is not None and envelope.key != identity.public_key_hex:
                latencies.append(now - float(envelope.descriptor["sent"]))

    await asyncio.sleep(max(0.0, args.t0 - time.time()))
    requests0, cpu0 = router.link.counters["api_requests"], time.process_time()
    await asyncio.sleep(args.idle)
    idle = {
        "api_requests_per_s": (router.link.counters["api_requests"] - requests0) / args.idle,
        "cpu_percent": 100 * (time.process_time() - cpu0) / args.idle,
    }
    drain()
    latencies.clear()
    start = time.time()
    cpu0 = time.process_time()
    next_publish = start + args.offset
    end = start + args.publish
    round_index = 0
    while time.time() < end + args.settle:
        now = time.time()
        if now >= next_publish and now < end:
            envelope = ChampionEnvelope(
                domain="bench",
                node=args.name,
                key=identity.public_key_hex,
                round=round_index,
                operator="bench",
                program=PROGRAM + f";{args.name} {round_index}\n",
                fitness=1.0,
                descriptor={"sent": time.time()},
            )
            await router.publish(envelope.encode(identity))
            published += 1
            round_index += 1
            next_publish += args.interval
        drain()
        await asyncio.sleep(0.005)
    busy_cpu = 100 * (time.process_time() - cpu0) / (args.publish + args.settle)
    stats = router.stats()
    await router.close()
    return {
        "name": args.name,
        "idle": idle,
        "publish_cpu_percent": busy_cpu,
        "published": published,
        "latencies": latencies,
        "duplicates": stats.get("duplicates", 0),
        "frames_sent": stats.get("frames_sent", 0),
    }


# --- the benchmark ---------------------------------------------------------------------------


def run(
    nodes: int,
    idle: float,
    publish: float,
    interval: float,
    warmup: float,
    settle: float,
    peering: str = "full",
) -> dict[str, Any]:
    """Starts the AXL nodes and the workers, measures, stops everything; returns the figures."""
    from dei_transports.axlnode import AxlLocalNetwork

    from dei_framework.net.envelope import NodeIdentity

    names = [f"node-{i}" for i in range(nodes)]
    with tempfile.TemporaryDirectory(prefix="dei-axl-ensemble-") as tmp:
        keys = {}
        for name in names:
            keys[name] = Path(tmp) / name / "identity.pem"
            keys[name].parent.mkdir(parents=True)
            NodeIdentity.generate().save(keys[name])
        network = AxlLocalNetwork(names=names, home=Path(tmp), peering=peering)
        workers = []
        try:
            options = network.start(keys)
            axl_pids = {n: d["axl_pid"] for n, d in network.describe().items()}
            t0 = time.time() + warmup + 3.0  # workers start within a few seconds
            for index, name in enumerate(names):
                workers.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            __file__,
                            "--worker",
                            "--name",
                            name,
                            "--api",
                            options[name]["axl_api"],
                            "--key",
                            str(keys[name]),
                            "--t0",
                            str(t0),
                            "--idle",
                            str(idle),
                            "--publish",
                            str(publish),
                            "--interval",
                            str(interval),
                            "--settle",
                            str(settle),
                            "--offset",
                            str(interval * index / nodes),
                        ],
                        stdout=subprocess.PIPE,
                        text=True,
                    )
                )
            time.sleep(max(0.0, t0 - time.time()))
            axl_cpu0 = {n: _proc_cpu(p) for n, p in axl_pids.items()}
            time.sleep(idle)
            axl_idle = {n: 100 * (_proc_cpu(p) - axl_cpu0[n]) / idle for n, p in axl_pids.items()}
            axl_cpu0 = {n: _proc_cpu(p) for n, p in axl_pids.items()}
            time.sleep(publish + settle)
            axl_busy = {
                n: 100 * (_proc_cpu(p) - axl_cpu0[n]) / (publish + settle)
                for n, p in axl_pids.items()
            }
            results = []
            for worker in workers:
                stdout, _ = worker.communicate(timeout=120)
                if worker.returncode != 0:
                    raise RuntimeError(f"a worker failed (status {worker.returncode})")
                results.append(json.loads(stdout.strip().splitlines()[-1]))
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.kill()
            network.stop()
    latencies = sorted(1000 * x for r in results for x in r["latencies"])
    published = sum(r["published"] for r in results)

    def pct(q: float) -> float | None:
        if not latencies:
            return None
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))], 1)

    def mean(values: list[float]) -> float:
        return round(statistics.fmean(values), 2)

    def spread(values: list[float]) -> list[float]:
        return [round(min(values), 2), round(max(values), 2)]

    idle_requests = [r["idle"]["api_requests_per_s"] for r in results]
    return {
        "nodes": nodes,
        "peering": peering,
        "processes": {"dei": nodes, "axl": nodes},
        "idle_seconds": idle,
        "publish_seconds": publish,
        "publish_interval_s": interval,
        "champions_published": published,
        "champions_received": len(latencies),
        "delivery_ratio": round(len(latencies) / (published * (nodes - 1)), 4)
        if published
        else None,
        "latency_ms": {
            "p50": pct(0.5),
            "p90": pct(0.9),
            "p99": pct(0.99),
            "max": round(latencies[-1], 1) if latencies else None,
        },
        "idle_api_requests_per_s_per_node": mean(idle_requests),
        "idle_api_requests_per_s_range": spread(idle_requests),
        "idle_cpu_percent_per_node": {
            "worker": mean([r["idle"]["cpu_percent"] for r in results]),
            "worker_range": spread([r["idle"]["cpu_percent"] for r in results]),
            "axl_node": mean(list(axl_idle.values())),
        },
        "publishing_cpu_percent_per_node": {
            "worker": mean([r["publish_cpu_percent"] for r in results]),
            "worker_range": spread([r["publish_cpu_percent"] for r in results]),
            "axl_node": mean(list(axl_busy.values())),
        },
        "duplicates_per_node": mean([r["duplicates"] for r in results]),
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--idle", type=float, default=10.0)
    parser.add_argument("--publish", type=float, default=30.0)
    parser.add_argument(
        "--interval",
        type=float,
        default=5.0,
        help="Seconds between one node's champions (DEI: one per round).",
    )
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument(
        "--peering",
        choices=("full", "chain"),
        default="full",
        help="AXL peerings: every pair (dei-run's default) or a chain.",
    )
    parser.add_argument("--json", action="store_true")
    # worker mode (internal)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for flag in ("--name", "--api", "--key"):
        parser.add_argument(flag, help=argparse.SUPPRESS)
    parser.add_argument("--t0", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--offset", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(asyncio.run(_worker(args))))
        return
    result = run(
        args.nodes, args.idle, args.publish, args.interval, args.warmup, args.settle, args.peering
    )
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
