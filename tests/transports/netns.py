"""Hosts on one Linux machine: a network namespace per host, joined by a bridge, for AXL tests.

Every multi-process AXL test elsewhere shares one loopback. Here each "host" is a network
namespace with its own interface ``eth0`` and address ``10.203.0.<i + 1>/24``, wired by a veth
pair to a port ``p<i>`` of a bridge that lives in a namespace of its own, so nothing is added to
the machine's own network namespace and two runs never see each other (every namespace name
carries the process id and a random token). A process runs on a host through
``ip netns exec`` (:meth:`Host.command`); the host's loopback is its own, so an AXL node's API on
``127.0.0.1:9002`` is private to the host, as on a real machine. :meth:`Lan.partition` takes a
host's bridge port down (a cable pulled at the switch: its ``eth0`` loses carrier, every packet
to or from it is lost) and :meth:`Lan.heal` brings it back.

Needs Linux, root and ``ip`` from iproute2; :func:`unavailable` says why not, and
:func:`skip_unless_available` skips a test with that reason (or fails it where
``DEI_REQUIRE_NETNS`` is set, as in CI).
:func:`lan` always removes what it created, processes started inside included, even when the
test fails.

Example::

    with lan(2) as net:
        first, second = net.hosts
        server = subprocess.Popen(first.command("python3", "-m", "http.server", "80"))
        ...
        net.partition(second)
        net.heal(second)
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import attrs

T = TypeVar("T")

#: The hosts' subnet; every run has its own bridge, so runs may all use the same one.
SUBNET = "10.203.0"
#: ``setns(2)`` flag for a network namespace.
CLONE_NEWNET = 0x40000000


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {result.stderr.strip()}")
    return result


#: Set (to anything but empty or ``0``) where namespaces must work, as in CI (``.ci/run``): a
#: test that cannot make them then fails instead of skipping.
REQUIRE_ENV = "DEI_REQUIRE_NETNS"


def skip_unless_available() -> None:
    """Skips the calling test with :func:`unavailable`'s reason, or fails it with that reason
    when :data:`REQUIRE_ENV` is set."""
    import pytest

    reason = unavailable()
    if reason is None:
        return
    if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
        pytest.fail(f"{reason} ({REQUIRE_ENV} is set: namespaced hosts are required here)")
    pytest.skip(reason)


def unavailable() -> str | None:
    """Why namespaced hosts cannot be made here (``None``: they can).

    Checks Linux, root, ``ip`` on the path, and that a namespace can really be created (a
    container without ``CAP_SYS_ADMIN`` cannot).
    """
    if not sys.platform.startswith("linux"):
        return f"network namespaces need Linux (this is {sys.platform})"
    if os.geteuid() != 0:
        return "network namespaces need root (run as root, as .ci/run does)"
    if shutil.which("ip") is None:
        return "`ip` (iproute2) is not installed: apt-get install iproute2"
    probe = f"dei-probe-{os.getpid()}-{secrets.token_hex(3)}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


@attrs.frozen
class Host:
    """One host: a network namespace with one interface on the bridge.

    Attributes:
        index: Its position (0-based).
        namespace: The network namespace's name.
        address: Its IPv4 address on the bridge.
        port: The name of its bridge port (in the bridge's namespace).
    """

    index: int
    namespace: str
    address: str
    port: str

    def command(self, *args: str) -> list[str]:
        """A command line that runs ``args`` on this host (``ip netns exec``)."""
        return ["ip", "netns", "exec", self.namespace, *args]

    def call(self, function: Callable[[], T], timeout: float = 30.0) -> T:
        """Runs ``function`` in a thread that has entered this host's network namespace.

        Sockets it opens are the host's (``127.0.0.1`` is the host's loopback); the calling
        thread's namespace is untouched (a namespace is per thread on Linux).
        """
        outcome: dict[str, object] = {}

        def enter_and_run() -> None:
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                with open(f"/var/run/netns/{self.namespace}") as handle:
                    if libc.setns(handle.fileno(), CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), f"setns into {self.namespace}")
                outcome["value"] = function()
            except BaseException as exc:  # handed to the caller
                outcome["error"] = exc

        thread = threading.Thread(target=enter_and_run, name=f"netns-{self.namespace}")
        thread.start()
        thread.join(timeout)
        if thread.is_alive():
            raise TimeoutError(f"call in namespace {self.namespace} took over {timeout} s")
        if "error" in outcome:
            raise outcome["error"]  # type: ignore[misc]
        return outcome["value"]  # type: ignore[return-value]


@attrs.define
class Lan:
    """Hosts on one bridge (made by :func:`lan`).

    Attributes:
        bridge: The namespace holding the bridge ``br0`` and the hosts' ports.
        hosts: The hosts.
        partitioned: Hosts whose port is down now.
    """

    bridge: str
    hosts: list[Host]
    partitioned: set[int] = attrs.field(factory=set)

    def partition(self, host: Host) -> None:
        """Cuts ``host`` off: its bridge port goes down (nothing reaches it or leaves it)."""
        _ip("-n", self.bridge, "link", "set", host.port, "down")
        self.partitioned.add(host.index)

    def heal(self, host: Host) -> None:
        """Reconnects ``host`` (its bridge port comes back up)."""
        _ip("-n", self.bridge, "link", "set", host.port, "up")
        self.partitioned.discard(host.index)

    def port_up(self, host: Host) -> bool:
        """Whether the host's bridge port is administratively up."""
        flags = _ip("-n", self.bridge, "-o", "link", "show", host.port).stdout
        return "<" in flags and "UP" in flags.split("<", 1)[1].split(">", 1)[0].split(",")


