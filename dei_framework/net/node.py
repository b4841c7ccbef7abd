"""A node's sharing side: its transport endpoint, identity, inbox filter and sharing policy.

Publishing never waits for peers (the transport queues); the inbox is drained at each round's
start, every message is verified, and what survives is handed to the node's search driver
(through the ``receive`` callable it is given) to be parsed and re-evaluated locally. A
replayed node takes the champions it received from the record instead; a node on a
:class:`~dei_framework.net.timeline.Timeline` (virtual-time delivery, the in-process default) takes
what its peers published before its round start in virtual time, waiting for them if needed.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dei_framework.contract.kinds import CandidateSource
from dei_framework.contract.records import Candidate
from dei_framework.contract.registry import PluginRegistry
from dei_framework.contract.transport import Delivery, Transport
from dei_framework.net.envelope import (
    ChampionEnvelope,
    EnvelopeError,
    InboxFilter,
    NodeIdentity,
    ReportEnvelope,
    is_report,
)
from dei_framework.net.timeline import NodeClock, Timeline
from dei_framework.search.archives import ArchiveBase
from dei_framework.search.sharing import SharingPolicy

#: Messages examined per round start; honest traffic is a few champions per peer and round.
MAX_DELIVERIES_PER_DRAIN = 2000
#: Reports examined per fetch; honest traffic is one per peer and round.
MAX_REPORTS_PER_DRAIN = 256
#: Received champions admitted per round (each is evaluated before it may be used).
MAX_ADMITTED_PER_ROUND = 64


class Node:
    """One DEI node.

    Args:
        name: The node's name.
        transport: The node's transport endpoint, or ``None`` (replay, or a lone node).
        policy: The sharing policy.
        domain_name: Messages of other domains are dropped.
        registry: Plugin registry, for the ``dei_champion_received`` hook.
        recorded: ``{round: [received events]}`` to use instead of the transport (replay).
        identity: The node's ed25519 identity; its messages are signed with it.
        inbox: Admission control for received messages (verification, dedup, rate limit).
        timeline: Deliver by virtual time through this timeline instead of ``transport``.
        clock: The node's virtual clock (with ``timeline``).
        members: The run's membership (entries ``key`` or ``name=key``, see
            :func:`~dei_framework.net.envelope.parse_membership`); ``()`` accepts any signed
            champion (but never one claiming this node's name from another key).
    """

    def __init__(
        self,
        *,
        name: str,
        transport: Transport | None,
        policy: SharingPolicy,
        domain_name: str,
        registry: PluginRegistry | None = None,
        recorded: Mapping[int, Sequence[dict[str, Any]]] | None = None,
        identity: NodeIdentity | None = None,
        inbox: InboxFilter | None = None,
        timeline: Timeline | None = None,
        clock: NodeClock | None = None,
        members: Sequence[str] = (),
    ) -> None:
        if (timeline is None) != (clock is None):
            raise ValueError("a node on a timeline needs a clock, and a clock needs a timeline")
        self.name = name
        self.transport = transport
        self.policy = policy
        self.domain_name = domain_name
        self.registry = registry
        self.recorded = recorded
        self.identity = identity or NodeIdentity.generate()
        self.timeline = timeline
        self.clock = clock
        # Champions are rare (one per node and round); the rate limit only stops floods. On a
        # timeline (this process's own nodes only) a wall-clock rate limit would make what is
        # dropped depend on timing, so there is none.
        rate = 1e12 if timeline is not None else 120
        self.inbox = inbox or InboxFilter(
            domain=domain_name,
            rate_per_minute=rate,
            burst=rate if timeline is not None else 60,
            members=members or None,
            own_name=name,
            own_key=self.identity.public_key_hex,
            max_per_round=MAX_ADMITTED_PER_ROUND,
        )
        #: Called with each peer's report (the payload of a verified :class:`ReportEnvelope`).
        self.on_report: Callable[[Mapping[str, Any]], None] | None = None
        #: Champions fetched by :meth:`poll` before the round start that takes them in.
        self._pending: list[Delivery] = []
        self.published = 0
        self.own_messages = 0
        self.late = 0
        # The counters as they stood before the latest round's receptions: a checkpoint taken
        # while that round start is under way (received, not yet admitted) must not count them,
        # since a resume receives them again.
        self._before_receiving: tuple[int, dict[str, Any]] | None = None

    def receive(self, round_index: int) -> list[Candidate]:
        """Drains the inbox (or the record) into validated champions from other nodes."""
        if self.recorded is not None:
            return [
                Candidate(
                    text=e["program"],
                    node=e["from"],
                    round=e["from_round"],
                    operator=e["operator"],
                    source=CandidateSource.PEER,
                )
                for e in self.recorded.get(round_index, ())
            ]
        if self.transport is None:
            return []
        self._before_receiving = (round_index, self.state_json())
        return self._accept(self._drain())

    def poll(self) -> None:
        """Fetches what peers sent without taking champions in: reports go to
        :attr:`on_report` now, champions wait for the next round start."""
        if self.transport is not None and self.timeline is None and self.recorded is None:
            self._pending.extend(self._reports(self.transport.drain()))
            excess = len(self._pending) - MAX_DELIVERIES_PER_DRAIN
            if excess > 0:  # a round start examines no more than these anyway
                self.inbox.dropped["inbox_overflow"] += excess
                del self._pending[:excess]

    def _drain(self) -> list[Delivery]:
        pending, self._pending = self._pending, []
        return pending + self.transport.drain()

    def _reports(self, deliveries: list[Delivery]) -> list[Delivery]:
        """Hands the reports among ``deliveries`` to :attr:`on_report`; returns the rest."""
        rest = []
        checked = 0
        for delivery in deliveries:
            payload = bytes(delivery.payload)
            if not is_report(payload):
                rest.append(delivery)
                continue
            checked += 1
            if checked > MAX_REPORTS_PER_DRAIN:  # each costs a signature check
                self.inbox.dropped["inbox_overflow"] += 1
                continue
            envelope = self.inbox.accept_report(payload)
            if envelope is None or envelope.key == self.identity.public_key_hex:
                continue
            if envelope.report.get("node") != envelope.node:  # a report for another's name
                self.inbox.dropped["impersonation"] += 1
                continue
            if self.on_report is not None:
                self.on_report(envelope.report)
        return rest

    async def publish_report(self, report: Mapping[str, Any], round_index: int) -> None:
        """Sends a report to every peer (signed); returns without waiting for any."""
        if self.transport is None:
            return
        envelope = ReportEnvelope(
            domain=self.domain_name,
            node=self.name,
            key=self.identity.public_key_hex,
            round=round_index,
            report=report,
        )
        try:
            payload = envelope.encode(self.identity)
        except EnvelopeError:
            self.inbox.dropped["unpublishable"] += 1
            return
        await self.transport.publish(payload)

    async def receive_round(self, round_index: int) -> list[Candidate]:
        """:meth:`receive`, or on a timeline: promises this round's publication stamp, waits
        until no peer can still publish before this round's start (virtual time), and takes
        what they published since the previous round start."""
        if self.timeline is None or self.recorded is not None:
            return self.receive(round_index)
        self.timeline.promise(self.name, self.clock.publication(round_index))
        since = self.clock.start(round_index - 1) if round_index > 0 else None
        deliveries = await self.timeline.collect(self.name, since, self.clock.start(round_index))
        self._before_receiving = (round_index, self.state_json())
        return self._accept(deliveries)

    def receive_late(self) -> list[Candidate]:
        """Peers' champions that arrived after this node's last round had started: delivered
        and verified, but never fought (each round takes in what arrived before its start).

        Only for a transport in real time; on a timeline or a replay nothing arrives late.
        """
        if self.transport is None or self.timeline is not None or self.recorded is not None:
            return []
        late = self._accept(self._drain())
        self.late += len(late)
        return late

    def finish(self) -> None:
        """The node publishes nothing more: peers waiting for its virtual clock go on."""
        if self.timeline is not None:
            self.timeline.finish(self.name)

    def _accept(self, deliveries: list[Delivery]) -> list[Candidate]:
        """Verified champions of other nodes among ``deliveries``."""
        received = []
        self.inbox.start_round()
        deliveries = self._reports(deliveries)
        if len(deliveries) > MAX_DELIVERIES_PER_DRAIN:
            # Verifying a signature costs CPU on the event loop, so a flood must not stall the
            # node; taking the peers' messages in turn keeps one flooding peer from crowding
            # out the others.
            self.inbox.dropped["inbox_overflow"] += len(deliveries) - MAX_DELIVERIES_PER_DRAIN
            deliveries = _round_robin(deliveries)[:MAX_DELIVERIES_PER_DRAIN]
        for delivery in deliveries:
            envelope = self.inbox.accept(delivery)
            if envelope is not None and envelope.key == self.identity.public_key_hex:
                self.own_messages += 1  # gossip can bring a node's own champion back
                continue
            if envelope is not None:
                received.append(envelope_candidate(envelope))
            if self.registry is not None:
                self.registry.notify(
                    "dei_champion_received",
                    node=self.name,
                    envelope=envelope,
                    accepted=envelope is not None,
                    reason="ok" if envelope is not None else "dropped",
                )
        return received

    async def publish(self, archive: ArchiveBase, round_index: int) -> None:
        """Shares the round's selected elites; returns without waiting for any peer."""
        if self.timeline is not None:
            stamp = self.clock.publication(round_index)
            for elite in self.policy.select(archive):
                payload = self._envelope(elite, round_index)
                if payload is not None:
                    self.timeline.post(self.name, stamp, payload)
                    self.published += 1
            self.timeline.promise(self.name, self.clock.publication(round_index + 1))
            return
        if self.transport is None:
            return
        for elite in self.policy.select(archive):
            payload = self._envelope(elite, round_index)
            if payload is not None:
                await self.transport.publish(payload)
                self.published += 1

    def _envelope(self, elite: Candidate, round_index: int) -> bytes | None:
        """The signed envelope of one elite (``None``, and counted, when it cannot be sent)."""
        envelope = ChampionEnvelope(
            domain=self.domain_name,
            node=self.name,
            key=self.identity.public_key_hex,
            round=round_index,
            operator=elite.operator,
            program=elite.text,
            fitness=elite.fitness,
            descriptor=dict(elite.descriptor),
        )
        try:
            return envelope.encode(self.identity)
        except EnvelopeError:
            self.inbox.dropped["unpublishable"] += 1
            return None

    def state_json(self, *, started_round: int | None = None) -> dict[str, Any]:
        """The sharing counters, for a checkpoint (a resumed node counts on from them).

        Args:
            started_round: The last round the node's scheduler has started. Champions received
                for a later round start are not admitted yet, and a resumed node receives them
                again: the counters from before their reception are returned.
        """
        before = self._before_receiving
        if before is not None and started_round is not None and before[0] > started_round:
            return dict(before[1])
        return {
            "published": self.published,
            "own_messages": self.own_messages,
            "late": self.late,
            "accepted": self.inbox.accepted,
            "dropped": dict(self.inbox.dropped),
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Puts back the counters of :meth:`state_json`."""
        self.published = int(state.get("published", 0))
        self.own_messages = int(state.get("own_messages", 0))
        self.late = int(state.get("late", 0))
        self.inbox.accepted = int(state.get("accepted", 0))
        self.inbox.dropped.clear()
        self.inbox.dropped.update({str(k): int(v) for k, v in (state.get("dropped") or {}).items()})

    def stats(self) -> dict[str, Any]:
        """Sharing counters for the summary."""
        return {
            "published": self.published,
            # Taken in at a round start; those that came after the last round started apart.
            "accepted": self.inbox.accepted - self.late,
            "late": self.late,
            "dropped": dict(self.inbox.dropped),
            "transport": (
                self.transport.stats()
                if self.transport is not None
                else self.timeline.stats(self.name)
                if self.timeline is not None
                else {}
            ),
        }


def envelope_candidate(envelope: ChampionEnvelope) -> Candidate:
    """The candidate record of a received champion (its claimed fitness is not kept)."""
    return Candidate(
        text=envelope.program,
        node=envelope.node,
        round=envelope.round,
        operator=envelope.operator,
        source=CandidateSource.PEER,
    )


def _round_robin(deliveries: list[Delivery]) -> list[Delivery]:
    """Interleaves deliveries by transport-level sender, keeping each sender's order."""
    by_peer: dict[str, list[Delivery]] = {}
    for delivery in deliveries:
        by_peer.setdefault(delivery.from_peer, []).append(delivery)
    queues = list(by_peer.values())
    return [queue[i] for i in range(max(map(len, queues))) for queue in queues if i < len(queue)]
