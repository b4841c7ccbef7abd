"""A loopback stand-in for AXL nodes' HTTP API, faithful to the documented contract.

Each :class:`StandIn` serves ``/send``, ``/recv`` and ``/topology`` on 127.0.0.1 from a thread
(``http.server``); stand-ins created with the same :class:`StandInNetwork` deliver to each
other in-process. Behaviour copied from the contract (``/work/shared/docs/axl-api.md``):
``/recv`` is ``204`` when empty, else ``200`` with one message and a *partial*
``X-From-Peer-Id`` (28 real hex characters, then ``ff`` padding); the inbox holds 100 messages
and drops the oldest; ``/send`` needs ``X-Destination-Peer-Id`` (``400`` otherwise), answers
``405`` to other methods and ``502`` for unknown or down peers; JSON with a top-level
``service`` key or ``"a2a": true`` does not reach ``/recv``. ``stall_next_sends`` makes sends
hang before delivering, as a real node's ``/send`` does while its TCP dial to a peer that just
restarted waits for a retransmission (the message still arrives when the dial connects).
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler

from quiet_server import QuietThreadingHTTPServer

INBOX_CAPACITY = 100


def partial_id(key: str) -> str:
    """What AXL's ``X-From-Peer-Id`` looks like for ``key``."""
    return key[:28] + "f" * 36


class StandInNetwork:
    """The in-process "Yggdrasil" joining stand-ins."""

    def __init__(self) -> None:
        self.nodes: dict[str, StandIn] = {}
        self.lock = threading.Lock()

    def node(self, key: str | None = None) -> StandIn:
        """Creates and starts a stand-in node."""
        node = StandIn(self, key or secrets.token_hex(32))
        self.nodes[node.key] = node
        node.start()
        return node

    def close(self) -> None:
        """Stops every node."""
        for node in list(self.nodes.values()):
            node.stop()


class StandIn:
    """One fake AXL node."""

    def __init__(self, network: StandInNetwork, key: str) -> None:
        self.network = network
        self.key = key
        self.inbox: deque[tuple[str, bytes]] = deque()
        self.dropped_oldest = 0
        self.routed_elsewhere = 0
        self.down = False
        self.fail_next_sends = 0  # answer 502 this many times (then behave)
        self.stall_next_sends = 0  # hang this many sends for stall_seconds, then deliver them
        self.stall_seconds = 30.0
        self._released = threading.Event()  # ends the stalls (set when the node stops)
        self.direct: list[str] = []  # keys shown as direct peers
        self.extra_topology: list[dict] = []  # raw extra peer entries (e.g. down peers)
        self.null_topology = False
        self.requests: list[tuple[str, str]] = []
        self._server = QuietThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Base URL of this node's API."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        """Starts serving."""
        self._thread.start()

    def stop(self) -> None:
        """Stops serving."""
        self._released.set()
        self._server.shutdown()
        self._server.server_close()

    def deliver(self, sender: str, data: bytes) -> None:
        """What the remote listener does with an inbound stream."""
        try:
            body = json.loads(data)
        except ValueError:
            body = None
        if isinstance(body, dict) and ("service" in body or body.get("a2a") is True):
            self.routed_elsewhere += 1
            return
        with self.network.lock:
            if len(self.inbox) >= INBOX_CAPACITY:
                self.inbox.popleft()
                self.dropped_oldest += 1
            self.inbox.append((partial_id(sender), data))

    def topology(self) -> dict:
        """The ``/topology`` document."""
        if self.null_topology:
            peers, tree = None, None
        else:
            peers = [
                {
                    "uri": f"tls://127.0.0.1:{9000 + i}",
                    "up": not self.network.nodes[k].down,
                    "inbound": False,
                    "public_key": "" if self.network.nodes[k].down else k,
                    "root": self.key,
                    "port": i + 1,
                    "coords": [0, i + 1],
                }
                for i, k in enumerate(self.direct)
            ] + self.extra_topology
            # Like Yggdrasil's spanning tree: every node of the network, rooted at the first.
            root = next(iter(self.network.nodes))
            tree = [
                {"public_key": k, "parent": root, "sequence": 1}
                for k, n in self.network.nodes.items()
                if not n.down
            ]
        return {
            "our_ipv6": "200:0:0:0:0:0:0:1",
            "our_public_key": self.key,
            "peers": peers,
            "tree": tree,
        }

    def _handler(self):
        node = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as Go servers do; avoids 40 ms delayed-ACK stalls

            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def _reply(self, status: int, body: bytes = b"", headers=None) -> None:
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if body:
                    self.wfile.write(body)

            def do_GET(self) -> None:
                node.requests.append(("GET", self.path))
                if self.path == "/recv":
                    with node.network.lock:
                        item = node.inbox.popleft() if node.inbox else None
                    if item is None:
                        self._reply(204)
                    else:
                        self._reply(
                            200,
                            item[1],
                            {"X-From-Peer-Id": item[0], "Content-Type": "application/octet-stream"},
                        )
                elif self.path == "/topology":
                    data = json.dumps(node.topology()).encode()
                    self._reply(200, data, {"Content-Type": "application/json"})
                elif self.path == "/send":
                    self._reply(405, b"Method not allowed\n")
                else:
                    self._reply(404, b"404 page not found\n")

            def do_POST(self) -> None:
                node.requests.append(("POST", self.path))
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length)
                if self.path != "/send":
                    self._reply(405 if self.path in ("/recv", "/topology") else 404)
                    return
                dest = self.headers.get("X-Destination-Peer-Id", "")
                if not dest:
                    self._reply(400, b"Missing X-Destination-Peer-Id header\n")
                    return
                if len(dest) != 64:
                    self._reply(400, b"Invalid destination peer ID\n")
                    return
                if node.fail_next_sends > 0:
                    node.fail_next_sends -= 1
                    self._reply(502, b"Failed to reach peer: injected\n")
                    return
                with node.network.lock:
                    stall = node.stall_next_sends > 0
                    node.stall_next_sends -= stall
                if stall:
                    node._released.wait(node.stall_seconds)
                    self.close_connection = True  # its client has given up on it
                target = node.network.nodes.get(dest)
                if target is None or target.down or node.down:
                    self._reply(502, b"Failed to reach peer: unreachable\n")
                    return
                target.deliver(node.key, data)
                try:
                    self._reply(200, b"", {"X-Sent-Bytes": str(len(data))})
                except OSError:  # the client gave up on a stalled send; it was delivered
                    pass

        return Handler
