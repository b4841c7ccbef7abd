"""A scripted OpenAI-compatible model on loopback that edits the program it is shown.

The benchmarks that compare search loops (``vs_openevolve.py``, the python experiment of
``docs/figures/python_experiment.py``) need one model that answers every tool alike: the
same logic, the same seeds, no network, no key. This server reads the *current program* of
each chat request (the fenced program after the line naming it: OpenEvolve's ``# Current
Program``, DEI's ``The current program (...)``; without one, the first fenced program holding
an evolve block), changes its evolve block, and answers like a model would:

* the **edit** comes from the model name: ``ast`` — one to three of ``python-ast``'s seeded
  syntax-tree edits (:func:`dei_python.mutate.mutate_block`: a constant, a comparison or an
  arithmetic operator, a statement dropped or repeated); ``terms`` — a weighted term of the
  item and the bins' room added to ``score`` before ``return score`` (bin packing's
  ``priority``: the edits a FunSearch model makes), falling back to ``ast`` in a block without
  that shape; ``mixed`` — ``terms`` with probability :data:`TERM_SHARE`, else ``ast``;
* the **form** too: a name containing ``diff`` answers SEARCH/REPLACE edits of the block
  (the changed lines, widened until the SEARCH text occurs once), any other the whole program
  in one fenced block.

Each reply's randomness is drawn from ``(seed, model, program, how many times this model was
shown this program)``, not from the order requests arrive in: two tools that show the model
the same programs get the same replies, whatever their concurrency.

Usage (a server for other commands, e.g. ``dei experiment --api-base URL``)::

    python benchmarks/scripted_model.py [--seed 0] [--latency-s 0] [--port 0]

It prints ``{"api_base": URL}`` on one line once it listens, then serves until stopped.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "python")]

from dei_python.blocks import START, split  # noqa: E402
from dei_python.mutate import mutate_block  # noqa: E402
from edit_operators import as_edit  # noqa: E402
from quiet_server import QuietThreadingHTTPServer  # noqa: E402

from dei_framework.contract.errors import InvalidProgram  # noqa: E402

#: Share of ``mixed`` replies that add a term (the rest are syntax-tree edits).
TERM_SHARE = 0.5
#: Terms a ``terms`` edit adds to a bin-packing priority, in the names ``priority`` has.
TERMS = (
    "item",
    "bins",
    "(bins - item) ** 2",
    "item / bins",
    "np.sqrt(bins - item)",
    "np.exp(-(bins - item) / {scale})",
    "(bins - item < {threshold})",
    "(bins - item > {threshold})",
)
_CURRENT = re.compile(r"current program[^\n]*\n```[A-Za-z0-9_+-]*\n(.*?)```", re.S | re.I)
_FENCED = re.compile(r"```[A-Za-z0-9_+-]*\n(.*?)```", re.S)
_RETURN_SCORE = re.compile(r"^(?P<indent>[ \t]+)return score\s*$", re.M)


def current_program(messages: list[dict[str, Any]]) -> str | None:
    """The program a chat request shows as the one to change, or ``None``."""
    text = "\n".join(str(message.get("content", "")) for message in messages)
    found = _CURRENT.search(text)
    if found:
        return found.group(1)
    return next((code for code in _FENCED.findall(text) if START in code), None)


def add_term(block: str, rng: random.Random) -> str | None:
    """``block`` with ``score = score + c * term`` before its ``return score``, or ``None``
    when it has no such line."""
    found = _RETURN_SCORE.search(block)
    if found is None:
        return None
    term = rng.choice(TERMS).format(
        scale=f"{rng.uniform(1, 20):.3g}", threshold=f"{rng.uniform(0.5, 30):.3g}"
    )
    weight = rng.choice((-1, 1)) * math.exp(rng.gauss(-3.0, 1.5))
    line = f"{found['indent']}score = score + {weight:.4g} * {term}\n"
    return block[: found.start()] + line + block[found.start() :]


def edit_block(block: str, style: str, rng: random.Random) -> str:
    """The changed block: ``style`` is ``ast``, ``terms`` or ``mixed`` (module docstring)."""
    wants_term = style == "terms" or (style == "mixed" and rng.random() < TERM_SHARE)
    child = add_term(block, rng) if wants_term else None
    return child if child is not None else mutate_block(block, rng)


def reply_for(program: str | None, model: str, rng: random.Random) -> str:
    """What the model named ``model`` answers when shown ``program``."""
    if program is None:
        return "I see no program with an evolve block to improve."
    try:
        scaffold = split(program)
    except InvalidProgram:
        return "The program does not have exactly one evolve block."
    style = next((name for name in ("terms", "mixed") if name in model), "ast")
    child = edit_block(scaffold.block, style, rng)
    if "diff" in model:
        return "Here is a targeted change.\n" + as_edit(scaffold.block, child)
    whole = scaffold.join(child)
    return f"Here is the improved program.\n```python\n{whole}```\n"


class ScriptedModel:
    """The loopback server and what it served.

    Args:
        seed: The seed every reply's randomness is drawn from (with the program and model).
        latency_s: Seconds each reply waits before it is sent (a model's think time).

    Attributes:
        served: ``(arrival, sent)`` of every reply, ``time.perf_counter`` seconds.
        by_model: Replies sent, by requested model.
        unreadable: Requests in which no program with an evolve block was found.
    """

    def __init__(self, *, seed: int = 0, latency_s: float = 0.0) -> None:
        self.seed = seed
        self.latency_s = latency_s
        self.served: list[tuple[float, float]] = []
        self.by_model: Counter[str] = Counter()
        self.unreadable = 0
        self._shown: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._server: QuietThreadingHTTPServer | None = None

    def start(self, port: int = 0) -> ScriptedModel:
        """Listens on ``127.0.0.1:port`` (0: a free port) and serves from a daemon thread."""
        model = self

        class Handler(_Handler):
            scripted = model

        self._server = QuietThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        """Stops serving and closes the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def api_base(self) -> str:
        """The ``api_base`` clients use (with ``/v1``)."""
        assert self._server is not None, "the scripted model is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def reset(self) -> None:
        """Forgets what was served and shown (before the next run of a benchmark)."""
        with self._lock:
            self.served.clear()
            self.by_model.clear()
            self._shown.clear()
            self.unreadable = 0

    def answer(self, body: dict[str, Any]) -> str:
        """The reply text to one chat request body."""
        model = str(body.get("model", ""))
        program = current_program(list(body.get("messages") or []))
        with self._lock:
            if program is None:
                self.unreadable += 1
            key = (model, program or "")
            self._shown[key] += 1
            visit = self._shown[key]
        digest = hashlib.sha256(f"{self.seed}\0{model}\0{visit}\0{program}".encode()).digest()
        return reply_for(program, model, random.Random(digest))

    def window_s(self) -> float | None:
        """Seconds from the first request's arrival to the last reply sent."""
        with self._lock:
            if not self.served:
                return None
            return max(s for _, s in self.served) - min(a for a, _ in self.served)


class _Handler(BaseHTTPRequestHandler):
    scripted: ScriptedModel
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        pass

    def do_GET(self) -> None:
        self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    def do_POST(self) -> None:
        arrival = time.perf_counter()
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "request body is not JSON"}})
            return
        text = self.scripted.answer(body)
        if self.scripted.latency_s:
            time.sleep(self.scripted.latency_s)
        prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        completion = len(text.split())
        reply = {
            "id": f"chatcmpl-scripted-{arrival}",
            "object": "chat.completion",
            "created": 1764400000,
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text},
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        if self._send(200, reply):
            with self.scripted._lock:
                self.scripted.served.append((arrival, time.perf_counter()))
                self.scripted.by_model[str(body.get("model", ""))] += 1

    def _send(self, code: int, payload: Any) -> bool:
        data = json.dumps(payload).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            return True
        except OSError:
            self.close_connection = True
            return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latency-s", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    model = ScriptedModel(seed=args.seed, latency_s=args.latency_s).start(args.port)
    print(json.dumps({"api_base": model.api_base}), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        model.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
