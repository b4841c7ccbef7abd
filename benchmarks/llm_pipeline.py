"""Benchmark: one LLM node over real HTTP keeps its slots busy under heavy-tailed latency.

A loopback OpenAI-compatible server (this script's own, on ``127.0.0.1``, in a process of its
own as a provider is, with ``TCP_NODELAY`` as production servers set it) answers chat
completions with heavy-tailed latency: in every block of ten requests one, at a random place,
takes ``--slow-s`` and the others ``--fast-s`` (90 % / 10 % exactly, 0.5 s / 5 s by default).
One node of the toy domain calls it through the ``llm`` operator (litellm, the OpenAI SDK,
httpx) with ``--concurrency`` slots; candidates are evaluated offline in a worker process.

Ideal throughput is ``concurrency / mean latency``, the mean being the server's own measure of
the replies it served. Achieved throughput is calls served divided by the server's busy
window (first request in to last reply out), so interpreter start-up and imports are left
out but round boundaries and the end-of-run drain are in. ``throughput_ratio`` is achieved ÷
ideal, per repeat and as a mean with a 95 % t-interval over ``--repeats`` runs.

The script also counts the bytes pickled per evaluation job sent to the worker (the job as
``ProcessPoolExecutor.submit`` receives it) and, for the Core War domain when installed, what a
job would carry with the opponents inside versus with an installed opponent set.

Usage::

    python benchmarks/llm_pipeline.py [--calls 500] [--rounds 2] [--concurrency 8]
                                      [--fast-s 0.5] [--slow-s 5] [--repeats 3]
                                      [--eval-s 0] [--eval-workers 1]

``--eval-s`` makes every evaluation take that long (the toy's own take about 1 ms), to see
whether slow evaluations (Core War battles take 0.1-1 s) hold up the calls.

Run it against another checkout (e.g. the code before the pipelined loop) by putting that
checkout's packages first on ``PYTHONPATH`` (``dei_framework`` and the plugin packages
``dei_llm``, ``dei_coreware``, ``dei_transports``, i.e. ``plugins/llm`` ...). Prints one JSON
object.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import json
import multiprocessing
import os
import pickle
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost map from the network
for _proxy in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
    os.environ.pop(_proxy, None)  # the loopback server is reached directly

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "toy"))

import toy_domain  # noqa: E402

import dei_framework  # noqa: E402
from dei_framework import NodeConfig, RunConfig, load_plugins, run  # noqa: E402
from dei_framework.analysis.stats import mean_interval  # noqa: E402


class HeavyTailedServer:
    """A chat-completions server whose replies are toy programs after heavy-tailed delays."""

    def __init__(self, fast_s: float, slow_s: float, seed: int) -> None:
        self.fast_s, self.slow_s = fast_s, slow_s
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.deck: list[float] = []
        self.served: list[tuple[float, float]] = []  # (arrival, reply sent), perf_counter
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # As production servers do (uvicorn, nginx): without TCP_NODELAY the body, written
            # after the headers, waits for the client's delayed ACK — a ~40 ms stall per reply
            # that the server's own latency measure would not see.
            disable_nagle_algorithm = True

            def log_message(self, format, *args):  # noqa: A002 - base signature
                pass

            def do_POST(self):
                arrived = time.perf_counter()
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                delay, text = server.answer(body)
                time.sleep(delay)
                words = len(text.split())
                payload = json.dumps(
                    {
                        "id": "chatcmpl-bench",
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
                            "prompt_tokens": 20,
                            "completion_tokens": words,
                            "total_tokens": 20 + words,
                        },
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                with server.lock:
                    server.served.append((arrived, time.perf_counter()))

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        threading.Thread(
            target=self.http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def answer(self, body: dict) -> tuple[float, str]:
        """The delay (one slow reply per ten, shuffled) and a toy program: a mutation of the
        program the prompt names, or a fresh one."""
        prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        with self.lock:
            if not self.deck:
                self.deck = [self.slow_s] + [self.fast_s] * 9
                self.rng.shuffle(self.deck)
            delay = self.deck.pop()
            rng = random.Random(self.rng.random())
        parent = re.search(r"Improve ([\d ]+)", prompt)
        numbers = [int(t) for t in parent.group(1).split()] if parent else []
        if not numbers:
            numbers = [rng.randrange(100) for _ in range(rng.randint(1, 8))]
        elif rng.random() < 0.3 and len(numbers) < 8:
            numbers.append(rng.randrange(100))
        else:
            numbers[rng.randrange(len(numbers))] = rng.randrange(100)
        return delay, "Here it is.\nPROGRAM: " + " ".join(map(str, numbers)) + "\n"

    def window(self) -> tuple[int, float, float]:
        """Replies served, mean latency and the busy window (first arrival to last reply)."""
        with self.lock:
            served = list(self.served)
        latency = statistics.fmean(done - arrived for arrived, done in served)
        return len(served), latency, max(d for _, d in served) - min(a for a, _ in served)

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def _serve(
    connection,
    fast_s: float,
    slow_s: float,
    seed: int,
    server_class: type[HeavyTailedServer] = HeavyTailedServer,
) -> None:
    """The server process: serves until told to stop, then sends back its window."""
    server = server_class(fast_s, slow_s, seed)
    connection.send(server.base_url)
    connection.recv()
    connection.send(server.window())
    server.close()


class ServerProcess:
    """:class:`HeavyTailedServer` in a process of its own, as a provider is: its threads never
    compete with the node's event loop for this interpreter's lock."""

    def __init__(
        self,
        fast_s: float,
        slow_s: float,
        seed: int,
        server_class: type[HeavyTailedServer] = HeavyTailedServer,
    ) -> None:
        context = multiprocessing.get_context("spawn")
        self._connection, child = context.Pipe()
        self._process = context.Process(
            target=_serve, daemon=True, args=(child, fast_s, slow_s, seed, server_class)
        )
        self._process.start()
        self.base_url: str = self._connection.recv()

    def close(self) -> tuple[int, float, float]:
        """Stops the server; returns replies served, mean latency and the busy window."""
        self._connection.send("stop")
        window = self._connection.recv()
        self._process.join(timeout=10)
        return window


class JobSizes:
    """Bytes pickled per evaluation job, as the process pool receives them."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self._submit = concurrent.futures.ProcessPoolExecutor.submit
        sizes, submit = self.sizes, self._submit

        def measured(pool, fn, *args, **kwargs):
            if getattr(fn, "__name__", "") == "_parse_and_evaluate":
                sizes.append(len(pickle.dumps((fn, args, kwargs))))
            return submit(pool, fn, *args, **kwargs)

        concurrent.futures.ProcessPoolExecutor.submit = measured

    def close(self) -> None:
        concurrent.futures.ProcessPoolExecutor.submit = self._submit


