"""A GossipSub (v1.0 + v1.1 flood-publish and PRUNE backoff) router over any point-to-point link.

One topic (the champions of a run). Each node keeps a *mesh* of about ``d`` peers and forwards
every new message to its mesh; every heartbeat it repairs the mesh (GRAFT/PRUNE between
``d_low`` and ``d_high``) and advertises recent message ids (IHAVE) to ``d_lazy`` other peers,
which ask for what they miss (IWANT). Own messages are flood-published to every known peer.

Differences from libp2p, and why:
  * Champions are rare and precious, so the message cache is long (minutes, not seconds): a
    peer that was partitioned or restarted catches up through IHAVE/IWANT within that window.
  * A peer that appears (or announces ``hello`` after a restart) is sent an IHAVE of the whole
    cache at once, and when fewer than ``d_lazy`` non-mesh peers exist, mesh peers are gossiped
    to as well: in a 3-node network every peer is in the mesh, and spec gossip would never run.
  * Durations are counted in heartbeats, so a test with a 0.05 s heartbeat behaves like a run
    with a 1 s heartbeat, only faster.
  * No peer scoring; bad frames are counted and ignored, and every per-peer reply is capped.

The protocol core (:meth:`GossipSubRouter.handle_frame`, :meth:`GossipSubRouter.heartbeat`,
:meth:`GossipSubRouter.publish_now`) is synchronous and takes its time from ``clock``, so a
simulator can drive it on virtual time (see ``benchmarks/gossip_sim.py``); :meth:`start` adds
the asyncio tasks (receive loop, heartbeat, one sender per peer) for real use.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import random
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from typing import Any

import attrs
from dei_transports.frames import MAX_FRAME_BYTES, DataMessage, Frame, FrameError, message_id
from dei_transports.link import Link

from dei_framework.contract.transport import Delivery, Transport

log = logging.getLogger(__name__)

#: Heartbeats between two ``hello`` frames to a link peer that has not subscribed yet.
HELLO_EVERY = 5
#: ``hello`` frames sent per heartbeat to peers that have not subscribed (AXL's spanning tree
#: can list many nodes that are not part of the run).
MAX_HELLOS_PER_HEARTBEAT = 32


@attrs.frozen(kw_only=True)
class GossipSubParams:
    """Router parameters (libp2p names; durations in heartbeats unless said otherwise).

    Attributes:
        d: Target mesh degree (DEI uses 3).
        d_low: Below this, the heartbeat grafts peers up to ``d``.
        d_high: Above this, the heartbeat prunes down to ``d``; incoming GRAFTs beyond it are
            refused.
        d_lazy: Peers (outside the mesh when possible) that receive IHAVE each heartbeat.
        heartbeat: Seconds between heartbeats.
        mcache_len: Heartbeats a message stays in the cache (servable to IWANT).
        mcache_gossip: Most recent heartbeats whose ids each IHAVE advertises.
        seen_ttl: Heartbeats a message id is remembered for de-duplication.
        seen_max: Bound on remembered ids (oldest forgotten first).
        fanout_ttl: Heartbeats a fanout set is kept after our last publish (publish-only nodes).
        prune_backoff: Heartbeats a pruned peer must wait before GRAFTing again.
        flood_publish: Send own messages to every peer, not only the mesh (v1.1).
        max_ihave_length: Ids per IHAVE/IWANT (longer lists are truncated).
        max_ihave_messages: IHAVE frames handled per peer per heartbeat.
        max_iwant_replies: Messages served per peer per heartbeat in reply to IWANT.
        max_inbox: Undrained deliveries kept (oldest dropped first).
        max_outbox: Frames queued per peer before the oldest is dropped.
        max_inflight: Frames being sent to one peer at the same time. A send that hangs (a
            peer that is unreachable, or whose link has just come back and still finishes an
            old dial) holds one slot, not the whole queue behind it.
        max_peers: Peers with state. Beyond it a new peer gets no state (it is neither meshed
            nor gossiped to), but the messages its frames carry are still delivered.
        max_payload_bytes: Largest received payload kept; a larger one is counted
            (``oversize_messages``) and neither cached, forwarded nor delivered. The default is
            the champion envelope's own cap (256 KiB), so no relay carries what every
            receiver would drop.
        subscribe: Join the topic mesh; ``False`` publishes through fanout only.
    """

    d: int = 3
    d_low: int = 2
    d_high: int = 4
    d_lazy: int = 3
    heartbeat: float = 1.0
    mcache_len: int = 300
    mcache_gossip: int = 180
    seen_ttl: int = 600
    seen_max: int = 100_000
    fanout_ttl: int = 60
    prune_backoff: int = 60
    flood_publish: bool = True
    max_ihave_length: int = 5000
    max_ihave_messages: int = 10
    max_iwant_replies: int = 500
    max_inbox: int = 10_000
    max_outbox: int = 1_000
    max_inflight: int = 4
    max_peers: int = 4_096
    max_payload_bytes: int = 256 * 1024
    subscribe: bool = True

    def __attrs_post_init__(self) -> None:
        if not (0 <= self.d_low <= self.d <= self.d_high) or self.d < 1:
            raise ValueError("need 0 <= d_low <= d <= d_high and d >= 1")
        if not (0 < self.mcache_gossip <= self.mcache_len <= self.seen_ttl):
            raise ValueError("need 0 < mcache_gossip <= mcache_len <= seen_ttl")
        if self.heartbeat <= 0:
            raise ValueError("heartbeat must be positive")
        if self.max_inflight < 1:
            raise ValueError("max_inflight must be at least 1")

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> GossipSubParams:
        """Builds parameters from transport options, ignoring keys that are not parameters.

        ``d`` alone rescales ``d_low`` (``d - 1``), ``d_high`` (``d + max(1, d // 3)``) and
        ``d_lazy`` (``d``). ``d_high`` is kept tighter than libp2p's ``2 * d``: own messages are
        flood-published, so every extra mesh link mostly adds duplicates.
        """
        names = {f.name for f in attrs.fields(cls)}
        values = {k: v for k, v in options.items() if k in names and v is not None}
        if "d" in values:
            d = int(values["d"])
            values.setdefault("d_low", max(1, d - 1) if d > 1 else 1)
            values.setdefault("d_high", d + max(1, d // 3))
            values.setdefault("d_lazy", d)
        for key in ("heartbeat",):
            if key in values:
                values[key] = float(values[key])
        for key in ("flood_publish", "subscribe"):
            if key in values:
                values[key] = _boolean(values[key])
        for key in names - {"heartbeat", "flood_publish", "subscribe"}:
            if key in values:
                values[key] = int(values[key])
        return cls(**values)


def _boolean(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in {"0", "false", "no", "off", ""}
    return bool(value)


@attrs.define
class _Cached:
    message: DataMessage
    window: int


class GossipSubRouter(Transport):
    """A :class:`~dei_framework.contract.transport.Transport` that gossips over a :class:`Link`.

    Args:
        link: The point-to-point link.
        params: Router parameters.
        seed: Seeds peer selection (reproducible simulations).
        clock: Seconds, monotonic; defaults to the running loop's time (or ``time.monotonic``).
        sink: Where outgoing ``(peer, frame bytes)`` go. ``None`` (normal use) queues them for
            per-peer sender tasks; simulators pass a synchronous function.
        members: The run's membership (peer ids allowed on the topic), or ``None`` for an open
            topic. Frames from other senders, and messages originated by them, are dropped
            before anything else looks at them and counted as ``rejected_nonmember``.
    """

    def __init__(
        self,
        link: Link,
        params: GossipSubParams | None = None,
        *,
        seed: int | None = None,
        clock: Callable[[], float] | None = None,
        sink: Callable[[str, bytes], None] | None = None,
        members: Iterable[str] | None = None,
    ) -> None:
        self.link = link
        self.members: frozenset[str] | None = frozenset(members) if members else None
        self.params = params or GossipSubParams()
        self._rng = random.Random(seed)
        self._clock = clock
        self._sink = sink
        self.mesh: set[str] = set()
        self.fanout: set[str] = set()
        self._fanout_last = -1
        self.known: set[str] = set()
        # Topic membership is by subscription: a peer joins `known` (mesh, gossip and publish
        # targets) only once it has sent us a frame; link peers that have not are sent `hello`.
        self.subscribed: set[str] = set()
        self._hello_sent: dict[str, int] = {}  # candidate -> heartbeat of our last hello
        self.backoff: dict[str, int] = {}  # peer -> heartbeat index until which we do not graft
        self._tick = 0
        self._cache: OrderedDict[str, _Cached] = OrderedDict()
        self._seen: OrderedDict[str, int] = OrderedDict()  # id -> heartbeat index first seen
        self._inbox: deque[Delivery] = deque()
        self._ihave_count: collections.Counter[str] = collections.Counter()
        self._iwant_served: collections.Counter[str] = collections.Counter()
        self._asked: dict[str, int] = {}  # ids we sent IWANT for -> heartbeat, to not re-ask
        # Per peer: frames not yet handed to the link, each with its IHAVE ids (or None).
        self._outboxes: dict[str, deque[tuple[bytes, frozenset[str] | None]]] = {}
        self._inflight: dict[str, set[asyncio.Task[Any]]] = {}
        self._wakeups: dict[str, asyncio.Event] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self._sender_tasks: dict[str, asyncio.Task[Any]] = {}
        self._closed = False
        self.counters: collections.Counter[str] = collections.Counter()
        self.hops_total = 0
        self.hops_max = 0

    # --- Transport --------------------------------------------------------------------------

    @property
    def peer_id(self) -> str:  # type: ignore[override]
        """The link's peer id."""
        return self.link.peer_id

    async def start(self) -> None:
        """Starts the link, announces ``hello`` and runs the receive and heartbeat tasks."""
        await self.link.start()
        self.announce()
        self._tasks.append(asyncio.create_task(self._receive_loop(), name="gossipsub-recv"))
        self._tasks.append(asyncio.create_task(self._heartbeat_loop(), name="gossipsub-hb"))

    async def publish(self, payload: bytes) -> None:
        """Publishes without waiting for any peer."""
        self.publish_now(payload)

    def drain(self) -> list[Delivery]:
        """Returns and forgets everything delivered since the last call."""
        items = list(self._inbox)
        self._inbox.clear()
        return items

    async def close(self) -> None:
        """Stops the tasks and the link; pending outgoing frames are given a moment to leave."""
        if self._closed:
            return
        self._closed = True
        for task in self._tasks:
            task.cancel()
        if self._sender_tasks:
            # Let already queued frames leave (bounded), then stop the senders.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    await self._flush()
        sends = [task for tasks in self._inflight.values() for task in tasks]
        for task in [*self._sender_tasks.values(), *sends]:
            task.cancel()
        await asyncio.gather(
            *self._tasks, *self._sender_tasks.values(), *sends, return_exceptions=True
        )
        await self.link.close()

    def stats(self) -> dict[str, Any]:
        """Counters for the run summary."""
        delivered = self.counters["delivered"]
        out: dict[str, Any] = dict(self.counters)
        out.update(
            peer_id=self.peer_id,
            peers=len(self.known),
            mesh=len(self.mesh),
            cached=len(self._cache),
            mean_hops=(self.hops_total / delivered) if delivered else 0.0,
            max_hops=self.hops_max,
            link=self.link.stats(),
        )
        return out

    # --- protocol core (synchronous) --------------------------------------------------------

    def now(self) -> float:
        """The router's clock."""
        if self._clock is not None:
            return self._clock()
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()

    def publish_now(self, payload: bytes) -> str:
        """Publishes ``payload`` and returns its message id."""
        payload = bytes(payload)
        mid = message_id(payload)
        self.counters["published"] += 1
        if mid in self._seen:
            return mid  # republishing the same bytes adds nothing
        self._mark_seen(mid)
        message = DataMessage(self.peer_id, 1, payload)
        self._cache[mid] = _Cached(message, self._tick)
        if self.params.flood_publish:
            targets = set(self.known)
        elif self.params.subscribe:
            targets = set(self.mesh)
        else:
            if not self.fanout:
                self.fanout = self._pick(self.known, self.params.d)
            targets = set(self.fanout)
        self._fanout_last = self._tick
        frame = Frame(sender=self.peer_id, messages=[message]).encode()
        for peer in sorted(targets):  # in a fixed order: sends draw on a seeded link
            self._emit(peer, frame)
        self.counters["data_frames_sent"] += len(targets)
        return mid

    def announce(self) -> None:
        """Learns the link's peers and tells them we (re)started (``hello``)."""
        self._refresh_peers(announce=True)

    def handle_frame(self, link_peer: str, data: bytes) -> None:
        """Processes one frame from the link; bad frames are counted and ignored."""
        if self._closed:
            return
        self.counters["frames_received"] += 1
        if len(data) > MAX_FRAME_BYTES:
            # Counted apart from other bad frames: a peer sending these is flooding, not buggy.
            self.counters["oversize_frames"] += 1
            return
        try:
            frame = Frame.decode(data, max_ids=self.params.max_ihave_length)
        except FrameError:
            self.counters["bad_frames"] += 1
            return
        if not self.link.same_peer(link_peer, frame.sender) or frame.sender == self.peer_id:
            self.counters["spoofed_frames"] += 1
            return
        peer = frame.sender
        if self.members is not None and peer not in self.members:
            self.counters["rejected_nonmember"] += 1
            return
        if peer not in self.known:
            if len(self.known) >= self.params.max_peers:
                # No room for its state, but what it carries still counts: refusing it would
                # cut the peers beyond the cap off the topic.
                self.counters["peers_refused"] += 1
                for message in frame.messages:
                    self._on_message(peer, message)
                return
            self.link.learn_peer(peer)
            self.subscribed.add(peer)
            self._add_peer(peer)
        if frame.hello:
            # Reply so the restarted peer subscribes us too, with everything we hold.
            if self._cache:
                self._send_ihave(peer, list(self._cache), everything=True)
            else:
                self._emit(peer, Frame(sender=self.peer_id, sub=True).encode())
        if frame.prune is not None:
            self._on_prune(peer, frame.prune)
        if frame.graft:
            self._on_graft(peer)
        if frame.ihave:
            self._on_ihave(peer, frame.ihave)
        if frame.iwant:
            self._on_iwant(peer, frame.iwant)
        for message in frame.messages:
            self._on_message(peer, message)

    def heartbeat(self) -> None:
        """One round of mesh maintenance, gossip and cache aging."""
        p = self.params
        self._tick += 1
        self._refresh_peers(announce=False)
        # Mesh maintenance.
        self.mesh &= self.known
        if p.subscribe:
            if len(self.mesh) < p.d_low or (len(self.mesh) < p.d and self._tick % 5 == 0):
                candidates = {
                    q for q in self.known - self.mesh if self.backoff.get(q, -1) < self._tick
                }
                for peer in sorted(self._pick(candidates, p.d - len(self.mesh))):
                    self.mesh.add(peer)
                    self._emit(peer, Frame(sender=self.peer_id, graft=True).encode())
                    self.counters["graft_sent"] += 1
            if len(self.mesh) > p.d_high:
                keep = self._pick(self.mesh, p.d)
                for peer in sorted(self.mesh - keep):
                    self._prune(peer)
                self.mesh = keep
        # Fanout for publish-only nodes.
        if not p.subscribe:
            if self._fanout_last >= 0 and self._tick - self._fanout_last > p.fanout_ttl:
                self.fanout = set()
            else:
                self.fanout &= self.known
                if self.fanout and len(self.fanout) < p.d:
                    self.fanout |= self._pick(self.known - self.fanout, p.d - len(self.fanout))
        # Gossip: recent ids to d_lazy peers outside the mesh, topped up from the mesh when the
        # network is too small to have enough outsiders.
        recent = [mid for mid, c in self._cache.items() if self._tick - c.window <= p.mcache_gossip]
        if recent:
            outside = self.known - self.mesh - self.fanout
            targets = self._pick(outside, p.d_lazy)
            if len(targets) < p.d_lazy:
                targets |= self._pick(self.known - targets, p.d_lazy - len(targets))
            for peer in sorted(targets):
                self._send_ihave(peer, recent)
        # Aging.
        while self._cache:
            mid, cached = next(iter(self._cache.items()))
            if self._tick - cached.window < p.mcache_len:
                break
            self._cache.popitem(last=False)
        while self._seen:
            mid, first = next(iter(self._seen.items()))
            if self._tick - first < p.seen_ttl:
                break
            self._seen.popitem(last=False)
        self._asked = {m: t for m, t in self._asked.items() if self._tick - t < 3}
        self.backoff = {q: t for q, t in self.backoff.items() if t >= self._tick}
        self._ihave_count.clear()
        self._iwant_served.clear()

    # --- handlers ---------------------------------------------------------------------------

    def _on_message(self, peer: str, message: DataMessage) -> None:
        if self.members is not None and message.origin not in self.members:
            self.counters["rejected_nonmember"] += 1
            return
        if len(message.payload) > self.params.max_payload_bytes:
            self.counters["oversize_messages"] += 1
            return
        mid = message.id
        if mid in self._seen:
            self.counters["duplicates"] += 1
            return
        self._mark_seen(mid)
        self._asked.pop(mid, None)
        self._cache[mid] = _Cached(message, self._tick)
        self.counters["delivered"] += 1
        self.hops_total += message.hops
        self.hops_max = max(self.hops_max, message.hops)
        self._inbox.append(Delivery(message.payload, message.origin))
        if len(self._inbox) > self.params.max_inbox:
            self._inbox.popleft()
            self.counters["inbox_dropped"] += 1
        if not self.params.subscribe:
            return
        forward = DataMessage(message.origin, message.hops + 1, message.payload)
        frame = Frame(sender=self.peer_id, messages=[forward]).encode()
        for target in sorted(self.mesh - {peer, message.origin}):
            self._emit(target, frame)
            self.counters["forwarded"] += 1
            self.counters["data_frames_sent"] += 1

    def _on_graft(self, peer: str) -> None:
        p = self.params
        if not p.subscribe or self.backoff.get(peer, -1) >= self._tick:
            # Grafting during backoff is a v1.1 protocol violation: refuse and extend it.
            self._prune(peer)
            return
        if peer in self.mesh:
            return
        if len(self.mesh) >= p.d_high:
            self._prune(peer)
            return
        self.mesh.add(peer)
        # A new mesh link: let the peer fetch what it may have missed.
        self._send_ihave(peer, list(self._cache), everything=True)

    def _on_prune(self, peer: str, backoff_seconds: float) -> None:
        self.mesh.discard(peer)
        ticks = max(1, round(backoff_seconds / self.params.heartbeat))
        self.backoff[peer] = self._tick + min(ticks, 10 * self.params.prune_backoff)

    def _on_ihave(self, peer: str, ids: list[str]) -> None:
        self._ihave_count[peer] += 1
        if self._ihave_count[peer] > self.params.max_ihave_messages:
            self.counters["ihave_ignored"] += 1
            return
        wanted = [m for m in ids if m not in self._seen and m not in self._asked]
        if not wanted:
            return
        wanted = wanted[: self.params.max_ihave_length]
        for mid in wanted:
            self._asked[mid] = self._tick
        self._emit(peer, Frame(sender=self.peer_id, iwant=wanted).encode())
        self.counters["iwant_sent"] += 1

    def _on_iwant(self, peer: str, ids: list[str]) -> None:
        budget = self.params.max_iwant_replies - self._iwant_served[peer]
        batch: list[DataMessage] = []
        size = 0
        for mid in ids:
            if budget <= 0:
                self.counters["iwant_capped"] += 1
                break
            cached = self._cache.get(mid)
            if cached is None:
                continue
            m = cached.message
            out = DataMessage(m.origin, m.hops + (0 if m.origin == self.peer_id else 1), m.payload)
            # Stay well under the frame cap (base64 grows payloads by a third).
            if batch and size + len(out.payload) * 4 // 3 + 512 > MAX_FRAME_BYTES // 2:
                self._emit(peer, Frame(sender=self.peer_id, messages=batch).encode())
                self.counters["data_frames_sent"] += 1
                batch, size = [], 0
            batch.append(out)
            size += len(out.payload) * 4 // 3 + 512
            budget -= 1
            self._iwant_served[peer] += 1
        if batch:
            self._emit(peer, Frame(sender=self.peer_id, messages=batch).encode())
            self.counters["data_frames_sent"] += 1
            self.counters["iwant_served"] += len(batch)

    # --- helpers ----------------------------------------------------------------------------

    def _refresh_peers(self, *, announce: bool) -> None:
        if self.members is not None:
            # Members are reachable by key even when the link's view does not list them (AXL's
            # spanning tree may show only a node's own branch): links that discover peers
            # learn them (a no-op for the hub, which lists every reachable peer).
            for member in self.members - {self.peer_id}:
                self.link.learn_peer(member)
        current = set(self.link.peers()) - {self.peer_id}
        if self.members is not None:
            current &= self.members
        hello = Frame(sender=self.peer_id, hello=True).encode()
        hellos = 0
        for peer in sorted(current - self.known):
            if peer in self.subscribed:
                if len(self.known) >= self.params.max_peers:
                    continue
                self._add_peer(peer)
            elif not announce and hellos < MAX_HELLOS_PER_HEARTBEAT:
                # A link peer that has not spoken: ask it to subscribe, now and then.
                last = self._hello_sent.get(peer)
                if last is None or self._tick - last >= HELLO_EVERY:
                    self._hello_sent[peer] = self._tick
                    self._emit(peer, hello)
                    hellos += 1
        # Peers learned from frames but absent from the link's view are kept while the link
        # cannot list them at all (AXL only lists direct peers and the spanning tree).
        gone = {q for q in self.known - current if self._link_lists_peers(q)}
        self.known -= gone
        self.mesh -= gone
        self.fanout -= gone
        if announce:
            for peer in sorted(current)[: self.params.max_peers]:
                self._hello_sent[peer] = self._tick
                self._emit(peer, hello)
        else:
            self._hello_sent = {
                q: t for q, t in self._hello_sent.items() if q in current and q not in self.known
            }
            if len(self.subscribed) > 4 * self.params.max_peers:
                self.subscribed &= self.known | current

    def _link_lists_peers(self, peer: str) -> bool:
        # Hub links list every reachable peer; links that cannot (AXL) say so per peer.
        check = getattr(self.link, "lists_peer", None)
        return True if check is None else bool(check(peer))

    def _add_peer(self, peer: str) -> None:
        self.known.add(peer)
        # A peer we had not seen (new, healed partition, restart): offer the whole cache.
        if self._cache:
            self._send_ihave(peer, list(self._cache), everything=True)

    def _send_ihave(self, peer: str, ids: list[str], *, everything: bool = False) -> None:
        if not ids:
            return
        cap = self.params.max_ihave_length
        # Newest first: if the list must be cut, the most recent champions matter most.
        ids = list(reversed(ids))[:cap]
        self._emit(peer, Frame(sender=self.peer_id, ihave=ids).encode(), ihave=frozenset(ids))
        self.counters["ihave_sent"] += 1
        if everything:
            self.counters["ihave_full_sent"] += 1

    def _prune(self, peer: str) -> None:
        self.mesh.discard(peer)
        self.backoff[peer] = self._tick + self.params.prune_backoff
        seconds = self.params.prune_backoff * self.params.heartbeat
        self._emit(peer, Frame(sender=self.peer_id, prune=seconds).encode())
        self.counters["prune_sent"] += 1

    def _mark_seen(self, mid: str) -> None:
        self._seen[mid] = self._tick
        if len(self._seen) > self.params.seen_max:
            self._seen.popitem(last=False)

    def _pick(self, population: set[str], k: int) -> set[str]:
        if k <= 0 or not population:
            return set()
        ordered = sorted(population)  # sorted first so a seed gives reproducible choices
        return set(self._rng.sample(ordered, min(k, len(ordered))))

    def _emit(self, peer: str, data: bytes, *, ihave: frozenset[str] | None = None) -> None:
        self.counters["frames_sent"] += 1
        self.counters["bytes_sent"] += len(data)
        if self._sink is not None:
            self._sink(peer, data)
            return
        if self._closed:
            return
        box = self._outboxes.get(peer)
        if box is None:
            box = self._outboxes[peer] = deque()
            self._wakeups[peer] = asyncio.Event()
        if ihave is not None and box:
            # An IHAVE still waiting for a peer that does not take frames (down, restarting)
            # says nothing the new one does not: keep only the newest, so the queue that drains
            # when the peer is back holds one IHAVE, not one per heartbeat of the outage.
            kept = deque(entry for entry in box if entry[1] is None or not entry[1] <= ihave)
            self.counters["ihave_superseded"] += len(box) - len(kept)
            box.clear()
            box.extend(kept)
        box.append((data, ihave))
        if len(box) > self.params.max_outbox:
            box.popleft()
            self.counters["outbox_dropped"] += 1
        self._wakeups[peer].set()
        if peer not in self._sender_tasks:
            self._sender_tasks[peer] = asyncio.create_task(
                self._sender(peer), name=f"gossipsub-send-{peer[:12]}"
            )

    # --- asyncio plumbing -------------------------------------------------------------------

    async def _sender(self, peer: str) -> None:
        # One sender per peer: a slow or unreachable peer never delays the others. Up to
        # max_inflight frames go out at once, so one send that hangs (an AXL dial waiting for a
        # TCP retransmission to a peer that just restarted) does not hold the queue behind it.
        box, wakeup = self._outboxes[peer], self._wakeups[peer]
        inflight = self._inflight.setdefault(peer, set())
        slots = asyncio.Semaphore(self.params.max_inflight)

        def sent(task: asyncio.Task[Any]) -> None:
            inflight.discard(task)
            slots.release()

        while True:
            while box:
                await slots.acquire()
                if not box:  # pragma: no cover - only this task takes from the box
                    slots.release()
                    break
                # Taken from the queue only when a slot is free: until then a newer IHAVE can
                # still supersede it.
                data, _ = box.popleft()
                task = asyncio.create_task(self._send_one(peer, data))
                inflight.add(task)
                task.add_done_callback(sent)
            wakeup.clear()
            await wakeup.wait()

    async def _send_one(self, peer: str, data: bytes) -> None:
        try:
            await self.link.send(peer, data)
        except asyncio.CancelledError:
            raise
        except Exception:  # a broken link must not kill the router
            self.counters["send_errors"] += 1
            log.debug("send to %s failed", peer[:12], exc_info=True)

    async def _flush(self) -> None:
        while any(self._outboxes.values()) or any(self._inflight.values()):
            await asyncio.sleep(0.01)

    async def _receive_loop(self) -> None:
        while True:
            peer, data = await self.link.recv()
            try:
                self.handle_frame(peer, data)
            except Exception:  # never let one frame stop the node
                self.counters["handler_errors"] += 1
                log.warning("gossip frame from %s failed", peer[:12], exc_info=True)

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.params.heartbeat)
            try:
                self.heartbeat()
            except Exception:
                self.counters["handler_errors"] += 1
                log.warning("gossip heartbeat failed", exc_info=True)
