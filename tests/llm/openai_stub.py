"""A scripted OpenAI-compatible chat server on loopback, for testing the ``llm`` operator.

The server speaks real HTTP on ``127.0.0.1`` (a random free port) so the tests exercise
litellm, the OpenAI SDK and httpx exactly as a hosted provider would. Each test scripts what
the server does with a queue of behaviours (``ok``, ``status``, ``slow``, ``malformed_json``,
``billed_status``, ``empty_choices``); once the queue is empty requests get the behaviours of
:meth:`OpenAIStub.cycle` in turn, else :attr:`OpenAIStub.default`. The server counts what it
actually delivered and, like a hosted provider, what it *billed*: every attempt whose reply
reported usage (failed ones included), priced at :attr:`OpenAIStub.price`, so tests can check
that the budget ledger matches it to the token and the cent.

Example:
    >>> stub = OpenAIStub().start()
    >>> stub.script(status(429, retry_after=0.1), ok("MOV 0, 1"))
    >>> stub.base_url
    'http://127.0.0.1:PORT/v1'
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler
from typing import Any

import attrs
import pytest
from quiet_server import QuietThreadingHTTPServer

#: The reply served when a test scripts nothing: a small valid warrior with some prose.
DEFAULT_TEXT = """Here is a compact bomber that drops DAT bombs every fourth cell.

```redcode
;redcode-94
;name Stub Bomber
;author stub
        ORG start
start   ADD.AB #4, bomb
        MOV.I  bomb, @bomb
        JMP    start
bomb    DAT.F  #0, #0
        END
```

