"""Simulates GossipSub champion sharing over the in-memory hub on virtual time.

Usage::

    python benchmarks/gossip_sim.py --nodes 64 --loss 0.1 --messages 100 --json

Every node runs the real :class:`~dei_transports.gossipsub.GossipSubRouter` over a real
:class:`~dei_transports.inmemory.HubLink`; only the clock is virtual (a discrete-event
scheduler), so a run of hundreds of heartbeats takes seconds. Messages are published by random
nodes, one every ``--interval`` seconds after a warm-up, and the run continues for
``--settle`` heartbeats so lazy gossip can repair losses. Prints one JSON line (``--json``) or a
short table.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Any

from dei_transports.gossipsub import GossipSubParams, GossipSubRouter
from dei_transports.inmemory import Hub, VirtualClock


def simulate(
    nodes: int,
    loss: float,
    messages: int,
    *,
    d: int = 3,
    heartbeat: float = 1.0,
    latency: tuple[float, float] = (0.005, 0.05),
    interval: float = 0.25,
    warmup: int = 5,
    settle: int = 30,
    seed: int = 1,
    flood_publish: bool = True,
    max_peers: int | None = None,
) -> dict[str, Any]:
    """Runs one simulation and returns its figures (``max_peers``: the router's peer cap)."""
    clock = VirtualClock()
    hub = Hub(loss=loss, latency=latency, seed=seed, scheduler=clock)
    params = GossipSubParams.from_options(
        {"d": d, "heartbeat": heartbeat, "flood_publish": flood_publish, "max_peers": max_peers}
    )
    routers: list[GossipSubRouter] = []
    for index in range(nodes):
        link = hub.link(f"n{index:04d}")
        router = GossipSubRouter(
            link, params, seed=seed * 100_003 + index, clock=clock.time, sink=link.send_nowait
        )
        link.receiver = router.handle_frame
        routers.append(router)
    rng = random.Random(seed)

    def beat(router: GossipSubRouter) -> None:
        router.heartbeat()
        clock.call_later(heartbeat, beat, router)

    for router in routers:
        router.announce()
        clock.call_later(rng.uniform(0, heartbeat), beat, router)
    start = warmup * heartbeat
    baseline: dict[str, int] = {}

    def snapshot() -> None:
        # Control traffic is counted from the first publish on (the start-up handshake and
        # mesh building are not per-publish costs).
        for key in ("frames_sent", "data_frames_sent"):
            baseline[key] = sum(r.counters[key] for r in routers)

    clock.call_later(start - 1e-6, snapshot)
    for number in range(messages):
        publisher = rng.choice(routers)
        payload = f"champion {number} from {publisher.peer_id}".encode()
        clock.call_later(start + number * interval, publisher.publish_now, payload)
    end = start + messages * interval + settle * heartbeat
    wall = time.perf_counter()
    clock.run_until(end)
    wall = time.perf_counter() - wall

    delivered = sum(r.counters["delivered"] for r in routers)
    duplicates = sum(r.counters["duplicates"] for r in routers)
    hops_total = sum(r.hops_total for r in routers)
    frames = sum(r.counters["frames_sent"] for r in routers)
    data_bytes = sum(r.counters["bytes_sent"] for r in routers)
    expected = messages * (nodes - 1)
    control = (frames - baseline["frames_sent"]) - (
        sum(r.counters["data_frames_sent"] for r in routers) - baseline["data_frames_sent"]
    )
    per_publish = nodes * messages
    return {
        "nodes": nodes,
        "loss": loss,
        "messages": messages,
        "d": d,
        "delivery_ratio": round(delivered / expected, 6) if expected else 1.0,
        "duplicates_per_delivery": round(duplicates / delivered, 4) if delivered else 0.0,
        "duplicates_per_node_per_publish": round(duplicates / per_publish, 3),
        "control_frames_per_node_per_publish": round(control / per_publish, 3),
        "flood_publish": flood_publish,
        "undelivered": expected - delivered,
        "mean_hops": round(hops_total / delivered, 3) if delivered else 0.0,
        "max_hops": max((r.hops_max for r in routers), default=0),
        "messages_per_node": round(frames / nodes, 1),
        "bytes_per_node": round(data_bytes / nodes),
        "mesh_mean": round(sum(len(r.mesh) for r in routers) / nodes, 2),
        "virtual_seconds": end,
        "wall_seconds": round(wall, 2),
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--loss", type=float, default=0.1)
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--d", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--settle", type=int, default=30, help="heartbeats after the last publish")
    parser.add_argument("--no-flood-publish", action="store_true")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    result = simulate(
        args.nodes,
        args.loss,
        args.messages,
        d=args.d,
        seed=args.seed,
        settle=args.settle,
        flood_publish=not args.no_flood_publish,
    )
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>24}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
