"""GossipSub over the in-memory hub: delivery, dedup, mesh repair, loss, partitions, crashes."""

from __future__ import annotations

import asyncio

import pytest
from dei_transports.frames import Frame, message_id
from dei_transports.gossipsub import GossipSubParams, GossipSubRouter
from dei_transports.inmemory import Hub
from dei_transports.plugin import dei_transports, make_inmemory

HB = 0.05
FAST = GossipSubParams(heartbeat=HB, prune_backoff=10)


async def _until(predicate, timeout: float = 20.0, step: float = 0.02) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if predicate():
            return True
        await asyncio.sleep(step)
    return predicate()


class Collector:
    """Drains routers into per-node sets of payloads, counting repeated deliveries."""

    def __init__(self, routers):
        self.routers = routers
        self.got = {r.peer_id: set() for r in routers}
        self.repeats = 0

    def poll(self) -> None:
        for r in self.routers:
            for d in r.drain():
                if d.payload in self.got[r.peer_id]:
                    self.repeats += 1
                self.got[r.peer_id].add(d.payload)

    def complete(self, expected) -> bool:
        self.poll()
        return all(expected[p] <= self.got[p] for p in expected)


def test_plugin_registers_transports():
    names = [spec.name for spec in dei_transports()]
    assert names == ["inmemory", "axl"]


async def _run_default():
    routers = make_inmemory([f"n{i}" for i in range(5)], {"heartbeat": HB})
    for r in routers:
        await r.start()
    try:
        payloads = {r.peer_id: f"from {r.peer_id}".encode() for r in routers}
        for r in routers:
            await r.publish(payloads[r.peer_id])
        col = Collector(routers)
        expected = {r.peer_id: {p for q, p in payloads.items() if q != r.peer_id} for r in routers}
        assert await _until(lambda: col.complete(expected), timeout=10)
        await asyncio.sleep(10 * HB)
        col.poll()
        assert col.repeats == 0
        for r in routers:
            assert {d for d in col.got[r.peer_id]} == expected[r.peer_id]
            assert 1 <= r.stats()["mesh"] <= r.params.d_high
    finally:
        for r in routers:
            await r.close()


def test_default_inmemory_delivers_everything_once():
    asyncio.run(asyncio.wait_for(_run_default(), 30))


async def _run_faults():
    names = [f"n{i}" for i in range(8)]
    hub = Hub(loss=0.3, latency=(0.0, 0.01), seed=7)
    routers = [GossipSubRouter(hub.link(n), FAST, seed=i) for i, n in enumerate(names)]
    hub.now()  # fix hub time zero
    hub.partition([names[:4], names[4:]], start=0.3, end=1.5)
    hub.outage("n5", start=0.6, end=1.8)
    for r in routers:
        await r.start()
    col = Collector(routers)
    expected = {n: set() for n in names}
    try:
        for step in range(20):
            await asyncio.sleep(0.12)
            now = hub.now()
            for r in routers:
                if not hub.is_up(r.peer_id, now):
                    continue
                payload = f"{r.peer_id}/{step}".encode()
                await r.publish(payload)
                for n in names:
                    if n != r.peer_id:
                        expected[n].add(payload)
            col.poll()
        ok = await _until(lambda: col.complete(expected), timeout=20)
        missing = {n: len(expected[n] - col.got[n]) for n in names}
        assert ok, f"missing per node: {missing}"
        assert col.repeats == 0
        # The mesh healed after the partition and the crash.
        assert await _until(
            lambda: all(r.params.d_low <= len(r.mesh) <= r.params.d_high for r in routers), 5
        )
        assert sum(r.stats().get("duplicates", 0) for r in routers) > 0
    finally:
        for r in routers:
            await r.close()


def test_loss_partition_and_crash_all_delivered():
    asyncio.run(asyncio.wait_for(_run_faults(), 60))


async def _run_restart():
    names = [f"n{i}" for i in range(4)]
    hub = Hub(seed=1)
    routers = [GossipSubRouter(hub.link(n), FAST, seed=i) for i, n in enumerate(names)]
    for r in routers:
        await r.start()
    try:
        # n3 loses its whole state (process restart) while others publish.
        await routers[3].close()
        hub.set_down("n3")
        published = set()
        for r in routers[:3]:
            payload = f"while-down {r.peer_id}".encode()
            published.add(payload)
            await r.publish(payload)
        await asyncio.sleep(5 * HB)
        hub.set_down("n3", False)
        fresh = GossipSubRouter(hub.link("n3"), FAST, seed=99)
        await fresh.start()
        got: set[bytes] = set()

        def caught_up() -> bool:
            got.update(d.payload for d in fresh.drain())
            return published <= got

        assert await _until(caught_up, timeout=10)
        assert fresh.stats()["delivered"] == len(published)
        routers[3] = fresh
    finally:
        for r in routers:
            await r.close()


def test_restarted_node_catches_up():
    asyncio.run(asyncio.wait_for(_run_restart(), 30))


async def _run_bad_peer():
    hub = Hub()
    a, b = (GossipSubRouter(hub.link(n), FAST) for n in ("a", "b"))
    evil = hub.link("evil")
    await a.start()
    await b.start()
    try:
        junk = [
            b"",
            b"\x00\xff",
            b"[]",
            b'{"g":1}',
            b'{"g":1,"f":"evil","m":[{"o":"x","h":"1","p":"!!"}]}',
            b'{"g":1,"f":"evil","ihave":"nope"}',
            b'{"g":1,"f":"evil","prune":-1}',
            b'{"g":1,"f":"b","graft":1}',  # spoofs b
            Frame(sender="evil", iwant=["0" * 32] * 10000).encode(),
            Frame(sender="evil", ihave=["f" * 32] * 10000).encode(),
        ]
        for data in junk:
            await evil.send("a", data)
        await asyncio.sleep(5 * HB)
        stats = a.stats()
        assert stats["bad_frames"] >= 7 and stats["spoofed_frames"] == 1
        await a.publish(b"still alive")
        got: list[bytes] = []
        assert await _until(lambda: got.extend(d.payload for d in b.drain()) or got, 5)
        assert got == [b"still alive"]
    finally:
        await a.close()
        await b.close()


def test_bad_frames_never_crash_the_router():
    asyncio.run(asyncio.wait_for(_run_bad_peer(), 30))


def test_publish_dedups_same_payload():
    hub = Hub(scheduler=None)
    sent: list[tuple[str, bytes]] = []
    r = GossipSubRouter(
        hub.link("a"), FAST, clock=lambda: 0.0, sink=lambda p, d: sent.append((p, d))
    )
    r.known = {"b", "c"}
    assert r.publish_now(b"x") == message_id(b"x")
    r.publish_now(b"x")
    assert len(sent) == 2  # flood-published once to b and c


def test_params_from_options():
    p = GossipSubParams.from_options(
        {"d": "4", "heartbeat": "0.5", "flood_publish": "false", "x": 1}
    )
    assert (p.d, p.d_low, p.d_high, p.d_lazy, p.heartbeat, p.flood_publish) == (
        4,
        3,
        5,
        4,
        0.5,
        False,
    )
    with pytest.raises(ValueError):
        GossipSubParams(d=3, d_low=4)
