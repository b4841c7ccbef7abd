"""The watch web server: the page, its static assets and a small read-only JSON API.

Routes (all ``GET``):

- ``/`` — the page; ``/static/<file>`` — its script and style (shipped in the package);
- ``/api/runs`` — the runs of the watched directory (one, or an experiment's);
- ``/api/state?run=PATH&since=VERSION`` — one run's state (see ``docs/watch.md``);
- ``/api/elite?run=PATH&id=ID`` — one elite with its program text.

It binds to the loopback interface unless told otherwise, serves nothing but these routes, and
never writes to the run directory.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
import sys
import threading
from collections.abc import Iterable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from dei_framework.app.watch.layout import find_runs, is_experiment
from dei_framework.app.watch.run import WatchedRun
from dei_framework.contract.errors import ConfigError

#: Default port of ``dei watch``.
DEFAULT_PORT = 8765
#: Seconds of reading one ``/api/state`` request may spend catching up with a large run.
READ_SECONDS = 0.5
#: The names this machine answers to on loopback (a Host header's name, port aside).
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
#: Connections the listening socket queues before ``accept`` (socketserver's default is 5:
#: a page's polling plus a few tabs would see refused or timed-out connections).
LISTEN_BACKLOG = 128
#: A Host header: a name, or an IPv6 address in brackets, then an optional numeric port.
_HOST = re.compile(r"(?P<name>\[[0-9A-Fa-f:.]+\]|[^:\[\]]+)(?::(?P<port>[0-9]{1,5}))?")
#: A numeric query parameter: ASCII digits only (``str.isdigit`` takes ``²``, which int
#: refuses).
_DIGITS = re.compile(r"[0-9]{1,18}")

#: Static files and their content types.
STATIC = {
    "index.html": "text/html; charset=utf-8",
    "watch.js": "text/javascript; charset=utf-8",
    "watch.css": "text/css; charset=utf-8",
}


class Watch:
    """The watched directory: its runs, each followed by a :class:`WatchedRun` on first use.

    Args:
        root: A run directory or an experiment directory (it may not exist yet).
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._runs: dict[str, WatchedRun] = {}
        self._lock = threading.Lock()

    def runs(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "kind": "experiment" if is_experiment(self.root) else "run",
            "runs": find_runs(self.root),
        }

    def run(self, path: str) -> WatchedRun:
        """The followed run at ``path`` (relative to the root; ``""`` for a plain run).

        Raises:
            KeyError: ``path`` is not one of :meth:`runs` (nothing outside them is served).
        """
        with self._lock:
            if path not in self._runs:
                if path not in {run["path"] for run in find_runs(self.root)}:
                    raise KeyError(path)
                self._runs[path] = WatchedRun(self.root / path if path else self.root, label=path)
            return self._runs[path]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "dei-watch"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if not self.server.host_allowed(self.headers.get("Host", "")):
            # A page elsewhere that re-resolves its own name to 127.0.0.1 (DNS rebinding)
            # would send its own name here: only this machine's names are answered.
            self._error(HTTPStatus.FORBIDDEN, "unexpected Host header")
            return
        try:
            url = urlsplit(self.path)
        except ValueError as exc:  # e.g. an unclosed "[" in the path: the client's mistake
            self._error(HTTPStatus.BAD_REQUEST, f"bad request path: {exc}")
            return
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        since = query.get("since") or None
        if since is not None and not _DIGITS.fullmatch(since):
            self._error(HTTPStatus.BAD_REQUEST, f"since must be a version number, got {since!r}")
            return
        try:
            if url.path in ("/", "/index.html"):
                self._static("index.html")
            elif url.path.startswith("/static/"):
                self._static(url.path.removeprefix("/static/"))
            elif url.path == "/api/runs":
                self._json(self.server.watch.runs())
            elif url.path == "/api/state":
                run = self.server.watch.run(query.get("run", ""))
                self._json(
                    run.state(since=None if since is None else int(since), seconds=READ_SECONDS)
                )
            elif url.path == "/api/elite":
                run = self.server.watch.run(query.get("run", ""))
                self._json(run.elite(query.get("id", "")))
            else:
                self._error(HTTPStatus.NOT_FOUND, f"no such page: {url.path}")
        except KeyError:
            self._error(HTTPStatus.NOT_FOUND, f"no run {query.get('run', '')!r} here")
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as exc:  # one bad request must not stop the server
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")

    def do_HEAD(self) -> None:  # noqa: N802
        self._error(HTTPStatus.METHOD_NOT_ALLOWED, "GET only")

    do_POST = do_PUT = do_DELETE = do_HEAD  # noqa: N815

    def _static(self, name: str) -> None:
        if name not in STATIC:
            self._error(HTTPStatus.NOT_FOUND, f"no such file: {name}")
            return
        body = resources.files("dei_framework.app.watch").joinpath("static", name).read_bytes()
        self._send(HTTPStatus.OK, STATIC[name], body)

    def _json(self, data: Any) -> None:
        try:
            body = json.dumps(data, separators=(",", ":"), allow_nan=False).encode()
        except ValueError:  # an infinite or NaN value from a log: browsers cannot parse those
            body = json.dumps(_finite(data), separators=(",", ":"), allow_nan=False).encode()
        self._send(HTTPStatus.OK, "application/json", body)

    def _error(self, status: HTTPStatus, message: str) -> None:
        body = json.dumps({"error": message}).encode()
        self._send(status, "application/json", body)

    def _send(self, status: HTTPStatus, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # a polling page would flood the terminal


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self, address: tuple[str, int], watch: Watch, allowed_hosts: Iterable[str] = ()
    ) -> None:
        self.watch = watch
        bound = address[0]
        bound = f"[{bound}]" if ":" in bound else bound
        # Names compared lower-case, as DNS compares them; the address bound is its own name.
        self.allowed_names = frozenset(
            name.lower() for name in (*LOOPBACK_NAMES, bound, *allowed_hosts)
        )
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line on stderr instead of socketserver's traceback; nothing at all for a
        browser that went away mid-request (a closed tab, a reload, a killed headless one)."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError | TimeoutError):
            return
        print(
            f"watch: a request from {client_address[0]} failed: {error!r}",
            file=sys.stderr,
            flush=True,
        )

    @property
    def loopback(self) -> bool:
        host = str(self.server_address[0])
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return host == "localhost"

    def host_allowed(self, header: str) -> bool:
        """On loopback, only requests addressed to this machine's own names are served.

        The Host header must be exactly one of :data:`LOOPBACK_NAMES`, the address bound or
        a name the user allowed, with or without a port: a prefix test (``127.``) would let
        ``127.0.0.1.attacker.example`` in, which an attacker's DNS can point here.
        """
        if not self.loopback:
            return True
        match = _HOST.fullmatch(header.strip())
        if match is None:
            return False
        port = match.group("port")
        if port is not None and not 0 < int(port) < 65536:
            return False
        return match.group("name").lower() in self.allowed_names


