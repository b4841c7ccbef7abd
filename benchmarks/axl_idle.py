"""Measures what idle AXL nodes cost: API requests per second per node with adaptive polling.

Usage::

    python benchmarks/axl_idle.py --nodes 3 --seconds 10 --json

Starts ``--nodes`` real AXL nodes on loopback (the binary ``scripts/axl-node`` built; see
``dei_transports.axlnode``), runs one GossipSub router over each with the default ``axl``
options (1 s heartbeat), publishes nothing, and counts every HTTP request each router makes to
its node after a warm-up: ``/recv`` polls, ``/topology`` refreshes and ``/send`` (heartbeat
gossip). Prints one JSON line (``--json``) or a short table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dei_transports.axlnode import AxlNodeProcess, find_binary
from dei_transports.plugin import make_axl


async def _measure(apis: list[str], seconds: float, warmup: float, options: dict) -> list[dict]:
    routers = [make_axl(["n"], dict(options, axl_api=api))[0] for api in apis]
    for router in routers:
        await router.start()
    try:
        await asyncio.sleep(warmup)
        before = [dict(r.link.counters) for r in routers]
        cpu = time.process_time()
        await asyncio.sleep(seconds)
        cpu = time.process_time() - cpu
        after = [dict(r.link.counters) for r in routers]
    finally:
        for router in routers:
            await router.close()
    rows = []
    for b, a in zip(before, after, strict=True):
        rows.append(
            {
                k: (a.get(k, 0) - b.get(k, 0)) / seconds
                for k in ("api_requests", "recv_requests", "sent", "topology_refreshes")
            }
        )
    rows.append({"cpu_seconds_per_second_all_routers": cpu / seconds})
    return rows


def run(nodes: int, seconds: float, warmup: float, max_poll_interval: float) -> dict[str, Any]:
    """Starts the nodes, measures, stops them; returns the figures."""
    binary = find_binary()
    with tempfile.TemporaryDirectory(prefix="dei-axl-idle-") as tmp:
        procs: list[AxlNodeProcess] = []
        try:
            for index in range(nodes):
                peers = [procs[0].listen_address] if index else []
                proc = AxlNodeProcess(binary, home=Path(tmp) / f"n{index}", peers=peers)
                proc.start()
                procs.append(proc)
            for index, proc in enumerate(procs):
                proc.wait_ready(peers_up=(nodes - 1) if index == 0 else min(1, nodes - 1))
            options = {"max_poll_interval": max_poll_interval}
            rows = asyncio.run(_measure([p.api for p in procs], seconds, warmup, options))
        finally:
            for proc in procs:
                proc.stop()
    per_node = rows[:-1]
    return {
        "nodes": nodes,
        "seconds": seconds,
        "max_poll_interval": max_poll_interval,
        "api_requests_per_s_per_node": round(sum(r["api_requests"] for r in per_node) / nodes, 2),
        "recv_polls_per_s_per_node": round(sum(r["recv_requests"] for r in per_node) / nodes, 2),
        "sends_per_s_per_node": round(sum(r["sent"] for r in per_node) / nodes, 2),
        "router_cpu_percent_per_node": round(
            100 * rows[-1]["cpu_seconds_per_second_all_routers"] / nodes, 2
        ),
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--max-poll-interval", type=float, default=0.1)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    result = run(args.nodes, args.seconds, args.warmup, args.max_poll_interval)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>30}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