def measure(args: argparse.Namespace, registry, repeat: int) -> dict:
    server = ServerProcess(args.fast_s, args.slow_s, seed=args.seed * 1000 + repeat)
    options = {"api_base": server.base_url, "concurrency": args.concurrency, "timeout": 60.0}
    slow_evaluation = {"eval_seconds": args.eval_s} if args.eval_s else {}
    config = RunConfig(
        domain="toy",
        nodes=[NodeConfig(name="llm", operator="openai/bench", options=options)],
        budget=args.calls,
        rounds=args.rounds,
        seed=args.seed,
        sharing="none",
        eval_workers=args.eval_workers,
        domain_options=slow_evaluation,
    )
    sizes = JobSizes()
    try:
        with tempfile.TemporaryDirectory() as out:
            started = time.perf_counter()
            summary = run(config, out, registry=registry)
            wall = time.perf_counter() - started
    finally:
        sizes.close()
        served, latency, window = server.close()
    achieved, ideal = served / window, args.concurrency / latency
    job_bytes = round(statistics.fmean(sizes.sizes), 1) if sizes.sizes else None
    return {
        "calls": summary.budget["calls"],
        "served": served,
        "mean_latency_s": round(latency, 4),
        "window_s": round(window, 2),
        "wall_s": round(wall, 2),
        "achieved_calls_per_s": round(achieved, 3),
        "ideal_calls_per_s": round(ideal, 3),
        "throughput_ratio": round(achieved / ideal, 4),
        "job_bytes": job_bytes,
    }


def coreware_job_bytes(registry, champions: int) -> dict | None:
    """Bytes of one Core War evaluation job: with the opponents inside (the old jobs) and with
    an installed opponent set (``None`` when this checkout cannot install sets)."""
    if "coreware" not in registry.domains:
        return None
    from dei_framework.evaluation import local as evaluation

    domain = registry.domain("coreware").factory({})
    texts = domain.initial_opponents()
    # Champion-sized warriors: distinct copies, as distinct champions are (pickle would write a
    # repeated object once).
    pool = [
        copy.deepcopy(domain.parse(texts[i % len(texts)])) for i in range(len(texts) + champions)
    ]

    def job(opponents) -> int:  # the pickled submit() of one evaluation job
        arguments = (None, "warrior text", opponents, 1, ("a", "b"), None)
        return len(pickle.dumps((evaluation._parse_and_evaluate, arguments, {})))

    inline = job(pool)
    if not hasattr(evaluation.Evaluator, "install"):
        return {"opponents": len(pool), "inline": inline, "installed_set": None}
    evaluator = evaluation.Evaluator(domain, workers=1)
    try:
        by_id = job(evaluator.install(pool).id)
    finally:
        evaluator.close()
    return {"opponents": len(pool), "inline": inline, "installed_set": by_id}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--fast-s", type=float, default=0.5)
    parser.add_argument("--slow-s", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--eval-s",
        type=float,
        default=0.0,
        help="seconds each evaluation takes (0: the toy's ~1 ms)",
    )
    parser.add_argument("--eval-workers", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    registry = load_plugins(extra=[toy_domain])
    coreware = coreware_job_bytes(registry, champions=20)
    runs = [measure(args, registry, repeat) for repeat in range(args.repeats)]
    ratios = [r["throughput_ratio"] for r in runs]
    mean, _, half = mean_interval(ratios)
    print(
        json.dumps(
            {
                "code": str(Path(dei_framework.__file__).resolve().parents[1]),
                "commit": _commit(Path(dei_framework.__file__).resolve().parents[1]),
                "calls": args.calls,
                "rounds": args.rounds,
                "concurrency": args.concurrency,
                "latency_s": {"fast": args.fast_s, "slow": args.slow_s, "slow_share": 0.1},
                "eval_s": args.eval_s,
                "eval_workers": args.eval_workers,
                "n": len(runs),
                "throughput_ratio": round(mean, 4),
                "throughput_ratio_sd": round(statistics.stdev(ratios), 4)
                if len(ratios) > 1
                else None,
                "throughput_ratio_ci95": [round(mean - half, 4), round(mean + half, 4)]
                if half
                else None,
                "runs": runs,
                "coreware_job_bytes": coreware,
            }
        )
    )


def _commit(root: Path) -> str | None:
    out = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.strip() or None


if __name__ == "__main__":
    main()
