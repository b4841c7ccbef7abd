"""AXL realities with real nodes: a /recv overflow is repaired, and an idle node polls slowly."""

from __future__ import annotations

import asyncio

import pytest
from dei_transports.plugin import make_axl

pytestmark = pytest.mark.axl

BURST = 250  # AXL's /recv inbox keeps the newest 100 and drops the rest


async def _burst(apis: list[str]) -> None:
    options = {"heartbeat": 0.2, "prune_backoff": 10}
    sender, receiver = (make_axl(["n"], dict(options, axl_api=api))[0] for api in apis)
    await sender.start()
    await receiver.start()
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while loop.time() < deadline and not (
            receiver.peer_id in sender.known and sender.peer_id in receiver.known
        ):
            await asyncio.sleep(0.05)
        assert receiver.peer_id in sender.known, "the nodes never subscribed each other"
        # The receiver stops polling (a busy or stalled process) while the burst arrives.
        gate = asyncio.Event()
        poll = receiver.link._poll_once

        async def gated() -> bool:
            await gate.wait()
            return await poll()

        receiver.link._poll_once = gated  # type: ignore[method-assign]
        await asyncio.sleep(0.3)  # let polls in flight finish
        before = receiver.link.counters["received"]
        payloads = [f"champion {i} ".encode() * 20 for i in range(BURST)]
        for payload in payloads:
            await sender.publish(payload)
        while any(sender._outboxes.values()):
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)
        gate.set()
        got: set[bytes] = set()
        deadline = loop.time() + 60
        while loop.time() < deadline and len(got) < BURST:
            got |= {d.payload for d in receiver.drain()}
            await asyncio.sleep(0.1)
        assert got == set(payloads), f"{BURST - len(got)} of {BURST} champions never arrived"
        link = receiver.link.stats()
        # AXL really dropped part of the burst, and gossip fetched it again.
        assert receiver.counters["iwant_sent"] > 0
        assert sender.counters["iwant_served"] > 0
        assert link["received"] - before < BURST  # fewer frames than champions reached us
    finally:
        await sender.close()
        await receiver.close()


def test_recv_overflow_is_repaired_by_ihave_iwant(axl_cluster):
    nodes = axl_cluster(2)
    asyncio.run(asyncio.wait_for(_burst([n.api for n in nodes]), 150))


async def _idle(api: str, seconds: float) -> tuple[int, int]:
    router = make_axl(["n"], {"axl_api": api, "heartbeat": 1.0, "max_poll_interval": 0.1})[0]
    await router.start()
    try:
        await asyncio.sleep(1.0)  # backoff reaches its ceiling
        start = router.link.counters["recv_requests"]
        await asyncio.sleep(seconds)
        return router.link.counters["recv_requests"] - start, router.counters["delivered"]
    finally:
        await router.close()


def test_idle_node_backs_off_polling(axl_cluster):
    (node,) = axl_cluster(1)
    requests, delivered = asyncio.run(_idle(node.api, 3.0))
    assert delivered == 0
    # A fixed 5 ms poll made ~600 requests in 3 s; the ceiling of 0.1 s allows ~30 (+ slack).
    assert 5 <= requests <= 60, requests
