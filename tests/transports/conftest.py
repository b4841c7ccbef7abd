"""Fixtures for transport tests: real AXL nodes on loopback, built by ``scripts/axl-node``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from dei_framework.envelope import NodeIdentity

REPO = Path(__file__).resolve().parents[2]
AXL_NODES = 3


@pytest.fixture(scope="session")
def axl_binary() -> str:
    """Path of the AXL node binary; skips the test with the build's reason if it cannot be built."""
    try:
        proc = subprocess.run(
            [str(REPO / "scripts" / "axl-node")],
            capture_output=True,
            text=True,
            timeout=900,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot build the AXL node: {exc}")
    if proc.returncode != 0:
        pytest.skip(f"cannot build the AXL node: {proc.stderr.strip()[-600:]}")
    return proc.stdout.strip().splitlines()[-1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _topology(api: str) -> dict | None:
    try:
        response = httpx.get(f"{api}/topology", timeout=1.0, trust_env=False)
        return response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def _up_peers(topology: dict | None) -> int:
    if not topology:
        return 0
    return sum(1 for p in topology.get("peers") or [] if p.get("up") and p.get("public_key"))


@pytest.fixture
def axl_nodes(axl_binary, tmp_path) -> list[str]:
    """Starts 3 AXL nodes on 127.0.0.1 (chained to the first) and returns their API URLs."""
    procs: list[subprocess.Popen] = []
    apis: list[str] = []
    listen_ports = [_free_port() for _ in range(AXL_NODES)]
    try:
        for index in range(AXL_NODES):
            home = tmp_path / f"axl{index}"
            home.mkdir()
            NodeIdentity.generate().save(home / "private.pem")
            api_port = _free_port()
            config = {
                "PrivateKeyPath": str(home / "private.pem"),
                "Listen": [f"tls://127.0.0.1:{listen_ports[index]}"],
                "Peers": [] if index == 0 else [f"tls://127.0.0.1:{listen_ports[0]}"],
                "api_port": api_port,
                "bridge_addr": "127.0.0.1",
                "tcp_port": 7000,
            }
            (home / "node-config.json").write_text(json.dumps(config))
            log = open(home / "node.log", "wb")  # noqa: SIM115 - closed with the process
            procs.append(
                subprocess.Popen(
                    [axl_binary, "-config", str(home / "node-config.json")],
                    cwd=home,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, "HOME": str(home)},
                )
            )
            apis.append(f"http://127.0.0.1:{api_port}")
        wanted = [AXL_NODES - 1] + [1] * (AXL_NODES - 1)
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in procs):
                break
            if all(_up_peers(_topology(api)) >= n for api, n in zip(apis, wanted, strict=True)):
                yield apis
                return
            time.sleep(0.2)
        logs = "\n".join(
            (tmp_path / f"axl{i}" / "node.log").read_text(errors="replace")[-800:]
            for i in range(AXL_NODES)
        )
        pytest.fail(f"AXL nodes did not connect within 45 s; logs:\n{logs}")
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