It should survive long enough to score against simple opponents.
"""


@attrs.frozen
class Behaviour:
    """What the server does with one request.

    Attributes:
        kind: ``"ok"``, ``"status"``, ``"slow"``, ``"malformed_json"``, ``"billed_status"`` or
            ``"empty_choices"``.
        text: Reply text for ``ok`` and ``slow``.
        prompt_tokens: Reported prompt tokens (``None``: count words of the prompt).
        completion_tokens: Reported completion tokens (``None``: count words of the reply).
        code: HTTP status for ``status``.
        retry_after: ``Retry-After`` header value in seconds for ``status`` (``None``: none).
        delay: Seconds to wait before answering (``slow``).
    """

    kind: str
    text: str = DEFAULT_TEXT
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    code: int = 200
    retry_after: float | None = None
    delay: float = 0.0


def ok(
    text: str = DEFAULT_TEXT,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
    *,
    delay: float = 0.0,
) -> Behaviour:
    """A normal completion (optionally after ``delay`` seconds)."""
    return Behaviour("ok", text, prompt_tokens, completion_tokens, delay=delay)


def status(code: int, retry_after: float | None = None) -> Behaviour:
    """An error status with an OpenAI-style error body (and ``Retry-After`` when given)."""
    return Behaviour("status", code=code, retry_after=retry_after)


def slow(seconds: float, text: str = DEFAULT_TEXT) -> Behaviour:
    """A completion that only starts after ``seconds`` (to trip client timeouts)."""
    return Behaviour("slow", text, delay=seconds)


def malformed_json() -> Behaviour:
    """A 200 reply whose body is not JSON."""
    return Behaviour("malformed_json")


def billed_status(
    code: int, prompt_tokens: int | None = None, completion_tokens: int | None = None
) -> Behaviour:
    """An error status whose body reports (and whose server bills) the usage of the attempt."""
    return Behaviour("billed_status", "", prompt_tokens, completion_tokens, code=code)


def empty_choices(prompt_tokens: int | None = None, completion_tokens: int = 7) -> Behaviour:
    """A malformed 200: valid JSON with usage but no choices (billed, yet useless)."""
    return Behaviour("empty_choices", "", prompt_tokens, completion_tokens)


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "model_not_found",
    429: "rate_limit_exceeded",
}


@attrs.define
class OpenAIStub:
    """The loopback server with its script and its counters.

    Attributes:
        default: Behaviour once the script is used up.
        api_keys: When non-empty, requests whose bearer token is not listed get a 401.
        models_status: When set, the status every ``GET /models...`` gets (a server that
            refuses the key, or has no such route).
        known_models: The models ``GET /models/{model}`` knows (404 for others); ``None``
            for any model.
        model_lookups: The paths of the ``GET`` requests received, in order.
        requests: Every request received (any path, any outcome).
        completed: Completions delivered in full to a client still listening.
        abandoned: Completions whose client had gone away (e.g. it timed out) before delivery.
        prompt_tokens: Prompt tokens of the completed replies.
        completion_tokens: Completion tokens of the completed replies.
        statuses: Count of HTTP statuses sent, by code.
        by_model: Completed replies by requested model.
        max_in_flight: Most requests handled at the same time.
        bodies: The JSON bodies of all chat requests, in arrival order.
        price: USD per million prompt and completion tokens the server charges.
        billed_attempts: Replies that reported usage (the server bills them), failures included.
        billed_prompt_tokens: Prompt tokens of the billed replies.
        billed_completion_tokens: Completion tokens of the billed replies.
        billed_usd: What the billed replies cost at :attr:`price`.
    """

    default: Behaviour = attrs.field(factory=ok)
    api_keys: set[str] = attrs.field(factory=set)
    models_status: int | None = None
    known_models: set[str] | None = None
    model_lookups: list[str] = attrs.field(factory=list)
    requests: int = 0
    completed: int = 0
    abandoned: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    statuses: Counter = attrs.field(factory=Counter)
    by_model: Counter = attrs.field(factory=Counter)
    max_in_flight: int = 0
    bodies: list[dict[str, Any]] = attrs.field(factory=list)
    price: tuple[float, float] = (0.0, 0.0)
    billed_attempts: int = 0
    billed_prompt_tokens: int = 0
    billed_completion_tokens: int = 0
    billed_usd: float = 0.0
    _cycle: list[Behaviour] = attrs.field(factory=list)
    _in_flight: int = 0
    _queue: deque = attrs.field(factory=deque)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)
    _server: QuietThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # --- control --------------------------------------------------------------------------

    def start(self) -> OpenAIStub:
        """Binds a free loopback port and serves in a daemon thread."""
        stub = self

        class Handler(_Handler):
            server_stub = stub

        self._server = QuietThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops serving and closes the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def port(self) -> int:
        assert self._server is not None, "stub not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """The ``api_base`` clients use (with ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *behaviours: Behaviour) -> None:
        """Queues behaviours for the next requests, in order."""
        with self._lock:
            self._queue.extend(behaviours)

    def cycle(self, *behaviours: Behaviour) -> None:
        """Serves ``behaviours`` in turn, round and round, once the script is used up."""
        with self._lock:
            self._cycle = list(behaviours)

    def pending(self) -> int:
        """Scripted behaviours not used yet."""
        with self._lock:
            return len(self._queue)

    # --- used by the handler --------------------------------------------------------------

    def _next(self) -> Behaviour:
        with self._lock:
            self.requests += 1
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            if self._queue:
                return self._queue.popleft()
            if self._cycle:
                return self._cycle[(self.requests - 1) % len(self._cycle)]
            return self.default

    def _bill(self, prompt_tokens: int, completion_tokens: int) -> None:
        """Counts a delivered reply that reported usage (call with the lock held)."""
        self.billed_attempts += 1
        self.billed_prompt_tokens += prompt_tokens
        self.billed_completion_tokens += completion_tokens
        self.billed_usd += (prompt_tokens * self.price[0] + completion_tokens * self.price[1]) / 1e6

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1


