"""The transport contract: how one node publishes champions and drains what peers sent.

A transport carries opaque bytes (encoded :mod:`dei_framework.net.envelope` messages). The core
only ever calls the four methods below; everything about meshes, gossip, retries and polling
lives in the transport plugin.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from dei_framework.contract.context import FactoryContext
from dei_framework.contract.registry import Kind


@attrs.frozen
class Delivery:
    """One message a node received.

    Attributes:
        payload: The raw bytes, as published by the sender.
        from_peer: The transport-level sender id as the transport knows it (may be partial, as
            AXL's ``X-From-Peer-Id``); the authoritative sender is inside the envelope.
    """

    payload: bytes
    from_peer: str = ""


class Transport(abc.ABC):
    """One node's endpoint on the champion-sharing network.

    Contract the core relies on:
      * :meth:`publish` never waits for peers (it may queue and return at once).
      * :meth:`drain` never blocks; it returns everything received since the last call.
      * Peers that are slow, gone or hostile never make any method raise; failures are counted
        in :meth:`stats`.
    """

    #: This endpoint's peer id (for AXL, the full 64-hex ed25519 public key).
    peer_id: str = ""

    async def start(self) -> None:  # noqa: B027 - optional hook, nothing to do by default
        """Connects to the network; called once before the node's first round."""

    @abc.abstractmethod
    async def publish(self, payload: bytes) -> None:
        """Sends ``payload`` to every peer (directly or through gossip) without waiting for them."""

    @abc.abstractmethod
    def drain(self) -> list[Delivery]:
        """Returns and forgets every message received since the previous call."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Stops background work; called once when the node finishes."""

    def stats(self) -> dict[str, Any]:
        """Counters for the run summary (sent, received, dropped, ...)."""
        return {}


#: ``factory(ctx)`` builds one transport per node of ``ctx.node_names`` (the nodes this process
#: runs), from the run's transport options.
TransportFactory = Callable[[FactoryContext], Sequence[Transport]]


class LocalNetwork(abc.ABC):
    """What a networked transport runs on one machine so that each node can have its own process.

    ``dei-run`` uses it to run a networked run on one machine: it starts the network (for AXL,
    one AXL node per DEI node, peered on loopback), starts one ``dei node`` process per node
    with the transport options :meth:`start` returns for it, calls :meth:`check` while they run
    and :meth:`stop` at the end.
    """

    @abc.abstractmethod
    def start(self, keys: Mapping[str, Path]) -> dict[str, dict[str, Any]]:
        """Starts the network; returns each node's transport options (e.g. its API address).

        Args:
            keys: Each node's identity file (PEM), so the network can use the same key.

        Raises:
            TransportError: the network could not be started (the message says why).
        """

    def check(self) -> list[str]:
        """Repairs what failed (e.g. restarts a crashed network node); returns what it did."""
        return []

    def describe(self) -> dict[str, dict[str, Any]]:
        """Per node: what the summary should record about its part of the network (pids ...)."""
        return {}

    @abc.abstractmethod
    def stop(self) -> None:
        """Stops everything :meth:`start` started; never raises."""


#: Makes the one-machine network of a run, or returns ``None`` when the options say the user runs
#: their own (e.g. an AXL API address is given): ``local_network(node_names, options, home)``.
LocalNetworkFactory = Callable[[Sequence[str], Mapping[str, Any], Path], "LocalNetwork | None"]


@attrs.frozen
class TransportSpec:
    """A transport a plugin registers through ``dei_transports``.

    Attributes:
        name: What users type after ``--transport``.
        factory: ``factory(ctx)`` returns one :class:`Transport` per node of
            ``ctx.node_names``, in order (``ctx``: a
            :class:`~dei_framework.contract.context.FactoryContext`, the mapping of the
            transport options with the run's plugins and seed). In-process
            transports connect all of them; a networked transport may accept only one node per
            process and raise :class:`~dei_framework.contract.errors.ConfigError` otherwise.
        description: One line for ``dei plugins``.
        in_process: ``True`` when it connects nodes of one process only (like ``inmemory``):
            such a run delivers champions by virtual time by default (``delivery = "auto"``),
            through the core's :class:`~dei_framework.net.timeline.Timeline`, and the transport
            itself is used only with ``delivery = "wallclock"``.
        local_network: For a transport that runs one node per process: builds the network
            ``dei-run`` starts on one machine to run every node in its own process (see
            :class:`LocalNetwork`); ``None`` for in-process transports.
    """

    name: str
    factory: TransportFactory
    description: str = ""
    in_process: bool = False
    local_network: LocalNetworkFactory | None = None


#: The transports: ``registry.lookup(TRANSPORTS, name)`` is a :class:`TransportSpec`.
TRANSPORTS: Kind[TransportSpec] = Kind("dei_transports")
