"""AXL nodes on namespaced hosts (:mod:`netns`): one per host, peered over the hosts' addresses.

This is the recipe of ``docs/multi-machine.md`` on one machine: every node listens for
peerings on its host's own address (``tls://10.203.0.<i + 1>:9001``), peers with the nodes
before it over those addresses, serves its API on the host's loopback (``127.0.0.1:9002``,
private to the host), and uses the DEI node's ``identity.pem`` as its key.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from dei_transports.axlnode import AxlNodeProcess, node_config, topology, up_peers
from netns import Host

from dei_framework.contract.errors import TransportError
from dei_framework.contract.processes import parent_death_signal

#: Peering port on every host (each host has its own ports).
PEERING_PORT = 9001
#: API port on every host's loopback.
API_PORT = 9002
#: Appended to every peer address: Yggdrasil redials a lost peering after 2, 4, 8 ... seconds,
#: by default up to 68 minutes apart; 30 s is the smallest cap it accepts.
MAX_BACKOFF = "?maxbackoff=30s"


def hosted_config(host: Host, key_path: Path, peers: Sequence[str]) -> dict[str, Any]:
    """The ``node-config.json`` of an AXL node on ``host`` (see ``docs/multi-machine.md``)."""
    return node_config(
        key_path=key_path,
        listen=f"tls://{host.address}:{PEERING_PORT}",
        api_port=API_PORT,
        peers=peers,
    )


@attrs.define(eq=False)
class HostedAxlNode(AxlNodeProcess):
    """An :class:`AxlNodeProcess` that runs on a namespaced host and peers over its address.

    Attributes:
        host: Where it runs.
    """

    host: Host | None = attrs.field(default=None, kw_only=True)

    @property
    def listen_address(self) -> str:
        """What other hosts put in ``Peers`` to peer with this one."""
        assert self.host is not None
        return f"tls://{self.host.address}:{self.listen_port}"

    def start(self) -> None:
        """Writes the node's config and starts it on its host (returns at once)."""
        assert self.host is not None and self.key_path is not None
        path = self.home / "node-config.json"
        path.write_text(json.dumps(hosted_config(self.host, self.key_path, self.peers), indent=1))
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            self.host.command(self.binary, "-config", str(path)),
            cwd=self.home,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=parent_death_signal(signal.SIGTERM),
        )

    def topology(self) -> dict[str, Any] | None:
        """``GET /topology`` of the node, asked from inside its host."""
        assert self.host is not None
        return self.host.call(lambda: topology(self.api))

    def wait_ready(self, peers_up: int = 0, timeout: float = 45.0) -> None:
        """Waits until the API answers (on the host) and ``peers_up`` direct peers are up.

        Raises:
            TransportError: the node died or the deadline passed (with the log's tail).
        """
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise TransportError(f"AXL node exited early; log tail:\n{self.log_tail()}")
            if up_peers(self.topology()) >= peers_up:
                return
            time.sleep(0.2)
        raise TransportError(
            f"AXL node on {self.host} not ready ({peers_up} peers up) within "
            f"{timeout:.0f} s; log tail:\n{self.log_tail()}"
        )


def start_hosted_nodes(
    binary: str,
    hosts: Sequence[Host],
    keys: Mapping[str, Path],
    home: Path,
    *,
    peer_options: str = MAX_BACKOFF,
) -> dict[str, HostedAxlNode]:
    """One AXL node per host, node ``i`` peering with every node before it; waits until each
    has a peer up. ``keys`` maps node names (in host order) to their key files;
    ``peer_options`` is appended to every peer address (``""``: Yggdrasil's defaults).

    Raises:
        TransportError: a node did not start or connect (the caller stops the others).
    """
    nodes: dict[str, HostedAxlNode] = {}
    addresses: list[str] = []
    for host, (name, key) in zip(hosts, keys.items(), strict=True):
        node = HostedAxlNode(
            binary,
            home=home / name,
            key_path=key,
            peers=[address + peer_options for address in addresses],
            listen_port=PEERING_PORT,
            api_port=API_PORT,
            host=host,
        )
        node.start()
        nodes[name] = node
        addresses.append(node.listen_address)
    for node in nodes.values():
        node.wait_ready(peers_up=1 if len(nodes) > 1 else 0)
    return nodes
