"""The AXL link against the loopback stand-in: polling, partial ids, retries, loopback-only."""

from __future__ import annotations

import asyncio
import socket

import pytest
from axl_standin import INBOX_CAPACITY, StandInNetwork, partial_id
from dei_transports.axl import AxlLink, check_loopback
from dei_transports.gossipsub import GossipSubParams, GossipSubRouter
from dei_transports.plugin import make_axl

from dei_framework.contract.errors import TransportError


@pytest.fixture
def net():
    network = StandInNetwork()
    yield network
    network.close()


def _run(coro, timeout: float = 30.0):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def _until(predicate, timeout: float = 10.0) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline and not predicate():
        await asyncio.sleep(0.01)
    return predicate()


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:9002", "http://127.8.9.10:1/", "http://localhost:9002", "http://[::1]:9"],
)
def test_loopback_addresses_accepted(url):
    assert check_loopback(url) == url.rstrip("/")


@pytest.mark.parametrize(
    "url", ["http://10.0.0.1:9002", "http://example.com:9002", "http://[2001:db8::1]:9", "ftp://x"]
)
def test_non_loopback_refused(url):
    with pytest.raises(TransportError):
        AxlLink(api=url)
    with pytest.raises(TransportError):
        make_axl(["n0"], {"axl_api": url})


def test_remote_allowed_only_when_asked():
    assert AxlLink(api="http://10.0.0.1:9002", allow_remote_api=True).api.endswith(":9002")


def test_axl_factory_one_node_per_process():
    from dei_framework.contract.errors import ConfigError

    with pytest.raises(ConfigError):
        make_axl(["a", "b"], {})
    with pytest.raises(ConfigError, match="send_attempt_timeout must be positive"):
        make_axl(["a"], {"axl_api": "http://127.0.0.1:9", "send_attempt_timeout": 0})


def test_unreachable_api_is_a_clear_error():
    # The port stays bound (without SO_REUSEADDR or SO_REUSEPORT, so nothing else can bind it)
    # and never listens: every connect to it is refused for as long as the test runs, however
    # many AXL nodes start beside it.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        link = AxlLink(api=f"http://127.0.0.1:{port}", start_timeout=0.5)
        with pytest.raises(TransportError, match="no AXL node answers at .*cannot connect"):
            _run(link.start())


def test_topology_nulls_and_down_peers(net):
    a = net.node()
    a.null_topology = True

    async def go():
        link = AxlLink(api=a.url)
        await link.start()
        try:
            assert link.peer_id == a.key and link.peers() == []
            a.null_topology = False
            a.extra_topology = [{"uri": "tls://x", "up": False, "public_key": ""}, {"bad": 1}]
            link._apply_topology(await link._get_topology())
            assert link.peers() == []
        finally:
            await link.close()

    _run(go())


def test_send_recv_partial_ids_and_204(net):
    a, b = net.node(), net.node()
    b.direct = [a.key]

    async def go():
        la, lb = AxlLink(api=a.url), AxlLink(api=b.url)
        await la.start()
        await lb.start()
        try:
            assert set(la.peers()) == {b.key}  # from the spanning tree
            await la.send(b.key, b"hello")
            peer, data = await asyncio.wait_for(lb.recv(), 5)
            assert (peer, data) == (a.key, b"hello")  # partial id resolved by prefix
            assert lb.same_peer(partial_id(a.key), a.key)
            assert not lb.same_peer(partial_id(a.key), b.key)
            await asyncio.sleep(0.1)
            assert ("GET", "/recv") in b.requests  # it kept polling through 204s
            assert la.stats()["sent"] == 1
        finally:
            await la.close()
            await lb.close()

    _run(go())


def test_unknown_sender_stays_partial(net):
    a, b = net.node(), net.node()

    async def go():
        lb = AxlLink(api=b.url, topology_interval=60)
        await lb.start()
        lb._topology_peers = set()  # b has not learned a yet
        try:
            a.network.nodes[b.key].deliver(a.key, b"x")
            peer, _ = await asyncio.wait_for(lb.recv(), 5)
            assert peer == partial_id(a.key)
            lb.learn_peer(a.key)
            assert lb.resolve(partial_id(a.key)) == a.key
        finally:
            await lb.close()

    _run(go())


def test_502_is_retried_then_given_up(net):
    a, b = net.node(), net.node()

    async def go():
        la, lb = AxlLink(api=a.url, send_retries=3), AxlLink(api=b.url)
        await la.start()
        await lb.start()
        try:
            a.fail_next_sends = 2
            await la.send(b.key, b"after retries")
            assert (await asyncio.wait_for(lb.recv(), 5))[1] == b"after retries"
            assert la.counters["send_retries"] == 2 and la.counters["send_http_502"] == 2
            await la.send("ab" * 32, b"nobody")  # unknown peer: 502 each time, then dropped
            assert la.counters["send_failed"] == 1
            await la.send("not-a-key", b"x")  # refused locally, never raises
            assert la.counters["send_failed"] == 2
        finally:
            await la.close()
            await lb.close()

    _run(go())