def _pids_in(namespace: str) -> list[int]:
    result = _ip("netns", "pids", namespace, check=False)
    return [int(word) for word in result.stdout.split() if word.isdigit()]


def _kill_namespace_processes(namespaces: list[str]) -> None:
    """Stops what still runs inside our namespaces (only they hold these pids): SIGTERM, then
    SIGKILL after a few seconds."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        pids = [pid for ns in namespaces for pid in _pids_in(ns)]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(_pids_in(ns) for ns in namespaces):
            time.sleep(0.1)


@contextlib.contextmanager
def lan(count: int, *, prefix: str = "dei") -> Iterator[Lan]:
    """``count`` hosts on one bridge; everything is removed on exit, even after a failure.

    Args:
        count: Number of hosts (at most 250).
        prefix: Start of the namespace names (a process id and a random token follow).

    Raises:
        RuntimeError: an ``ip`` command failed (its message).
    """
    if not 1 <= count <= 250:
        raise ValueError("count must be within [1, 250]")
    tag = f"{prefix}-{os.getpid()}-{secrets.token_hex(3)}"
    bridge = f"{tag}-br"
    created: list[str] = []
    try:
        _ip("netns", "add", bridge)
        created.append(bridge)
        _ip("-n", bridge, "link", "add", "br0", "type", "bridge")
        _ip("-n", bridge, "link", "set", "br0", "up")
        hosts = []
        for index in range(count):
            host = Host(
                index=index,
                namespace=f"{tag}-h{index}",
                address=f"{SUBNET}.{index + 1}",
                port=f"p{index}",
            )
            _ip("netns", "add", host.namespace)
            created.append(host.namespace)
            ns = ("-n", host.namespace)
            _ip(*ns, "link", "set", "lo", "up")
            _ip(
                *ns,
                "link",
                "add",
                "eth0",
                "type",
                "veth",
                "peer",
                "name",
                host.port,
                "netns",
                bridge,
            )
            _ip("-n", bridge, "link", "set", host.port, "master", "br0")
            _ip("-n", bridge, "link", "set", host.port, "up")
            _ip(*ns, "addr", "add", f"{host.address}/24", "dev", "eth0")
            _ip(*ns, "link", "set", "eth0", "up")
            hosts.append(host)
        yield Lan(bridge=bridge, hosts=hosts)
    finally:
        _kill_namespace_processes(created)
        for namespace in reversed(created):  # a host's veth pair goes with its namespace
            _ip("netns", "del", namespace, check=False)


def namespace_exists(name: str) -> bool:
    """Whether a named network namespace exists (for tests of the cleanup)."""
    return Path("/var/run/netns", name).exists()
