"""Running a local AXL node process on loopback (tests, benchmarks and the one-machine launcher).

An AXL node is a Go program (``scripts/axl-node`` builds it) configured by a JSON file. Its
default ``node-config.json`` peers with *public* addresses, so every node started from here gets
a configuration written by :func:`loopback_config`: it listens on ``127.0.0.1`` only, its API
stays on ``127.0.0.1``, and every peer address must be a loopback address.

Example::

    binary = find_binary()
    first = AxlNodeProcess(binary, home=tmp / "a")
    first.start()
    second = AxlNodeProcess(binary, home=tmp / "b", peers=[first.listen_address])
    second.start()
    second.wait_ready(peers_up=1)
    ...  # GossipSub routers over first.api and second.api
    second.stop(); first.stop()
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import attrs
import httpx

from dei_framework.contract.errors import TransportError
from dei_framework.contract.processes import parent_death_signal
from dei_framework.contract.transport import LocalNetwork
from dei_framework.net.envelope import NodeIdentity

#: The port AXL's userspace TCP stack uses between nodes; must be equal on all nodes and never
#: clashes on the host (it lives inside each node's own stack).
AXL_TCP_PORT = 7000


def find_binary() -> str:
    """Where ``scripts/axl-node`` put the AXL node binary.

    ``$DEI_AXL_BIN`` if set, else ``$DEI_AXL_CACHE/bin/node`` (default cache
    ``~/.cache/dei/axl``).

    Raises:
        TransportError: no executable there (the message says how to build it).
    """
    explicit = os.environ.get("DEI_AXL_BIN")
    if explicit:
        path = Path(explicit)
    else:
        cache = os.environ.get("DEI_AXL_CACHE") or str(Path.home() / ".cache" / "dei" / "axl")
        path = Path(cache) / "bin" / "node"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise TransportError(
            f"no AXL node binary at {path}: build it with `bash scripts/axl-node` "
            "(set DEI_AXL_SRC to a gensyn-ai/axl checkout if the Go module proxy refuses it)"
        )
    return str(path)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` different TCP ports on 127.0.0.1 that are free right now.

    Every socket stays bound until all are picked: one port at a time, the kernel may hand the
    port it just released out again, and an AXL node given the same port for its API and its
    TLS listener dies with "address already in use".
    """
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket())
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def _loopback_host(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def loopback_config(
    *, key_path: str | os.PathLike[str], listen_port: int, api_port: int, peers: Sequence[str] = ()
) -> dict[str, Any]:
    """An AXL ``node-config.json`` that listens, serves its API and peers on loopback only.

    Args:
        key_path: The node's ed25519 private key (PEM).
        listen_port: TLS peering port on 127.0.0.1.
        api_port: HTTP API port on 127.0.0.1.
        peers: Peer addresses (``tls://127.0.0.1:PORT``); each must be a loopback address.

    Raises:
        TransportError: a peer address is not ``tls://<loopback>:PORT``.
    """
    for peer in peers:
        parts = urlsplit(peer)
        if parts.scheme != "tls" or not _loopback_host(parts.hostname) or not parts.port:
            raise TransportError(
                f"AXL peer {peer!r} is not a loopback tls://127.0.0.1:PORT address; local nodes "
                "never peer with public addresses"
            )
    return node_config(
        key_path=key_path, listen=f"tls://127.0.0.1:{listen_port}", api_port=api_port, peers=peers
    )


def node_config(
    *, key_path: str | os.PathLike[str], listen: str, api_port: int, peers: Sequence[str] = ()
) -> dict[str, Any]:
    """An AXL ``node-config.json``: peering on ``listen``, its HTTP API and bridge on loopback.

    Args:
        key_path: The node's ed25519 private key (PEM).
        listen: The peering address (``tls://HOST:PORT``).
        api_port: HTTP API port on 127.0.0.1 (the API is never exposed beyond the host).
        peers: Addresses of the nodes to peer with.
    """
    return {
        "PrivateKeyPath": str(key_path),
        "Listen": [listen],
        "Peers": list(peers),
        "api_port": api_port,
        "bridge_addr": "127.0.0.1",
        "tcp_port": AXL_TCP_PORT,
    }


def topology(api: str, timeout: float = 1.0) -> dict[str, Any] | None:
    """``GET /topology`` of a node, or ``None`` if it does not answer with a JSON object."""
    try:
        response = httpx.get(f"{api}/topology", timeout=timeout, trust_env=False)
        body = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def up_peers(body: dict[str, Any] | None) -> int:
    """How many direct peers a ``/topology`` answer lists as up with a key."""
    if not body:
        return 0
    return sum(
        1
        for p in body.get("peers") or []
        if isinstance(p, dict) and p.get("up") and p.get("public_key")
    )


@attrs.define(eq=False)
class AxlNodeProcess:
    """One AXL node as a child process, with its own key, ports and loopback-only config.

    Attributes:
        binary: The AXL node binary (:func:`find_binary`).
        home: A private folder: key, config and ``node.log`` live there.
        peers: Loopback addresses of nodes to peer with (``listen_address`` of another node).
        key_path: The ed25519 key (PEM); generated in ``home`` when ``None``. A DEI node's
            ``identity.pem`` can be used, so the AXL key and the envelope key are one.
        listen_port: Peering port (free port when 0).
        api_port: API port (free port when 0).
        parent_death_signal: Signal the node gets when the process that started it dies
            (Linux; ``None``: it outlives it).
    """

    # Absolute paths: the node runs with its home as working directory, where a path
    # relative to ours (`dei-run --out runs/x`, the default) would point elsewhere.
    binary: str = attrs.field(converter=lambda b: str(Path(b).resolve()) if os.sep in b else b)
    home: Path = attrs.field(converter=lambda h: Path(h).resolve())
    peers: list[str] = attrs.field(factory=list)
    key_path: Path | None = attrs.field(
        default=None, converter=lambda k: None if k is None else Path(k).resolve()
    )
    listen_port: int = 0
    api_port: int = 0
    parent_death_signal: int | None = None
    process: subprocess.Popen[bytes] | None = attrs.field(default=None, init=False)
    _log: IO[bytes] | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        if self.key_path is None:
            self.key_path = self.home / "private.pem"
            if not self.key_path.exists():
                NodeIdentity.generate().save(self.key_path)
        given = {self.listen_port, self.api_port}
        picked = iter(port for port in free_ports(4) if port not in given)
        self.listen_port = self.listen_port or next(picked)
        self.api_port = self.api_port or next(picked)

    @property
    def api(self) -> str:
        """The node's API base URL."""
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def listen_address(self) -> str:
        """What other local nodes put in ``Peers`` to peer with this one."""
        return f"tls://127.0.0.1:{self.listen_port}"

    @property
    def public_key(self) -> str:
        """The node's ed25519 public key (64 hex), from its key file."""
        assert self.key_path is not None
        return NodeIdentity.load(self.key_path).public_key_hex

    @property
    def log_path(self) -> Path:
        """The node's combined stdout/stderr."""
        return self.home / "node.log"

    def start(self) -> None:
        """Writes the loopback config and starts the process (returns at once)."""
        assert self.key_path is not None
        config = loopback_config(
            key_path=self.key_path,
            listen_port=self.listen_port,
            api_port=self.api_port,
            peers=self.peers,
        )
        path = self.home / "node-config.json"
        path.write_text(json.dumps(config, indent=1))
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [self.binary, "-config", str(path)],
            cwd=self.home,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "HOME": str(self.home)},
            # Out of the terminal's process group: a Ctrl-C is for the run, which stops its
            # AXL nodes itself after its node processes (they still need them to publish);
            # the terminal's SIGINT killed them first, and the launcher restarted them.
            start_new_session=True,
            preexec_fn=None
            if self.parent_death_signal is None
            else parent_death_signal(self.parent_death_signal),
        )

    def alive(self) -> bool:
        """Whether the process is running."""
        return self.process is not None and self.process.poll() is None

    def wait_ready(self, peers_up: int = 0, timeout: float = 45.0) -> None:
        """Waits until the API answers and at least ``peers_up`` direct peers are up.

        Raises:
            TransportError: the process died or the deadline passed (with the log's tail).
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise TransportError(f"AXL node exited early; log tail:\n{self.log_tail()}")
            body = topology(self.api)
            if body is not None and up_peers(body) >= peers_up:
                return
            time.sleep(0.1)
        raise TransportError(
            f"AXL node at {self.api} not ready ({peers_up} peers up) within {timeout:.0f} s; "
            f"log tail:\n{self.log_tail()}"
        )

    def log_tail(self, chars: int = 1200) -> str:
        """The end of the node's log."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL (a crash): no clean shutdown."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self._close_log()

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