def test_a_hung_send_is_abandoned_and_sent_again(net):
    """A /send that hangs (AXL's dial waiting for a TCP retransmission to a peer that restarted)
    is cut after send_attempt_timeout and the next attempt, a fresh dial, gets through."""
    a, b = net.node(), net.node()

    async def go():
        la, lb = AxlLink(api=a.url, send_attempt_timeout=0.5), AxlLink(api=b.url)
        await la.start()
        await lb.start()
        try:
            a.stall_next_sends = 1
            loop = asyncio.get_running_loop()
            started = loop.time()
            await la.send(b.key, b"through a fresh dial")
            assert loop.time() - started < 5.0  # not the 30 s the first attempt hangs
            assert (await asyncio.wait_for(lb.recv(), 5))[1] == b"through a fresh dial"
            assert la.counters["send_timeouts"] == 1 and la.counters["send_retries"] == 1
            assert la.counters["sent"] == 1 and not la.counters["send_failed"]
        finally:
            await la.close()
            await lb.close()

    _run(go())


def test_a_peer_that_does_not_answer_gets_one_attempt_at_a_time(net):
    """After a frame failed every attempt, further frames to that peer are one attempt each (a
    real node keeps every abandoned dial for minutes) until one gets through."""
    a, b = net.node(), net.node()

    async def go():
        la, lb = AxlLink(api=a.url, send_retries=2), AxlLink(api=b.url)
        await la.start()
        await lb.start()
        try:
            b.down = True

            def sends() -> int:
                return sum(1 for request in a.requests if request == ("POST", "/send"))

            await la.send(b.key, b"lost")  # 502 three times
            assert sends() == 3 and la.stats()["unreachable_peers"] == 1
            await asyncio.gather(*(la.send(b.key, b"lost too") for _ in range(5)))
            assert sends() == 3 + 5 and la.counters["probes_failed"] == 5
            b.down = False
            await la.send(b.key, b"back")
            assert (await asyncio.wait_for(lb.recv(), 5))[1] == b"back"
            assert la.stats()["unreachable_peers"] == 0 and la.counters["sent"] == 1
        finally:
            await la.close()
            await lb.close()

    _run(go())


def test_standin_inbox_drops_oldest(net):
    a, b = net.node(), net.node()
    for i in range(INBOX_CAPACITY + 50):
        b.deliver(a.key, str(i).encode())
    assert b.dropped_oldest == 50 and b.inbox[0][1] == b"50"
    b.deliver(a.key, b'{"service": "weather"}')
    assert b.routed_elsewhere == 1


def test_poller_keeps_up_with_a_burst(net):
    """A burst of 3x the node's inbox, sent over HTTP by 4 concurrent senders, loses nothing."""
    a, b = net.node(), net.node()
    total = 3 * INBOX_CAPACITY

    async def go():
        la, lb = AxlLink(api=a.url), AxlLink(api=b.url)
        await la.start()
        await lb.start()
        try:

            async def sender(offset: int) -> None:
                for i in range(offset, total, 4):
                    await la.send(b.key, b"%d" % i)

            await asyncio.gather(*(sender(k) for k in range(4)))
            got = set()
            while len(got) < total - b.dropped_oldest:
                got.add((await asyncio.wait_for(lb.recv(), 5))[1])
            assert b.dropped_oldest == 0
            assert got == {b"%d" % i for i in range(total)}
        finally:
            await la.close()
            await lb.close()

    _run(go())


def test_gossipsub_over_standins(net):
    nodes = [net.node() for _ in range(3)]
    nodes[1].direct = [nodes[0].key]
    nodes[2].direct = [nodes[0].key]
    params = GossipSubParams(heartbeat=0.05, prune_backoff=10)

    async def go():
        routers = [
            GossipSubRouter(AxlLink(api=n.url, topology_interval=0.1), params) for n in nodes
        ]
        for r in routers:
            await r.start()
        try:
            for r in routers:
                await r.publish(f"champion of {r.peer_id[:8]}".encode())
            got = {r.peer_id: set() for r in routers}

            def done():
                for r in routers:
                    got[r.peer_id].update(d.payload for d in r.drain())
                return all(len(v) == 2 for v in got.values())

            assert await _until(done, 15), got
            for r in routers:
                assert f"champion of {r.peer_id[:8]}".encode() not in got[r.peer_id]
        finally:
            for r in routers:
                await r.close()

    _run(go())
