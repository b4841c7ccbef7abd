"""Measures how long champion flow takes to resume after one AXL node is killed and restarted.

Usage::

    python benchmarks/axl_restart.py --trials 10 --victim c --json

Each trial starts three loopback AXL nodes the way ``dei-run --transport axl`` does on one
machine (``AxlLocalNetwork``, full peering: ``c`` dials ``a`` and ``b``, ``b`` dials ``a``) and a
GossipSub router over an ``AxlLink`` per node, with the run's membership, in this process.
Once every node has everyone's first message, the victim's AXL node is killed with SIGKILL, each
router publishes while it is down, and ``--down`` seconds later it is restarted with the same
key and ports, as the launcher does. As soon as its API answers, every router publishes again.
Recorded per trial: the seconds from the restart to the first delivery of a message published
after it, into the victim (``inbound``: from either peer) and out of it (``outbound``: to either
peer), and whether the messages published while it was down reached it too.

Prints one JSON object (``--json``) or an indented one, with every trial's figures and, per
direction, n, the median, the minimum and the maximum. A direction that did not resume within
``--deadline`` seconds counts as ``null`` and makes the run exit with status 1. The machine is
shared, so figures vary run to run: report n, the spread and the machine with them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

NAMES = ("a", "b", "c")


async def _trial(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    from dei_transports.axlnode import AxlLocalNetwork
    from dei_transports.plugin import make_axl

    from dei_framework.net.envelope import NodeIdentity

    home.mkdir(parents=True)
    keys = {}
    for name in NAMES:
        keys[name] = home / f"{name}.pem"
        NodeIdentity.generate().save(keys[name])
    members = [NodeIdentity.load(keys[name]).public_key_hex for name in NAMES]
    network = AxlLocalNetwork(names=list(NAMES), home=home)
    apis = await asyncio.to_thread(network.start, keys)
    options = {"heartbeat": args.heartbeat, "members": members}
    routers = {
        name: make_axl([name], {**options, "axl_api": apis[name]["axl_api"]})[0] for name in NAMES
    }
    loop = asyncio.get_running_loop()
    got: dict[str, dict[bytes, float]] = {name: {} for name in NAMES}

    async def drain() -> None:
        while True:
            for name, router in routers.items():
                for delivery in router.drain():
                    got[name].setdefault(delivery.payload, loop.time())
            await asyncio.sleep(0.005)

    async def until(predicate: Any, timeout: float) -> bool:
        deadline = loop.time() + timeout
        while loop.time() < deadline and not predicate():
            await asyncio.sleep(0.02)
        return bool(predicate())

    def wanted(phase: str) -> dict[str, set[bytes]]:
        return {n: {f"{m} {phase}".encode() for m in NAMES if m != n} for n in NAMES}

    def arrived(phase: str) -> bool:
        return all(want <= got[n].keys() for n, want in wanted(phase).items())

    drainer = asyncio.create_task(drain())
    victim = args.victim
    try:
        for router in routers.values():
            await router.start()
        for name, router in routers.items():
            await router.publish(f"{name} before".encode())
        if not await until(lambda: arrived("before"), 60):
            raise RuntimeError("the three nodes did not exchange their first messages in 60 s")
        node = network.nodes[victim]
        assert node.process is not None
        node.process.send_signal(signal.SIGKILL)
        node.process.wait()
        for name, router in routers.items():
            await router.publish(f"{name} during".encode())
        await asyncio.sleep(args.down)
        await asyncio.to_thread(network.check)
        restarted = loop.time()
        await asyncio.to_thread(node.wait_ready, 0)
        answered = loop.time()
        for name, router in routers.items():
            await router.publish(f"{name} after".encode())
        await until(lambda: arrived("after") and arrived("during"), args.deadline)
        peers = [n for n in NAMES if n != victim]

        def first(receivers: list[str], senders: list[str], phase: str) -> float | None:
            times = [
                got[r][f"{s} {phase}".encode()]
                for r in receivers
                for s in senders
                if r != s and f"{s} {phase}".encode() in got[r]
            ]
            return round(min(times) - restarted, 3) if times else None

        return {
            "api_answers_s": round(answered - restarted, 3),
            "inbound_s": first([victim], peers, "after"),
            "outbound_s": first(peers, [victim], "after"),
            "all_after_s": round(
                max(got[r][p] for r, want in wanted("after").items() for p in want) - restarted, 3
            )
            if arrived("after")
            else None,
            "caught_up_during": arrived("during"),
            "send_timeouts": sum(r.link.counters["send_timeouts"] for r in routers.values()),
            "ihave_superseded": sum(r.counters["ihave_superseded"] for r in routers.values()),
        }
    finally:
        drainer.cancel()
        for router in routers.values():
            await router.close()
        await asyncio.to_thread(network.stop)


def _summary(values: list[float | None]) -> dict[str, Any]:
    done = [v for v in values if v is not None]
    return {
        "n": len(values),
        "resumed": len(done),
        "median_s": round(statistics.median(done), 3) if done else None,
        "min_s": min(done) if done else None,
        "max_s": max(done) if done else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument(
        "--victim", choices=NAMES, default="c", help="c dials the others; a is dialled by them"
    )
    parser.add_argument("--down", type=float, default=0.5, help="seconds the AXL node is down")
    parser.add_argument("--heartbeat", type=float, default=1.0)
    parser.add_argument("--deadline", type=float, default=60.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    logging.getLogger("dei_transports").setLevel(logging.ERROR)  # the expected outage warnings
    trials = []
    with tempfile.TemporaryDirectory(prefix="dei-axl-restart-") as tmp:
        for index in range(args.trials):
            trials.append(asyncio.run(_trial(args, Path(tmp) / str(index))))
    out = {
        "victim": args.victim,
        "down_s": args.down,
        "heartbeat": args.heartbeat,
        "inbound": _summary([t["inbound_s"] for t in trials]),
        "outbound": _summary([t["outbound_s"] for t in trials]),
        "all_after": _summary([t["all_after_s"] for t in trials]),
        "caught_up_during": sum(t["caught_up_during"] for t in trials),
        "trials": trials,
    }
    print(json.dumps(out) if args.json else json.dumps(out, indent=1))
    resumed = all(t["inbound_s"] is not None and t["outbound_s"] is not None for t in trials)
    return 0 if resumed else 1


if __name__ == "__main__":
    sys.exit(main())
