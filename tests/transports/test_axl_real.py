"""GossipSub over 3 real AXL nodes on loopback (needs ``scripts/axl-node`` to build AXL)."""

from __future__ import annotations

import asyncio

import pytest
from dei_transports.plugin import make_axl

from dei_framework.net.envelope import ChampionEnvelope, InboxFilter, NodeIdentity

pytestmark = pytest.mark.axl


async def _gossip(apis: list[str]) -> None:
    options = {"heartbeat": 0.2, "prune_backoff": 10}
    routers = [make_axl(["node"], dict(options, axl_api=api))[0] for api in apis]
    for router in routers:
        await router.start()
    try:
        identities = [NodeIdentity.generate() for _ in routers]
        expected: dict[str, set[str]] = {r.peer_id: set() for r in routers}
        for index, (router, identity) in enumerate(zip(routers, identities, strict=True)):
            for round_ in range(3):
                envelope = ChampionEnvelope(
                    domain="coreware",
                    node=f"node-{index}",
                    key="",
                    round=round_,
                    operator="gp",
                    program=f"MOV {index}, {round_}",
                    fitness=1.0,
                    descriptor={"tsp": 1.0},
                )
                await router.publish(envelope.encode(identity))
                for other in routers:
                    if other is not router:
                        expected[other.peer_id].add(f"node-{index}/{round_}")
        inboxes = {r.peer_id: InboxFilter(domain="coreware") for r in routers}
        got: dict[str, set[str]] = {r.peer_id: set() for r in routers}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while loop.time() < deadline and any(expected[p] - got[p] for p in got):
            for router in routers:
                for delivery in router.drain():
                    envelope = inboxes[router.peer_id].accept(delivery)
                    if envelope is not None:
                        got[router.peer_id].add(f"{envelope.node}/{envelope.round}")
            await asyncio.sleep(0.1)
        missing = {p[:8]: sorted(expected[p] - got[p]) for p in got}
        assert all(not m for m in missing.values()), f"missing: {missing}"
        for router in routers:
            assert not inboxes[router.peer_id].dropped.get("forged")
            assert len(router.peer_id) == 64
    finally:
        for router in routers:
            await router.close()


def test_gossipsub_over_three_real_axl_nodes(axl_nodes):
    asyncio.run(asyncio.wait_for(_gossip(axl_nodes), 120))