class _Handler(BaseHTTPRequestHandler):
    server_stub: OpenAIStub
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as production servers do; avoids 40 ms delayed-ACK stalls

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        pass  # keep pytest output clean

    def do_GET(self) -> None:
        stub = self.server_stub
        with stub._lock:
            stub.model_lookups.append(self.path)
        path = self.path.rstrip("/").removeprefix("/v1")
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        if not path.startswith("/models"):
            self._send_json(404, _error_body(404, f"no route {self.path}"))
        elif stub.api_keys and token not in stub.api_keys:
            self._send_json(401, _error_body(401))
        elif stub.models_status is not None:
            self._send_json(stub.models_status, _error_body(stub.models_status))
        elif path == "/models":
            self._send_json(200, {"object": "list", "data": [{"id": "stub-model"}]})
        elif stub.known_models is None or path.removeprefix("/models/") in stub.known_models:
            self._send_json(200, {"id": path.removeprefix("/models/"), "object": "model"})
        else:
            self._send_json(404, _error_body(404))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(404, _error_body(404, f"no route {self.path}"))
            return
        stub = self.server_stub
        behaviour = stub._next()
        try:
            self._serve(stub, behaviour, raw)
        finally:
            stub._done()

    def _serve(self, stub: OpenAIStub, behaviour: Behaviour, raw: bytes) -> None:
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, _error_body(400, "request body is not JSON"))
            return
        with stub._lock:
            stub.bodies.append(body)
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        if stub.api_keys and token not in stub.api_keys:
            behaviour = status(401)
        if behaviour.delay:
            time.sleep(behaviour.delay)
        if behaviour.kind == "status":
            headers = {}
            if behaviour.retry_after is not None:
                headers["Retry-After"] = f"{behaviour.retry_after:g}"
            self._send_json(behaviour.code, _error_body(behaviour.code), headers)
            return
        if behaviour.kind == "malformed_json":
            self._send_raw(200, b'{"id": "chatcmpl-broken", "choices": [', "application/json")
            return
        model = str(body.get("model", ""))
        prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        prompt_tokens = behaviour.prompt_tokens if behaviour.prompt_tokens is not None else prompt
        completion_tokens = (
            behaviour.completion_tokens
            if behaviour.completion_tokens is not None
            else len(behaviour.text.split())
        )
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if behaviour.kind in ("billed_status", "empty_choices"):
            if behaviour.kind == "billed_status":
                code, payload = behaviour.code, {**_error_body(behaviour.code), "usage": usage}
            else:
                code, payload = (
                    200,
                    {
                        "id": f"chatcmpl-empty-{stub.requests}",
                        "object": "chat.completion",
                        "created": 1764400000,
                        "model": model,
                        "choices": [],
                        "usage": usage,
                    },
                )
            if self._send_json(code, payload):
                with stub._lock:
                    stub._bill(prompt_tokens, completion_tokens)
            return
        if not self._client_connected():
            with stub._lock:
                stub.abandoned += 1
            self.close_connection = True
            return
        reply = {
            "id": f"chatcmpl-stub-{stub.requests}",
            "object": "chat.completion",
            "created": 1764400000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": behaviour.text},
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
        }
        if self._send_json(200, reply):
            with stub._lock:
                stub._bill(prompt_tokens, completion_tokens)
                stub.completed += 1
                stub.prompt_tokens += prompt_tokens
                stub.completion_tokens += completion_tokens
                stub.by_model[model] += 1
        else:
            with stub._lock:
                stub.abandoned += 1

    def _client_connected(self) -> bool:
        """Whether the client still holds the connection (a timed-out client has closed it)."""
        try:
            data = self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return True  # nothing to read, connection open
        except OSError:
            return False
        return data != b""

    def _send_json(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> bool:
        return self._send_raw(code, json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(
        self, code: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> bool:
        with self.server_stub._lock:
            self.server_stub.statuses[code] += 1
        try:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            return True
        except OSError:
            self.close_connection = True
            return False


def _error_body(code: int, message: str | None = None) -> dict[str, Any]:
    return {
        "error": {
            "message": message or f"stub error {code}",
            "type": _ERROR_TYPES.get(code, "server_error"),
            "param": None,
            "code": _ERROR_TYPES.get(code),
        }
    }


@pytest.fixture
def stub():
    """A fresh scripted OpenAI-compatible server on 127.0.0.1 (random port): the fixture of
    every test directory that talks to the loopback model (their conftests import it)."""
    server = OpenAIStub().start()
    try:
        yield server
    finally:
        server.stop()
