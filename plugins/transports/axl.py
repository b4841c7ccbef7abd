"""A link over a local AXL node's HTTP API (``/send``, ``/recv`` polling, ``/topology``).

AXL only does point-to-point delivery between nodes identified by ed25519 keys; the GossipSub
router on top makes it a broadcast. Facts this module relies on (``docs/transports.md``):
  * ``/recv`` returns one message per call (``204`` when empty) from an inbox of 100 that drops
    the *oldest* when full, so the poller drains in a tight loop until ``204``. Polling is
    adaptive: after a message (or after we sent something, which usually draws a reply) the
    next poll comes after ``poll_interval``; every empty answer doubles the pause up to
    ``max_poll_interval``, so an idle node makes about ``1 / max_poll_interval`` requests per
    second. What the inbox still drops in a burst is repaired by the router's IHAVE/IWANT.
  * ``X-From-Peer-Id`` is rebuilt from the sender's IPv6 address: only its first
    :data:`REAL_PREFIX_CHARS` hex characters are the key. It is mapped to a full key by prefix
    against known peers; frames carry the full key, and the router checks both agree.
  * ``/topology`` lists direct peers (``public_key`` may be empty for peers that are down) and
    the spanning tree; both may be ``null``. Peers seen only inside frames are remembered too.
  * ``/send`` answers ``502`` when the peer is unreachable; it and connection errors are
    retried with exponential backoff, then counted and dropped (gossip repairs the loss).
  * ``/send`` dials a new TCP connection inside AXL's userspace stack for every message and
    answers only once it has connected. A dial whose first SYN is lost (the first contact
    between two nodes, a peer that restarted) is retried on TCP's backoff schedule, 1, 3, 7,
    15 s ... after it started, so one request can hang for many seconds after the peer is
    reachable again. Each attempt is therefore cut after ``send_attempt_timeout`` and the next
    attempt is a fresh dial; AXL may still deliver the abandoned one later (the router drops
    the duplicate). A peer whose last frame failed every attempt gets one attempt per frame,
    one at a time, until one succeeds, so a peer that stays down costs one dial per
    ``send_attempt_timeout``.
The API has no authentication, so only loopback addresses are accepted unless
``allow_remote_api`` is set.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx
import tenacity
from dei_transports.link import Link

from dei_framework.contract.errors import TransportError

log = logging.getLogger(__name__)

#: Hex characters of ``X-From-Peer-Id`` that are really the sender's key (112 bits survive the
#: key -> Yggdrasil IPv6 -> key round trip; the rest is ``ff`` padding).
REAL_PREFIX_CHARS = 28
_HEX = set("0123456789abcdef")


class _Retry(Exception):
    """A send attempt that may succeed later (``502`` or another 5xx)."""


def check_loopback(api: str, allow_remote_api: bool = False) -> str:
    """Validates the API URL; returns it without a trailing slash.

    Raises:
        TransportError: not an ``http(s)://host:port`` URL, or a non-loopback host without
            ``allow_remote_api``.
    """
    parts = urlsplit(api)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise TransportError(f"AXL API address must look like http://127.0.0.1:9002 (got {api!r})")
    host = parts.hostname
    loopback = host == "localhost"
    if not loopback:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
    if not loopback and not allow_remote_api:
        raise TransportError(
            f"refusing AXL API address {api!r}: the AXL API is unauthenticated and must stay on "
            "loopback (127.0.0.0/8, ::1, localhost); pass allow_remote_api=True to override"
        )
    return api.rstrip("/")


def _describe(exc: BaseException) -> str:
    """A short cause for an HTTP failure (``connection refused``, ``timed out``, ...)."""
    if isinstance(exc, httpx.ConnectError):
        return "cannot connect: nothing listens there"
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    return str(exc) or type(exc).__name__


def _is_key(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


@attrs.define(eq=False)
class AxlLink(Link):
    """One node's link through its local AXL node.

    Attributes:
        api: Base URL of the local node's API, e.g. ``http://127.0.0.1:9002``.
        allow_remote_api: Accept a non-loopback API address (not recommended).
        poll_interval: Shortest pause between polls, right after traffic (seconds).
        max_poll_interval: Longest pause between polls when idle (seconds).
        topology_interval: Seconds between ``/topology`` refreshes.
        send_retries: Extra attempts after a failed ``/send`` (``502``, 5xx, connection error).
        send_timeout: Seconds for one HTTP request (``/recv``, ``/topology``).
        send_attempt_timeout: Seconds one ``/send`` attempt may take before it is abandoned
            and the next attempt (a fresh dial inside AXL) starts; a healthy send on loopback
            takes milliseconds.
        start_timeout: Seconds :meth:`start` keeps trying to reach the API (a node that is
            still starting); then it fails with one line naming the cause.
        learned_ttl: Seconds a peer known only from its frames is kept after its last frame.
        max_inbox: Messages polled but not yet read by the router (oldest dropped beyond it).
        pollers: Concurrent ``/recv`` requests while messages are flowing (one when idle).
    """

    api: str = "http://127.0.0.1:9002"
    allow_remote_api: bool = False
    poll_interval: float = 0.005
    max_poll_interval: float = 0.1
    topology_interval: float = 1.0
    send_retries: int = 4
    send_timeout: float = 10.0
    send_attempt_timeout: float = 1.0
    start_timeout: float = 5.0
    learned_ttl: float = 600.0
    max_inbox: int = 10_000
    pollers: int = 4
    peer_id: str = attrs.field(default="", init=False)
    counters: Counter[str] = attrs.field(factory=Counter, init=False)
    _client: httpx.AsyncClient | None = attrs.field(default=None, init=False)
    _topology_peers: set[str] = attrs.field(factory=set, init=False)
    _learned: dict[str, float] = attrs.field(factory=dict, init=False)
    _queue: asyncio.Queue[tuple[str, bytes]] | None = attrs.field(default=None, init=False)
    _tasks: list[asyncio.Task[Any]] = attrs.field(factory=list, init=False)
    _busy: asyncio.Event | None = attrs.field(default=None, init=False)
    _wake: asyncio.Event | None = attrs.field(default=None, init=False)
    _failing: bool = attrs.field(default=False, init=False)
    _unreachable: set[str] = attrs.field(factory=set, init=False)
    _probes: dict[str, asyncio.Lock] = attrs.field(factory=dict, init=False)

    def __attrs_post_init__(self) -> None:
        self.api = check_loopback(self.api, self.allow_remote_api)

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Reads our key from ``/topology`` (retrying until ``start_timeout``), starts polling.

        Raises:
            TransportError: the API could not be reached or answered nonsense.
        """
        if self._client is not None:
            return
        # trust_env=False: an HTTP(S)_PROXY in the environment must never see loopback traffic.
        self._client = httpx.AsyncClient(
            base_url=self.api, timeout=self.send_timeout, trust_env=False
        )
        self._queue = asyncio.Queue()
        try:
            topology = await self._first_topology()
        except BaseException:
            await self._client.aclose()
            self._client = None
            raise
        key = topology.get("our_public_key")
        if not _is_key(key):
            await self.close()
            raise TransportError(f"AXL node at {self.api} reported no valid public key")
        self.peer_id = key
        self._apply_topology(topology)
        self._busy = asyncio.Event()
        self._wake = asyncio.Event()
        self._tasks = [
            asyncio.create_task(self._poll_loop(primary=index == 0), name=f"axl-recv-{index}")
            for index in range(max(1, self.pollers))
        ]
        self._tasks.append(asyncio.create_task(self._topology_loop(), name="axl-topology"))

    async def close(self) -> None:
        """Stops polling and closes the HTTP client."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # --- Link ---------------------------------------------------------------------------------

    def peers(self) -> list[str]:
        """Topology peers (direct and spanning tree) plus peers recently heard from."""
        now = time.monotonic()
        self._learned = {k: t for k, t in self._learned.items() if now - t < self.learned_ttl}
        return sorted((self._topology_peers | self._learned.keys()) - {self.peer_id})

    def same_peer(self, link_peer: str, claimed: str) -> bool:
        """Compares only the part of ``X-From-Peer-Id`` that is really the key."""
        if link_peer == claimed:
            return True
        n = REAL_PREFIX_CHARS
        return _is_key(claimed) and len(link_peer) >= n and claimed[:n] == link_peer[:n].lower()

    def learn_peer(self, peer: str) -> None:
        """Remembers a full key seen in a frame (e.g. a node not in our topology view)."""
        if _is_key(peer) and peer != self.peer_id:
            self._learned[peer] = time.monotonic()

    async def send(self, peer: str, data: bytes) -> None:
        """``POST /send`` with retries on ``502``/5xx/connection errors; never raises."""
        if self._client is None or not _is_key(peer):
            self.counters["send_failed"] += 1
            return
        if peer in self._unreachable and await self._probe(peer, data):
            return
        retrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(self.send_retries + 1),
            wait=tenacity.wait_exponential(multiplier=0.05, max=2.0)
            + tenacity.wait_random(0, 0.05),
            retry=tenacity.retry_if_exception_type((_Retry, httpx.TransportError)),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    if attempt.retry_state.attempt_number > 1:
                        self.counters["send_retries"] += 1
                    await self._send_once(peer, data)
            self.counters["sent"] += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # bad peers or a sick node never crash the router
            self.counters["send_failed"] += 1
            if not isinstance(exc, TransportError):  # not a 4xx: the peer does not answer
                self._unreachable.add(peer)
            log.debug("AXL send to %s failed: %s", peer[:12], exc)

    async def _probe(self, peer: str, data: bytes) -> bool:
        """Sends to a peer whose last frame failed every attempt: one attempt at a time.

        Each abandoned attempt leaves a dial inside AXL that retransmits SYNs for about two
        minutes, so a peer that is down gets one fresh dial per ``send_attempt_timeout``, not
        one per retry of every queued frame. Returns ``False`` when the peer answered meanwhile
        (the caller sends normally).
        """
        async with self._probes.setdefault(peer, asyncio.Lock()):
            if peer not in self._unreachable:
                return False
            try:
                await self._send_once(peer, data)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.counters["send_failed"] += 1
                self.counters["probes_failed"] += 1
                log.debug("AXL send to unreachable %s failed: %s", peer[:12], exc)
                return True
            self._unreachable.discard(peer)
            self.counters["sent"] += 1
            return True

    async def _send_once(self, peer: str, data: bytes) -> None:
        assert self._client is not None
        self.counters["api_requests"] += 1
        if self._wake is not None:
            self._wake.set()  # a send usually draws a reply: poll fast for a while
        try:
            response = await self._client.post(
                "/send",
                content=data,
                headers={"X-Destination-Peer-Id": peer, "Content-Type": "application/octet-stream"},
                timeout=self.send_attempt_timeout,
            )
        except httpx.TimeoutException:
            self.counters["send_timeouts"] += 1
            raise
        if response.status_code == 200:
            return
        if response.status_code == 502 or response.status_code >= 500:
            self.counters[f"send_http_{response.status_code}"] += 1
            raise _Retry(f"HTTP {response.status_code}")
        # 400/405/...: retrying cannot help.
        self.counters[f"send_http_{response.status_code}"] += 1
        raise TransportError(f"AXL /send answered {response.status_code}: {response.text[:200]}")

    async def recv(self) -> tuple[str, bytes]:
        """Waits for the next polled message: ``(full key if known, else partial id, data)``."""
        if self._queue is None:
            self._queue = asyncio.Queue()
        return await self._queue.get()

    def stats(self) -> dict[str, Any]:
        """HTTP and polling counters."""
        out: dict[str, Any] = dict(self.counters)
        out["topology_peers"] = len(self._topology_peers)
        out["learned_peers"] = len(self._learned)
        out["unreachable_peers"] = len(self._unreachable)
        return out

    # --- background work ----------------------------------------------------------------------

    def resolve(self, partial: str) -> str:
        """Maps an ``X-From-Peer-Id`` to the one known full key with the same real prefix."""
        partial = partial.strip().lower()
        if _is_key(partial) and partial in self._topology_peers | self._learned.keys():
            return partial
        prefix = partial[:REAL_PREFIX_CHARS]
        if len(prefix) < REAL_PREFIX_CHARS:
            return partial
        matches = [k for k in self._topology_peers | self._learned.keys() if k.startswith(prefix)]
        return matches[0] if len(matches) == 1 else partial

    async def _poll_loop(self, primary: bool) -> None:
        # The primary poller runs always, with a pause that doubles on every empty answer (up
        # to max_poll_interval) and drops back to poll_interval on traffic or after a send;
        # helpers join only while messages are flowing, so a busy node drains in parallel.
        assert self._busy is not None and self._wake is not None
        failures = 0
        pause = self.poll_interval
        while True:
            if not primary:
                await self._busy.wait()
            try:
                got = await self._poll_once()
            except asyncio.CancelledError:
                raise
            except httpx.HTTPError as exc:
                failures += 1
                self.counters["recv_errors"] += 1
                if primary and not self._failing:
                    self._failing = True
                    log.warning(
                        "AXL node at %s stopped answering (%s); retrying", self.api, _describe(exc)
                    )
                await asyncio.sleep(min(1.0, self.poll_interval * 2**failures))
                continue
            if failures and primary and self._failing:
                self._failing = False
                log.warning("AXL node at %s answers again", self.api)
            failures = 0
            if got:
                self._busy.set()
                pause = self.poll_interval
                continue  # keep draining without sleeping: the node's inbox drops the oldest
            if not primary:
                self._busy.clear()
                continue
            if self._wake.is_set():
                self._wake.clear()
                pause = self.poll_interval
            try:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for loses a cancellation
                # that arrives as the wake-up does, and this loop would then never end.
                async with asyncio.timeout(pause):
                    await self._wake.wait()
                pause = self.poll_interval
            except TimeoutError:
                pause = min(self.max_poll_interval, pause * 2)
            self._wake.clear()

    async def _poll_once(self) -> bool:
        assert self._client is not None and self._queue is not None
        self.counters["api_requests"] += 1
        self.counters["recv_requests"] += 1
        response = await self._client.get("/recv")
        if response.status_code == 204:
            return False
        if response.status_code != 200:
            self.counters[f"recv_http_{response.status_code}"] += 1
            await asyncio.sleep(min(1.0, self.poll_interval * 10))
            return False
        self.counters["received"] += 1
        sender = self.resolve(response.headers.get("X-From-Peer-Id", ""))
        if self._queue.qsize() >= self.max_inbox:
            self._queue.get_nowait()
            self.counters["inbox_dropped"] += 1
        self._queue.put_nowait((sender, response.content))
        return True

    async def _topology_loop(self) -> None:
        while True:
            await asyncio.sleep(self.topology_interval)
            try:
                self._apply_topology(await self._get_topology())
            except asyncio.CancelledError:
                raise
            except (httpx.HTTPError, TransportError) as exc:
                self.counters["topology_errors"] += 1
                log.debug("AXL /topology failed: %s", exc)

    async def _first_topology(self) -> dict[str, Any]:
        retrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_delay(self.start_timeout),
            wait=tenacity.wait_exponential(multiplier=0.05, max=1.0),
            retry=tenacity.retry_if_exception_type((httpx.HTTPError, TransportError)),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._get_topology()
        except httpx.HTTPError as exc:
            raise TransportError(
                f"no AXL node answers at {self.api} ({_describe(exc)}) after "
                f"{self.start_timeout:g} s: start one with a loopback config "
                "(docs/multi-machine.md) or point the axl_api option at it"
            ) from None
        except TransportError as exc:
            raise TransportError(f"{self.api} is not a working AXL node API: {exc}") from None
        raise TransportError(f"no AXL node answers at {self.api}")  # pragma: no cover

    async def _get_topology(self) -> dict[str, Any]:
        assert self._client is not None
        self.counters["api_requests"] += 1
        response = await self._client.get("/topology")
        if response.status_code != 200:
            raise TransportError(f"GET /topology answered HTTP {response.status_code}")
        try:
            body = response.json()
        except ValueError:
            raise TransportError("GET /topology did not answer JSON") from None
        if not isinstance(body, dict) or "our_public_key" not in body:
            raise TransportError("GET /topology did not answer an AXL topology object")
        return body

    def _apply_topology(self, topology: dict[str, Any]) -> None:
        keys: set[str] = set()
        for peer in topology.get("peers") or []:
            if isinstance(peer, dict) and peer.get("up") and _is_key(peer.get("public_key")):
                keys.add(peer["public_key"])
        for entry in topology.get("tree") or []:
            if isinstance(entry, dict) and _is_key(entry.get("public_key")):
                keys.add(entry["public_key"])
        keys.discard(self.peer_id)
        self.counters["topology_refreshes"] += 1
        self._topology_peers = keys
