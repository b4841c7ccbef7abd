"""The point-to-point link contract a GossipSub router runs over (in-memory hub, AXL, ...)."""

from __future__ import annotations

import abc
from typing import Any


class Link(abc.ABC):
    """One node's point-to-point endpoint: send bytes to a known peer, receive bytes from any.

    A link does not broadcast and does not guarantee delivery; the router on top does both.
    Implementations never raise from :meth:`send` because a peer is slow, down or unknown: they
    count the failure in :meth:`stats` and drop the message.
    """

    #: This endpoint's full peer id (for AXL, the 64-hex ed25519 public key).
    peer_id: str = ""

    async def start(self) -> None:  # noqa: B027 - optional hook
        """Connects; after it returns :attr:`peer_id` is known."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Stops background work; :meth:`recv` may then wait forever."""

    @abc.abstractmethod
    def peers(self) -> list[str]:
        """The full ids of the peers currently believed reachable (never including ourself)."""

    @abc.abstractmethod
    async def send(self, peer: str, data: bytes) -> None:
        """Sends ``data`` to ``peer``; failures are counted and swallowed."""

    @abc.abstractmethod
    async def recv(self) -> tuple[str, bytes]:
        """Waits for the next message; returns ``(sender id as the link knows it, data)``.

        The sender id may be partial (AXL's ``X-From-Peer-Id``); see :meth:`same_peer`.
        """

    def same_peer(self, link_peer: str, claimed: str) -> bool:
        """Whether the link-level sender id is consistent with a claimed full id.

        The router compares the id a frame claims with the one the link observed, so a peer
        cannot speak for another. Links whose sender ids are exact compare for equality.
        """
        return link_peer == claimed

    def learn_peer(self, peer: str) -> None:  # noqa: B027 - optional hook
        """Told about a full peer id seen inside a frame (links that discover peers use it)."""

    def stats(self) -> dict[str, Any]:
        """Counters (sent, received, failures, ...)."""
        return {}