def _finite(value: Any) -> Any:
    """``value`` with infinite and NaN floats replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


class WatchServer:
    """Serves the watch page of ``root``.

    Args:
        root: A run or experiment directory.
        host: Interface to bind (default loopback only).
        port: Port (0 picks a free one).
        allowed_hosts: Host names served on loopback besides ``localhost``, ``127.0.0.1``,
            ``[::1]`` and the address bound (e.g. a name in ``/etc/hosts``).

    Raises:
        ConfigError: the address is not usable (port taken, unknown host).

    Example:
        >>> server = WatchServer("runs/demo", port=0)  # doctest: +SKIP
        >>> server.start()  # serves in a background thread  # doctest: +SKIP
        >>> print(server.url)  # doctest: +SKIP
    """

    def __init__(
        self,
        root: str | Path,
        *,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        self.watch = Watch(root)
        try:
            self._server = _Server((host, port), self.watch, allowed_hosts)
        except OSError as exc:
            hint = "; choose another with --port (0 picks a free one)" if port else ""
            raise ConfigError(
                f"cannot serve on {host}:{port}: {exc.strerror or exc}{hint}"
            ) from None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else host
        return f"http://{shown}:{port}/"

    @property
    def loopback(self) -> bool:
        """Whether only this machine can reach the server."""
        return self._server.loopback

    def start(self) -> WatchServer:
        """Serves in a daemon thread (it stops with the process or :meth:`close`)."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="dei-watch", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serves in this thread until interrupted."""
        self._server.serve_forever()

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()


def _announce(server: WatchServer) -> None:
    """Prints the URL (and a warning when other machines can reach it) on stderr."""
    print(f"watch: {server.url}", file=sys.stderr, flush=True)
    if not server.loopback:
        print(
            "warning: the watch page is reachable from other machines on this network; "
            "it shows the run's programs",
            file=sys.stderr,
            flush=True,
        )


def serve(
    root: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    allowed_hosts: Iterable[str] = (),
) -> None:
    """``dei watch``: serves ``root`` in this thread, printing the URL, until Ctrl-C.

    Raises:
        ConfigError: the address is not usable.
    """
    server = WatchServer(root, host=host, port=port, allowed_hosts=allowed_hosts)
    _announce(server)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


def watch_in_background(root: str | Path) -> WatchServer:
    """``dei-run --watch``: serves ``root`` from a daemon thread and prints the URL.

    Uses the default port, or a free one when that is taken.
    """
    try:
        server = WatchServer(root, port=DEFAULT_PORT)
    except ConfigError:
        server = WatchServer(root, port=0)
    _announce(server.start())
    return server


def serve_until_interrupted(server: WatchServer) -> None:
    """Keeps a finished run's page up until Ctrl-C (``dei-run --watch`` after the run)."""
    print(f"watch: still serving {server.url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
