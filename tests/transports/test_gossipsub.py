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


def test_oversize_frames_and_payloads_are_dropped_and_counted():
    from dei_transports.frames import MAX_FRAME_BYTES, DataMessage

    hub = Hub(scheduler=None)
    sent: list[tuple[str, bytes]] = []
    r = GossipSubRouter(
        hub.link("a"), FAST, clock=lambda: 0.0, sink=lambda p, d: sent.append((p, d))
    )
    r.known = {"b", "c"}
    r.mesh = {"b", "c"}
    r.handle_frame("b", b" " * (MAX_FRAME_BYTES + 1))
    big = DataMessage("b", 1, b"x" * (FAST.max_payload_bytes + 1))
    r.handle_frame("b", Frame(sender="b", messages=[big]).encode())
    assert r.counters["oversize_frames"] == 1 and r.counters["oversize_messages"] == 1
    assert r.drain() == [] and sent == []  # neither delivered nor forwarded
    fits = DataMessage("b", 1, b"x" * FAST.max_payload_bytes)
    r.handle_frame("b", Frame(sender="b", messages=[fits]).encode())
    assert [d.payload for d in r.drain()] == [fits.payload]
    assert [peer for peer, _ in sent] == ["c"]  # forwarded to the rest of the mesh


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


class _HungSend:
    """Makes a router's sends to one peer hang like an AXL dial waiting for a TCP retransmission
    to a peer that restarted: each of the next ``count`` sends hangs for ``seconds`` (then the
    frame arrives), the others go through at once."""

    def __init__(self, link, peer: str, count: int, seconds: float = 60.0) -> None:
        self.link, self.peer, self.count, self.seconds = link, peer, count, seconds
        self.hung = 0
        self._send = link.send
        link.send = self.send  # an instance attribute shadows the class's method

    async def send(self, peer: str, data: bytes) -> None:
        if peer == self.peer and self.hung < self.count:
            self.hung += 1
            await asyncio.sleep(self.seconds)
        await self._send(peer, data)


async def _run_hung_send(params: GossipSubParams, hung: int) -> tuple[float | None, dict]:
    hub = Hub(seed=1)
    a, b = (GossipSubRouter(hub.link(n), params, seed=i) for i, n in enumerate(("a", "b")))
    await a.start()
    await b.start()
    try:
        assert await _until(lambda: a.known == {"b"} and b.known == {"a"}, timeout=5)
        _HungSend(a.link, "b", count=hung)
        await asyncio.sleep(10 * HB)  # heartbeats queue gossip to b behind the hung sends
        loop = asyncio.get_running_loop()
        started = loop.time()
        await a.publish(b"after the peer came back")
        got = await _until(
            lambda: any(d.payload == b"after the peer came back" for d in b.drain()), timeout=5
        )
        return (loop.time() - started if got else None), dict(a.counters)
    finally:
        await a.close()
        await b.close()


def test_a_hung_send_does_not_hold_up_the_frames_behind_it():
    """A send that hangs (an AXL dial to a peer that just restarted) must not block the peer's
    queue: a champion published next still arrives within a few heartbeats."""
    elapsed, _ = asyncio.run(asyncio.wait_for(_run_hung_send(FAST, hung=1), 30))
    assert elapsed is not None and elapsed < 2.0, elapsed


def test_a_newer_ihave_supersedes_one_still_queued():
    """While every send slot to a peer hangs, heartbeats queue one IHAVE for it, not one each."""

    async def go():
        params = GossipSubParams(heartbeat=HB, prune_backoff=10, max_inflight=1)
        hub = Hub(seed=1)
        a, b = (GossipSubRouter(hub.link(n), params, seed=i) for i, n in enumerate(("a", "b")))
        await a.start()
        await b.start()
        try:
            assert await _until(lambda: a.known == {"b"}, timeout=5)
            await a.publish(b"cached, so every heartbeat gossips it")
            _HungSend(a.link, "b", count=1)
            await a.publish(b"its send hangs")  # takes the only slot
            await asyncio.sleep(20 * HB)
            queued = list(a._outboxes["b"])
            assert a.counters["ihave_superseded"] >= 10
            assert sum(1 for _, ids in queued if ids is not None) == 1, queued
        finally:
            await a.close()
            await b.close()

    asyncio.run(asyncio.wait_for(go(), 30))