#: A crashed AXL node of a local network is restarted this often.
MAX_RESTARTS = 5

#: The script that builds the AXL node (a Go build: minutes, the first time).
BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "axl-node"


def build_binary() -> str:
    """:func:`find_binary`, building the node with ``scripts/axl-node`` first if it is missing.

    Raises:
        TransportError: no binary and the build failed (the script's reason).
    """
    try:
        return find_binary()
    except TransportError:
        script = BUILD_SCRIPT
        if not script.is_file():
            raise
    # Said first: the Go build is silent and takes minutes, which looks like a hang.
    print("building the AXL node (first time, a few minutes)", file=sys.stderr, flush=True)
    try:
        proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TransportError(f"cannot build the AXL node with {script}: {exc}") from None
    if proc.returncode != 0:
        raise TransportError(
            proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"{script} failed"
        )
    return proc.stdout.strip().splitlines()[-1]


@attrs.define(eq=False)
class AxlLocalNetwork(LocalNetwork):
    """One loopback AXL node per DEI node, for running a run's nodes as processes on one machine.

    With ``peering="full"`` node ``i`` peers with every node before it (each pair of nodes is
    one overlay hop apart); with ``"chain"`` with node ``0`` and node ``i - 1`` only. Either way
    addresses are loopback only, never AXL's public defaults, and losing any one AXL node leaves
    the others connected. An AXL node that dies while the run goes on is restarted with the same
    key and ports (:meth:`check`).

    Attributes:
        names: The DEI node names.
        home: Where each AXL node's folder goes (``home/<name>/axl``).
        peering: ``"full"`` or ``"chain"``.
    """

    names: list[str]
    home: Path = attrs.field(converter=Path)
    peering: str = attrs.field(default="full", validator=attrs.validators.in_(("full", "chain")))
    nodes: dict[str, AxlNodeProcess] = attrs.field(factory=dict, init=False)
    restarts: dict[str, int] = attrs.field(factory=dict, init=False)

    def start(self, keys: Mapping[str, Path]) -> dict[str, dict[str, Any]]:
        """Starts and connects the AXL nodes; returns each DEI node's ``axl_api``.

        Raises:
            TransportError: no AXL binary could be built, or the nodes did not connect.
        """
        binary = build_binary()
        picked = free_ports(2 * len(self.names))
        ports = list(zip(picked[::2], picked[1::2], strict=True))
        listen = [f"tls://127.0.0.1:{port}" for port, _ in ports]
        try:
            for index, name in enumerate(self.names):
                earlier = (
                    listen[:index]
                    if self.peering == "full"
                    else [listen[0], listen[max(0, index - 1)]]
                )
                peers = sorted(set(earlier) - {listen[index]})
                node = AxlNodeProcess(
                    binary,
                    home=self.home / name / "axl",
                    peers=peers,
                    key_path=keys.get(name),
                    listen_port=ports[index][0],
                    api_port=ports[index][1],
                    parent_death_signal=signal.SIGTERM,
                )
                node.start()
                self.nodes[name] = node
            for node in self.nodes.values():
                node.wait_ready(peers_up=1 if len(self.nodes) > 1 else 0)
        except BaseException:
            self.stop()
            raise
        return {name: {"axl_api": node.api} for name, node in self.nodes.items()}

    def check(self) -> list[str]:
        """Restarts AXL nodes that died; returns one line per restart."""
        lines = []
        for name, node in self.nodes.items():
            if node.alive() or self.restarts.get(name, 0) >= MAX_RESTARTS:
                continue
            code = node.process.returncode if node.process is not None else None
            self.restarts[name] = self.restarts.get(name, 0) + 1
            old = node.process.pid if node.process is not None else None
            node.start()
            lines.append(
                f"{name}: its AXL node (pid {old}) exited with status {code}; restarted "
                f"it as pid {node.process.pid if node.process else '?'} on {node.api} "
                f"({self.restarts[name]}/{MAX_RESTARTS})"
            )
        return lines

    def describe(self) -> dict[str, dict[str, Any]]:
        """Per DEI node: its AXL node's pid, API address, public key and restarts."""
        return {
            name: {
                "axl_pid": node.process.pid if node.process is not None else None,
                "axl_api": node.api,
                "axl_key": node.public_key,
                "axl_restarts": self.restarts.get(name, 0),
            }
            for name, node in self.nodes.items()
        }

    def stop(self) -> None:
        """Stops every AXL node (SIGTERM, then SIGKILL)."""
        for node in self.nodes.values():
            try:
                node.stop()
            except Exception:  # stopping must go on for the others
                pass
