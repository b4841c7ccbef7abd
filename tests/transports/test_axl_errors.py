"""An absent, misconfigured or crashed AXL node: one clear line, and recovery when it is back."""

from __future__ import annotations

import asyncio
import http.server
import json
import logging
import os
import threading
from pathlib import Path

import pytest
from dei_transports.axlnode import AxlNodeProcess, free_port, free_ports, loopback_config
from dei_transports.plugin import make_axl
from quiet_server import QuietThreadingHTTPServer

from dei_framework.contract.errors import TransportError


def _toy_config(tmp_path, api: str) -> str:
    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "toy"\ntransport = "axl"\nbudget = 8\nrounds = 1\neval_workers = 0\n'
        '[[node]]\nname = "solo"\noperator = "toy-random"\n'
        f'[transport_options]\naxl_api = "{api}"\nstart_timeout = 1\n'
    )
    return str(config)


def test_absent_node_is_one_line(cli, toy_env, tmp_path):
    api = f"http://127.0.0.1:{free_port()}"
    result = cli(
        "dei-run",
        "--config",
        _toy_config(tmp_path, api),
        "--out",
        str(tmp_path / "run"),
        "--progress",
        "quiet",
        env=toy_env,
        check=False,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"no AXL node answers at {api}" in lines[0]
    assert "Traceback" not in result.stderr


class _NotAxl(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_another_server_on_the_port_is_named(cli, toy_env, tmp_path):
    server = QuietThreadingHTTPServer(("127.0.0.1", 0), _NotAxl)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        api = f"http://127.0.0.1:{server.server_address[1]}"
        result = cli(
            "dei-run",
            "--config",
            _toy_config(tmp_path, api),
            "--out",
            str(tmp_path / "run"),
            "--progress",
            "quiet",
            env=toy_env,
            check=False,
        )
    finally:
        server.shutdown()
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "is not a working AXL node API: GET /topology answered HTTP 404" in lines[0]


def test_public_peers_are_refused_in_generated_configs(tmp_path):
    with pytest.raises(TransportError, match="not a loopback"):
        loopback_config(
            key_path=tmp_path / "k.pem",
            listen_port=1,
            api_port=2,
            peers=["tls://203.0.113.10:9001"],
        )
    config = loopback_config(
        key_path=tmp_path / "k.pem", listen_port=1, api_port=2, peers=["tls://127.0.0.1:9001"]
    )
    assert config["Listen"] == ["tls://127.0.0.1:1"] and config["bridge_addr"] == "127.0.0.1"


def test_a_node_gets_different_api_and_listen_ports(tmp_path):
    # One port at a time, the kernel may give the port it just released out again: a node once
    # got the same port for its API and its TLS listener and died ("address already in use").
    assert len(set(free_ports(64))) == 64
    for index in range(32):
        node = AxlNodeProcess("node", home=tmp_path / str(index))
        assert node.api_port != node.listen_port
    given = AxlNodeProcess("node", home=tmp_path / "given", listen_port=node.api_port)
    assert given.listen_port == node.api_port and given.api_port != given.listen_port


async def _crash_and_restart(a: AxlNodeProcess, b: AxlNodeProcess) -> None:
    options = {"heartbeat": 0.2, "prune_backoff": 10}
    ra = make_axl(["a"], dict(options, axl_api=a.api))[0]
    rb = make_axl(["b"], dict(options, axl_api=b.api))[0]
    await ra.start()
    await rb.start()
    loop = asyncio.get_running_loop()
    try:
        await ra.publish(b"before the crash")
        b.kill()  # SIGKILL: b's AXL node is gone, its router keeps polling
        await asyncio.sleep(1.0)
        await ra.publish(b"while b's node is down")
        assert rb.link.counters["recv_errors"] > 0
        await asyncio.to_thread(b.start)  # same key, same ports
        await asyncio.to_thread(b.wait_ready, 1)
        got: set[bytes] = set()
        deadline = loop.time() + 60
        wanted = {b"before the crash", b"while b's node is down", b"after the restart"}
        published_after = False
        while loop.time() < deadline and got != wanted:
            if not published_after and rb.link._failing is False:
                await ra.publish(b"after the restart")
                published_after = True
            got |= {d.payload for d in rb.drain()}
            await asyncio.sleep(0.1)
        assert got == wanted
    finally:
        await ra.close()
        await rb.close()


@pytest.mark.axl
def test_crashed_axl_node_is_reported_and_caught_up(axl_cluster, caplog):
    a, b = axl_cluster(2)
    with caplog.at_level(logging.WARNING, logger="dei_transports.axl"):
        asyncio.run(asyncio.wait_for(_crash_and_restart(a, b), 150))
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"AXL node at {b.api} stopped answering" in m for m in messages), messages
    assert any(f"AXL node at {b.api} answers again" in m for m in messages), messages


@pytest.mark.axl
def test_a_node_home_given_relative_to_our_directory_starts(axl_binary, tmp_path, monkeypatch):
    """`dei-run --out runs/x` (the default is relative too) gives relative homes, while the
    node runs inside its home: every path it is handed must be absolute."""
    monkeypatch.chdir(tmp_path)
    binary = os.path.relpath(axl_binary, tmp_path)  # a relative binary path, likewise
    node = AxlNodeProcess(binary, home="runs/x/axl")
    try:
        node.start()
        node.wait_ready()
    finally:
        node.stop()
    config = json.loads((tmp_path / "runs/x/axl/node-config.json").read_text())
    assert Path(config["PrivateKeyPath"]).is_absolute()


def test_building_the_axl_node_is_announced_first_and_only_when_it_is_built(
    tmp_path, monkeypatch, capsys
) -> None:
    # The first AXL run builds the node with Go, silently and for minutes: a line says so
    # before the build starts. A stand-in build script keeps this test fast and offline.
    import dei_transports.axlnode as axlnode

    built = tmp_path / "cache" / "bin" / "node"
    script = tmp_path / "axl-node"
    lines = [
        f"mkdir -p {built.parent}",
        f"echo '#!/bin/sh' > {built}",
        f"chmod +x {built}",
        f"echo {built}",
    ]
    script.write_text("\n".join(lines) + "\n")
    monkeypatch.delenv("DEI_AXL_BIN", raising=False)
    monkeypatch.setenv("DEI_AXL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(axlnode, "BUILD_SCRIPT", script)
    assert axlnode.build_binary() == str(built)
    err = capsys.readouterr().err
    assert err.startswith("building the AXL node (first time, a few minutes)\n"), err
    assert axlnode.build_binary() == str(built)  # built already: found, not built again
    assert "building" not in capsys.readouterr().err
