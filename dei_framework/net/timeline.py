"""Virtual-time delivery of champions between the nodes of one process: deterministic sharing.

With a live network, which champions a node has received when a round starts depends on how
fast every node ran, so a seeded ensemble is not reproducible. In one process the core can do
better: it delivers champions by *virtual time* instead of wall-clock time.

* Each node has a :class:`NodeClock`. Its virtual time advances with its operator calls: a
  round of ``Q`` calls lasts ``Q x nominal_latency / max_in_flight`` virtual seconds (the
  operator's nominal latency, spread over its slots). So round ``r`` starts at the virtual time
  of the calls of rounds ``0 .. r-1`` — a function of the plan, never of the machine's load.
* A champion published at the end of round ``r`` carries the :data:`Stamp` ``(t, r)``, ``t``
  being that round's end time. A node taking champions at the start of round ``r'`` at
  virtual time ``t'`` takes exactly those published by its peers with stamp ``< (t', r')``
  (and not taken at an earlier round start). Ties are broken by round: nodes that run at the
  same virtual speed see each other's round-``r`` champions at the start of round ``r + 1``.
* Conservative synchronisation (the price of determinism): a node may take its champions only
  once no peer can still publish a champion it should see. Each node *promises* the stamp of its
  next publication (its current round's end — known at the round's start, whatever it
  receives), and a node at a round start waits, in wall time, until every live peer's promise
  is ``>=`` its own start stamp. Finished or stopped nodes promise nothing more and release
  every waiter. A node that waits declares its own promise first, so some waiter always has the
  smallest stamp and proceeds: there is no deadlock.

:class:`Timeline` is shared by the nodes of one process; it is checkpointed with the run
(:meth:`Timeline.to_json`), so a resumed run delivers exactly what an uninterrupted one does.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import base64
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from dei_framework.contract.transport import Delivery

#: ``(virtual seconds, round)``: when a champion was published, or when a round starts.
Stamp = tuple[float, int]

#: Promised by a node that will publish nothing more.
NEVER: Stamp = (math.inf, 2**62)


@attrs.frozen(kw_only=True)
class NodeClock:
    """One node's virtual clock: its operator calls at a nominal latency over its slots.

    Attributes:
        latency: Nominal seconds per operator call (the operator's ``nominal_latency``).
        slots: Calls in flight at once (the operator's ``max_in_flight``).
        quota: Calls of round ``r`` (the scheduler's ``round_quota``).
    """

    latency: float
    slots: int
    quota: Callable[[int], int]

    def time(self, round_index: int) -> float:
        """Virtual seconds at which round ``round_index`` starts (the end of the one before)."""
        calls = sum(self.quota(r) for r in range(round_index))
        return calls * self.latency / self.slots

    def start(self, round_index: int) -> Stamp:
        """The stamp of round ``round_index``'s start (champions taken then are ``<`` it)."""
        return (self.time(round_index), round_index)

    def publication(self, round_index: int) -> Stamp:
        """The stamp of what round ``round_index`` publishes at its end."""
        return (self.time(round_index + 1), round_index)


@attrs.frozen(kw_only=True)
class Posting:
    """One published message on the timeline.

    Attributes:
        sender: The publishing node.
        stamp: Its publication stamp.
        seq: Position among the sender's messages of the same stamp.
        payload: The encoded (signed) envelope.
    """

    sender: str
    stamp: Stamp
    seq: int
    payload: bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "sender": self.sender,
            "stamp": list(self.stamp),
            "seq": self.seq,
            "payload": base64.b64encode(self.payload).decode(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Posting:
        time, round_index = data["stamp"]
        return cls(
            sender=data["sender"],
            stamp=(float(time), int(round_index)),
            seq=data["seq"],
            payload=base64.b64decode(data["payload"]),
        )


class Timeline:
    """Champions of the nodes of one process, delivered by virtual time.

    Args:
        nodes: The node names (every one must eventually :meth:`finish`).

    Example:
        >>> timeline = Timeline(["a", "b"])
        >>> timeline.post("a", (1.0, 0), b"champion")
        >>> timeline.promise("a", (2.0, 1))
        >>> timeline.promise("b", (1.0, 0))
        >>> [d.payload for d in asyncio.run(timeline.collect("b", (0.0, 0), (1.0, 1)))]
        [b'champion']
    """

    def __init__(self, nodes: Sequence[str]) -> None:
        self.nodes = tuple(nodes)
        self.postings: list[Posting] = []
        # Nothing is ever published before (0, 0): a promise no one has to wait for.
        self._promises: dict[str, Stamp] = dict.fromkeys(self.nodes, (0.0, 0))
        self._waiters: list[asyncio.Future[None]] = []
        #: Round starts at which each node had to wait for a peer's clock.
        self.waits: dict[str, int] = dict.fromkeys(self.nodes, 0)

    def _notify(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def post(self, sender: str, stamp: Stamp, payload: bytes) -> None:
        """Publishes ``payload`` at ``stamp`` (never waits)."""
        if stamp < self._promises[sender]:
            raise ValueError(
                f"{sender} posts at {stamp}, before its promise {self._promises[sender]}"
            )
        seq = sum(1 for p in self.postings if p.sender == sender and p.stamp == stamp)
        self.postings.append(Posting(sender=sender, stamp=stamp, seq=seq, payload=payload))

    def promise(self, node: str, stamp: Stamp) -> None:
        """Declares that ``node`` will post nothing stamped before ``stamp`` from now on."""
        if stamp != self._promises[node]:
            self._promises[node] = max(stamp, self._promises[node])
            self._notify()

    def finish(self, node: str) -> None:
        """``node`` posts nothing more (it finished, stopped or failed): releases its waiters."""
        self.promise(node, NEVER)

    def ready(self, node: str, until: Stamp) -> bool:
        """Whether every peer of ``node`` has promised nothing more before ``until``."""
        return all(stamp >= until for peer, stamp in self._promises.items() if peer != node)

    def blocking(self, node: str, until: Stamp) -> list[str]:
        """The peers ``node`` still waits for to reach ``until``."""
        return [p for p, s in self._promises.items() if p != node and s < until]

    async def collect(self, node: str, since: Stamp | None, until: Stamp) -> list[Delivery]:
        """Waits until no peer can post before ``until``, then returns the peers' postings with
        ``since <= stamp < until``, by stamp, then sender, then sequence."""
        if not self.ready(node, until):
            self.waits[node] += 1
        while not self.ready(node, until):
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
        return [
            Delivery(payload=p.payload, from_peer=p.sender) for p in self.window(node, since, until)
        ]

    def window(self, node: str, since: Stamp | None, until: Stamp) -> list[Posting]:
        """The peers' postings ``node`` takes at a round start (see :meth:`collect`)."""
        chosen = [
            p
            for p in self.postings
            if p.sender != node and p.stamp < until and (since is None or p.stamp >= since)
        ]
        return sorted(chosen, key=lambda p: (p.stamp, p.sender, p.seq))

    def stats(self, node: str) -> dict[str, Any]:
        """``node``'s counters for the summary: postings, and round starts that waited."""
        posted = sum(1 for p in self.postings if p.sender == node)
        return {"delivery": "virtual", "posted": posted, "waits": self.waits[node]}

    def to_json(self) -> list[dict[str, Any]]:
        """The postings (what a resumed run needs: promises start over)."""
        return [p.to_json() for p in self.postings]

    def restore(self, postings: Iterable[Mapping[str, Any]]) -> None:
        """Puts back checkpointed postings."""
        self.postings = [Posting.from_json(p) for p in postings]
