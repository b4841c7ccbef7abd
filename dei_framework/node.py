"""A node: one search loop wired to a transport and a sharing policy.

Publishing never waits for peers (the transport queues); the inbox is drained at each round's
start, every message is validated, and what survives goes back to the search loop to be
re-evaluated locally. A replayed node takes the champions it received from the record instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from dei_framework.archive import GridArchive
from dei_framework.envelope import ChampionEnvelope, EnvelopeError
from dei_framework.plugins import PluginRegistry, notify
from dei_framework.search import Received, SearchLoop
from dei_framework.sharing import SharingPolicy
from dei_framework.transport import Transport


class Node:
    """One DEI node.

    Args:
        loop: The node's search loop (its ``receive``/``publish`` are wired here).
        transport: The node's transport endpoint, or ``None`` (replay, or a lone node).
        policy: The sharing policy.
        domain_name: Messages of other domains are dropped.
        registry: Plugin registry, for the ``dei_champion_received`` hook.
        recorded: ``{round: [received events]}`` to use instead of the transport (replay).
    """

    def __init__(
        self,
        *,
        loop: SearchLoop,
        transport: Transport | None,
        policy: SharingPolicy,
        domain_name: str,
        registry: PluginRegistry | None = None,
        recorded: Mapping[int, Sequence[dict[str, Any]]] | None = None,
    ) -> None:
        self.loop = loop
        self.transport = transport
        self.policy = policy
        self.domain_name = domain_name
        self.registry = registry
        self.recorded = recorded
        self.dropped: Counter[str] = Counter()
        self.published = 0
        self._seen: set[str] = set()
        loop._receive = self.receive
        loop._publish = self.publish

    @property
    def name(self) -> str:
        return self.loop.name

    def receive(self, round_index: int) -> list[Received]:
        """Drains the inbox (or the record) into validated champions from other nodes."""
        if self.recorded is not None:
            return [
                Received(text=e["program"], node=e["from"], round=e["from_round"],
                         operator=e["operator"])
                for e in self.recorded.get(round_index, ())
            ]  # fmt: skip
        if self.transport is None:
            return []
        received = []
        for delivery in self.transport.drain():
            envelope, reason = self._decode(delivery.payload)
            accepted = envelope is not None and reason == "ok"
            if not accepted:
                self.dropped[reason] += 1
            else:
                received.append(Received(text=envelope.program, node=envelope.node,
                                         round=envelope.round, operator=envelope.operator))
            if self.registry is not None:
                notify(self.registry, "dei_champion_received", node=self.name, envelope=envelope,
                       accepted=accepted, reason=reason)  # fmt: skip
        return received

    def _decode(self, payload: bytes) -> tuple[ChampionEnvelope | None, str]:
        try:
            envelope = ChampionEnvelope.decode(payload, domain=self.domain_name)
        except EnvelopeError as exc:
            return None, _reason(str(exc))
        if envelope.node == self.name:
            return envelope, "own message"
        if envelope.message_id in self._seen:
            return envelope, "duplicate"
        self._seen.add(envelope.message_id)
        return envelope, "ok"

    async def publish(self, archive: GridArchive, round_index: int) -> None:
        """Shares the round's selected elites; returns without waiting for any peer."""
        if self.transport is None:
            return
        for elite in self.policy.select(archive):
            envelope = ChampionEnvelope(
                domain=self.domain_name, node=self.name, key=self.transport.peer_id,
                round=round_index, operator=elite.operator, program=elite.text,
                fitness=elite.fitness, descriptor=dict(elite.descriptor),
            )  # fmt: skip
            try:
                await self.transport.publish(envelope.encode())
                self.published += 1
            except EnvelopeError as exc:
                self.dropped[f"unpublishable: {exc}"] += 1

    def stats(self) -> dict[str, Any]:
        """Sharing counters for the summary."""
        return {
            "published": self.published,
            "dropped": dict(self.dropped),
            "transport": self.transport.stats() if self.transport is not None else {},
        }


def _reason(message: str) -> str:
    """A short, countable reason from an envelope error message."""
    for word in ("oversize", "malformed", "schema version", "domain", "signature", "program"):
        if word in message:
            return word
    return message.split(":")[0]
