"""The namespaced-hosts harness itself (netns.py): hosts reach each other over their own
addresses, a partition really cuts a host off and a heal reconnects it, and everything is
removed afterwards, also when the test using it fails."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from netns import lan, namespace_exists, skip_unless_available


@pytest.fixture(autouse=True)
def _namespaces_possible() -> None:
    skip_unless_available()


def connects(host, address: str, port: int, timeout: float = 1.0) -> bool:
    """Whether a TCP connection from ``host`` to ``address:port`` is accepted."""

    def attempt() -> bool:
        try:
            with socket.create_connection((address, port), timeout=timeout):
                return True
        except OSError:
            return False

    return host.call(attempt)


def test_hosts_talk_over_their_addresses_and_a_partition_cuts_one_off() -> None:
    with lan(3) as net:
        first, second, third = net.hosts
        assert len({h.address for h in net.hosts}) == 3
        server = subprocess.Popen(
            second.command(sys.executable, "-m", "http.server", "8080", "--bind", second.address),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert _eventually(lambda: connects(first, second.address, 8080))
            # Its address exists only on its host, not in the machine's own namespace.
            own = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
            assert second.address not in own
            net.partition(second)
            assert not net.port_up(second)
            assert not connects(first, second.address, 8080)
            assert not connects(third, second.address, 8080)
            net.heal(second)
            assert net.port_up(second)
            assert _eventually(lambda: connects(third, second.address, 8080))
        finally:
            server.kill()
            server.wait()


def test_everything_is_removed_even_after_a_failure() -> None:
    names = []
    with pytest.raises(RuntimeError, match="boom"), lan(2) as net:
        names = [net.bridge, *(h.namespace for h in net.hosts)]
        # A process left running on a host is stopped too.
        subprocess.Popen(net.hosts[0].command("sleep", "300"))
        raise RuntimeError("boom")
    assert names and not any(namespace_exists(name) for name in names)


def test_two_lans_do_not_collide() -> None:
    with lan(1) as one, lan(1) as two:
        assert one.bridge != two.bridge
        assert one.hosts[0].namespace != two.hosts[0].namespace


def _eventually(condition, tries: int = 50) -> bool:
    import time

    for _ in range(tries):
        if condition():
            return True
        time.sleep(0.1)
    return False
