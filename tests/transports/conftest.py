"""Fixtures for transport tests: real AXL nodes on loopback, built by ``scripts/axl-node``.

``axl_binary`` builds (or finds in the cache) the node the way CI does: ``scripts/axl-node``
with the same ``DEI_AXL_SRC``/``DEI_AXL_CACHE`` environment (the script defaults to the source
snapshot in ``../shared/axl``). Only when that build fails does a test skip, with the build's
own reason. ``axl_cluster(n)`` starts ``n`` nodes chained to the first and waits until they
are connected; ``axl_nodes`` is three of them, as API URLs.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from dei_transports.axlnode import AxlNodeProcess

from dei_framework.contract.errors import TransportError

REPO = Path(__file__).resolve().parents[2]
AXL_NODES = 3


@pytest.fixture(scope="session")
def axl_binary() -> str:
    """Path of the AXL node binary; skips the test with the build's reason if it cannot be built."""
    try:
        proc = subprocess.run(
            ["bash", str(REPO / "scripts" / "axl-node")],
            capture_output=True,
            text=True,
            timeout=900,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot build the AXL node: {exc}")
    if proc.returncode != 0:
        pytest.skip(f"cannot build the AXL node: {proc.stderr.strip()[-600:]}")
    return proc.stdout.strip().splitlines()[-1]


AxlCluster = Callable[..., list[AxlNodeProcess]]


@pytest.fixture
def axl_cluster(axl_binary: str, tmp_path: Path) -> Iterator[AxlCluster]:
    """A factory: ``axl_cluster(n, keys=None)`` starts ``n`` connected loopback AXL nodes.

    Node ``i > 0`` peers with node 0; ``keys[i]`` (a PEM path) sets a node's identity. Every
    node started through the factory is stopped after the test.
    """
    started: list[AxlNodeProcess] = []

    def make(n: int, keys: Sequence[Path | None] | None = None) -> list[AxlNodeProcess]:
        nodes: list[AxlNodeProcess] = []
        for index in range(n):
            key = keys[index] if keys is not None else None
            peers = [nodes[0].listen_address] if index else []
            node = AxlNodeProcess(
                axl_binary, home=tmp_path / f"axl{len(started)}", peers=peers, key_path=key
            )
            node.start()
            started.append(node)
            nodes.append(node)
        try:
            for index, node in enumerate(nodes):
                node.wait_ready(peers_up=(n - 1) if index == 0 else 1)
        except TransportError as exc:
            pytest.fail(f"AXL nodes did not connect: {exc}")
        return nodes

    try:
        yield make
    finally:
        for node in started:
            node.stop()


@pytest.fixture
def axl_nodes(axl_cluster: AxlCluster) -> list[str]:
    """Three connected AXL nodes on 127.0.0.1; their API URLs."""
    return [node.api for node in axl_cluster(AXL_NODES)]
