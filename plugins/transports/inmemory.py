"""An in-process hub of links with seeded fault injection (latency, loss, partitions, crashes).

The hub is the test bench and simulator for the GossipSub router: every link of a hub is an
ordinary :class:`~dei_transports.link.Link`, so the router cannot tell it from AXL. Faults are
decided by :meth:`Hub.route` from one seeded random generator, so runs are reproducible for a
given event order. Time comes from a *scheduler* object with ``time()`` and
``call_later(delay, callback, *args)``: the running asyncio loop by default, or
:class:`VirtualClock` for simulations that run faster than real time.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import attrs
from dei_transports.link import Link


class Scheduler(Protocol):
    """What the hub needs of a clock: asyncio's event loop has exactly this shape."""

    def time(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> Any: ...


@attrs.define
class VirtualClock:
    """A discrete-event scheduler: time jumps from one scheduled callback to the next."""

    now: float = 0.0
    _queue: list[tuple[float, int, Callable[..., Any], tuple[Any, ...]]] = attrs.field(factory=list)
    _counter: itertools.count = attrs.field(factory=itertools.count)

    def time(self) -> float:
        """The current virtual time in seconds."""
        return self.now

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> None:
        """Schedules ``callback(*args)`` at ``now + delay`` (FIFO among equal times)."""
        heapq.heappush(
            self._queue, (self.now + max(0.0, delay), next(self._counter), callback, args)
        )

    def run_until(self, deadline: float) -> None:
        """Runs every callback due up to ``deadline``, then sets the time to ``deadline``."""
        while self._queue and self._queue[0][0] <= deadline:
            when, _, callback, args = heapq.heappop(self._queue)
            self.now = when
            callback(*args)
        self.now = max(self.now, deadline)


@attrs.frozen
class Partition:
    """Between ``start`` and ``end`` (hub time), only nodes in the same group can talk.

    Nodes in no group form one extra group together.
    """

    groups: tuple[frozenset[str], ...]
    start: float
    end: float

    def separates(self, a: str, b: str, now: float) -> bool:
        """Whether the partition is in force at ``now`` and puts ``a`` and ``b`` apart."""
        if not self.start <= now < self.end:
            return False
        return self._group(a) != self._group(b)

    def _group(self, node: str) -> int:
        for index, group in enumerate(self.groups):
            if node in group:
                return index
        return -1


@attrs.frozen
class Outage:
    """Node ``node`` is down (sends and receives nothing) between ``start`` and ``end``."""

    node: str
    start: float
    end: float


@attrs.define
class Hub:
    """Connects :class:`HubLink` endpoints in one process and injects faults.

    Attributes:
        loss: Probability that any one message is dropped.
        latency: ``(low, high)`` seconds; each message's delay is uniform in that range.
        seed: Seeds the fault generator.
        scheduler: Clock and timer; ``None`` uses the running asyncio loop.
        partitions: Scheduled partitions (they heal at their ``end``).
        outages: Scheduled crashes (the node comes back at ``end``).
    """

    loss: float = 0.0
    latency: tuple[float, float] = (0.0, 0.0)
    seed: int = 0
    scheduler: Scheduler | None = None
    partitions: list[Partition] = attrs.field(factory=list)
    outages: list[Outage] = attrs.field(factory=list)
    links: dict[str, HubLink] = attrs.field(factory=dict, init=False)
    _rng: random.Random = attrs.field(init=False)
    _down: set[str] = attrs.field(factory=set, init=False)
    _t0: float | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    # --- membership and faults ----------------------------------------------------------------

    def link(self, peer_id: str) -> HubLink:
        """Creates (or returns) the link of ``peer_id``."""
        if peer_id not in self.links:
            self.links[peer_id] = HubLink(hub=self, peer_id=peer_id)
        return self.links[peer_id]

    def clock(self) -> Scheduler:
        """The scheduler in use (the running loop when none was given)."""
        return self.scheduler if self.scheduler is not None else asyncio.get_running_loop()

    def now(self) -> float:
        """Hub time: seconds since the hub first needed the time."""
        t = self.clock().time()
        if self._t0 is None:
            self._t0 = t
        return t - self._t0

    def partition(self, groups: Sequence[Sequence[str]], start: float, end: float) -> None:
        """Schedules a partition in hub time (see :class:`Partition`)."""
        self.partitions.append(Partition(tuple(frozenset(g) for g in groups), start, end))

    def outage(self, node: str, start: float, end: float) -> None:
        """Schedules a crash of ``node`` in hub time."""
        self.outages.append(Outage(node, start, end))

    def set_down(self, node: str, down: bool = True) -> None:
        """Crashes (or revives) ``node`` now, until told otherwise."""
        (self._down.add if down else self._down.discard)(node)

    def is_up(self, node: str, now: float | None = None) -> bool:
        """Whether ``node`` is up at hub time ``now``."""
        now = self.now() if now is None else now
        if node in self._down:
            return False
        return not any(o.node == node and o.start <= now < o.end for o in self.outages)

    def reachable(self, a: str, b: str, now: float | None = None) -> bool:
        """Whether a message from ``a`` to ``b`` could be delivered at ``now`` (ignoring loss)."""
        now = self.now() if now is None else now
        if not (self.is_up(a, now) and self.is_up(b, now)):
            return False
        return not any(p.separates(a, b, now) for p in self.partitions)

    def route(self, src: str, dst: str) -> float | None:
        """Decides one message's fate: its delay in seconds, or ``None`` when it is lost."""
        if dst not in self.links or not self.reachable(src, dst):
            return None
        if self.loss > 0 and self._rng.random() < self.loss:
            return None
        low, high = self.latency
        return low if high <= low else self._rng.uniform(low, high)


@attrs.define(eq=False)
class HubLink(Link):
    """One endpoint of a :class:`Hub`.

    Received messages go to :attr:`receiver` when set (simulations), else to a queue read by
    :meth:`recv`.
    """

    hub: Hub
    peer_id: str
    receiver: Callable[[str, bytes], None] | None = None
    counters: dict[str, int] = attrs.field(
        factory=lambda: {"sent": 0, "received": 0, "lost": 0, "dropped_down": 0}
    )
    _queue: asyncio.Queue[tuple[str, bytes]] | None = attrs.field(default=None, init=False)

    def peers(self) -> list[str]:
        """Peers this node can reach right now (a connection-aware view, like AXL's topology)."""
        hub = self.hub
        if not (hub.partitions or hub.outages or hub._down):
            return [p for p in hub.links if p != self.peer_id]  # no faults scheduled: everyone
        now = hub.now()
        if not hub.is_up(self.peer_id, now):
            return []
        return [
            p
            for p in self.hub.links
            if p != self.peer_id and self.hub.reachable(self.peer_id, p, now)
        ]

    async def send(self, peer: str, data: bytes) -> None:
        """Hands ``data`` to the hub (never waits for the peer)."""
        self.send_nowait(peer, data)

    def send_nowait(self, peer: str, data: bytes) -> None:
        """Synchronous :meth:`send`, for simulations that drive routers without a loop."""
        self.counters["sent"] += 1
        delay = self.hub.route(self.peer_id, peer)
        if delay is None:
            self.counters["lost"] += 1
            return
        self.hub.clock().call_later(delay, self.hub.links[peer]._deliver, self.peer_id, bytes(data))

    def _deliver(self, sender: str, data: bytes) -> None:
        # Re-checked at arrival: a node that crashed while the message was in flight loses it.
        if not self.hub.is_up(self.peer_id):
            self.counters["dropped_down"] += 1
            return
        self.counters["received"] += 1
        if self.receiver is not None:
            self.receiver(sender, data)
        else:
            self._inbox().put_nowait((sender, data))

    def _inbox(self) -> asyncio.Queue[tuple[str, bytes]]:
        if self._queue is None:
            self._queue = asyncio.Queue()
        return self._queue

    async def recv(self) -> tuple[str, bytes]:
        """Waits for the next delivered message."""
        return await self._inbox().get()

    def stats(self) -> dict[str, Any]:
        """Sent, received, lost and dropped-while-down counts."""
        return dict(self.counters)
