"""Benchmark: `dei watch` on a large run directory — page load and refresh times.

Writes a synthetic run directory shaped like a real one (``config.json``, ``checkpoint.json``,
``events.jsonl`` with warm-start, operator, peer, received and round events in the order and
field layout the search loop writes them) with ``--events`` events (default 200 000), reads
it, serves it with the real watch server on loopback, and measures:

- ``cold_read_s`` / ``cold_read_cpu_s``: reading the whole directory into its first complete
  state in one go (``WatchedRun(DIR).state(seconds=None)``, a fresh reader each repeat), wall
  and CPU time (``time.process_time``, which a loaded machine inflates less than wall time);
- ``catch_up_s`` / ``catch_up_cpu_s``: from a cold server until ``/api/state`` has read every
  event (the page shows progress meanwhile; no request reads for longer than the server's
  per-request budget), with ``first_request_complete`` saying whether the first request did;
- ``page_load_s``: what a browser fetches to show the page — ``/``, the script, the style,
  ``/api/runs`` and a full ``/api/state`` — once the server has caught up;
- ``refresh_s``: one poll after ``--append`` new events were written (the page's next update);
- ``unchanged_poll_s``: one poll when nothing changed (``?since=``).

Usage::

    python benchmarks/watch_load.py [--events 200000] [--nodes 4] [--shape 12x12]
                                    [--append 1000] [--repeats 5] [--keep DIR]

Prints one JSON object (times are medians over ``--repeats``, with the maximum alongside).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from dei_framework.app.watch.run import WatchedRun
from dei_framework.app.watch.server import WatchServer

WARM, PEERS = 5, 3


class Writer:
    """Writes the events of a synthetic run, round by round, node by node."""

    def __init__(self, path: Path, nodes: int, shape: tuple[int, int], seed: int) -> None:
        self.path = path
        self.nodes = [f"node-{i}" for i in range(nodes)]
        self.shape = shape
        self.rng = random.Random(seed)
        self.round = {name: 0 for name in self.nodes}
        self.seq = {name: 0 for name in self.nodes}
        self.archive: dict[str, dict[tuple[int, int], float]] = {n: {} for n in self.nodes}
        self.written = 0

    def _evaluated(self, node: str, kind: str, operator: str, elite_id: str) -> dict[str, Any]:
        rng, archive = self.rng, self.archive[node]
        event: dict[str, Any] = {
            "event": "evaluated",
            "id": elite_id,
            "node": node,
            "round": self.round[node],
            "operator": operator,
            "kind": kind,
            "parent": None if kind != "mutate" else f"{node}-r{self.round[node]}-s0",
            "slot": self.seq[node] % 4,
        }
        if kind == "mutate" and rng.random() < 0.05:
            event.update(
                status="invalid",
                error=f"line {rng.randint(1, 40)}: unknown opcode 'X{rng.randint(0, 99)}'",
                fitness=None,
                descriptor=None,
                cell=None,
            )
        else:
            cell = (rng.randrange(self.shape[0]), rng.randrange(self.shape[1]))
            fitness = round(rng.random() * 3, 6)
            held = archive.get(cell)
            status = (
                "new" if held is None else "improve_existing" if fitness > held else "not_added"
            )
            if status != "not_added":
                archive[cell] = fitness
            event.update(
                status=status,
                fitness=fitness,
                descriptor={"tsp": cell[0] * 100.5, "mc": cell[1] * 10.5},
                cell=list(cell),
            )
        event["timings"] = {"eval_s": 0.05, "call_s": 0.8}
        return event

    def node_round(self, node: str, calls: int) -> list[dict[str, Any]]:
        """One node's round: warm start, received champions, calls, the round event."""
        r = self.round[node]
        events = [
            self._evaluated(node, "warm", "initial", f"{node}-r{r}-w{i}") for i in range(WARM)
        ]
        if r:
            peers = [p for p in self.nodes if p != node][:PEERS]
            for peer in peers:
                events.append(
                    {
                        "event": "received",
                        "node": node,
                        "round": r,
                        "from": peer,
                        "from_round": r - 1,
                        "program": "MOV 0, 1\n" * 8,
                        "operator": "gp",
                    }
                )
            for i, peer in enumerate(peers):
                events.append(self._evaluated(node, "peer", f"peer:{peer}", f"{node}-r{r}-p{i}"))
        for _ in range(calls):
            kind = "new" if self.rng.random() < 0.1 else "mutate"
            events.append(self._evaluated(node, kind, "gp", f"{node}-r{r}-s{self.seq[node]}"))
            self.seq[node] += 1
        archive = self.archive[node]
        best = max(archive, key=archive.get) if archive else None
        events.append(
            {
                "event": "round",
                "node": node,
                "round": r,
                "calls": calls,
                "stats": {
                    "num_elites": len(archive),
                    "cells": self.shape[0] * self.shape[1],
                    "coverage": len(archive) / (self.shape[0] * self.shape[1]),
                    "qd_score": sum(archive.values()),
                    "qd_offset": 0.0,
                },
                "champion": None
                if best is None
                else {
                    "id": f"{node}-r{r}-best",
                    "text": ";redcode-94\nMOV 0, 1\n" * 10,
                    "fitness": archive[best],
                    "descriptor": {"tsp": 1.0, "mc": 1.0},
                    "cell": list(best),
                    "node": node,
                    "operator": "gp",
                    "round": r,
                    "parent": None,
                },
                "received": PEERS if r else 0,
                "niche_novelty": None,
                "generality": None,
            }
        )
        self.round[node] += 1
        self.seq[node] = 0
        self.archive[node] = {}
        return events

    def write(self, events: list[dict[str, Any]]) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events))
        self.written += len(events)


def make_run(
    directory: Path, *, events: int, nodes: int, shape: tuple[int, int], calls_per_round: int
) -> Writer:
    names = [f"node-{i}" for i in range(nodes)]
    per_round = WARM + 2 * PEERS + calls_per_round + 1
    rounds = max(1, events // (per_round * nodes))
    config = {
        "domain": "coreware",
        "transport": "inmemory",
        "nodes": [{"name": n, "operator": "gp", "options": {}} for n in names],
        "rounds": rounds + 100,
        "budget": (rounds + 100) * calls_per_round * nodes,
        "iterations": None,
        "seed": 0,
        "sharing": "champion",
    }
    (directory / "config.json").write_text(json.dumps(config))
    space = [
        {"kind": "uniform", "name": "tsp", "low": 0, "high": shape[0] * 100.5, "count": shape[0]},
        {"kind": "uniform", "name": "mc", "low": 0, "high": shape[1] * 10.5, "count": shape[1]},
    ]
    checkpoint = {
        "nodes": {
            n: {
                "round": 0,
                "archive": {"space": space, "qd_offset": 0.0, "elites": []},
                "usage": {
                    "calls": 0,
                    "attempts": 0,
                    "prompt_tokens": 0,
                    "completion_tokens": 0,
                    "cost_usd": 0.0,
                },
            }
            for n in names
        }
    }
    (directory / "checkpoint.json").write_text(json.dumps(checkpoint))
    writer = Writer(directory / "events.jsonl", nodes, shape, seed=0)
    while writer.written < events:
        batch = []
        for name in names:
            batch += writer.node_round(name, calls_per_round)
        writer.write(batch[: events - writer.written])
    return writer


#: Straight to the loopback server, whatever proxy the environment configures.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch(url: str) -> bytes:
    with _DIRECT.open(url, timeout=120) as response:
        return response.read()


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def stats(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 4), "max": round(max(values), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--shape", default="12x12", help="grid of the two axes, e.g. 12x12")
    parser.add_argument("--calls-per-round", type=int, default=500)
    parser.add_argument("--append", type=int, default=1000, help="events per refresh")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="write the run directory here and keep it")
    args = parser.parse_args()
    shape = tuple(int(x) for x in args.shape.lower().split("x"))
    with tempfile.TemporaryDirectory() as scratch:
        directory = args.keep or Path(scratch) / "run"
        directory.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        writer = make_run(
            directory,
            events=args.events,
            nodes=args.nodes,
            shape=shape,
            calls_per_round=args.calls_per_round,
        )
        generated_s = time.perf_counter() - started
        cold, cold_cpu = [], []
        for _ in range(args.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            assert WatchedRun(directory).state(seconds=None)["run"]["events"] == writer.written
            cold.append(time.perf_counter() - t0)
            cold_cpu.append(time.process_time() - c0)
        server = WatchServer(directory, port=0).start()
        try:
            base = server.url
            state_url = base + "api/state"
            requests, slowest = 0, 0.0
            started, started_cpu = time.perf_counter(), time.process_time()
            while True:
                t0 = time.perf_counter()
                state = json.loads(fetch(state_url))
                slowest = max(slowest, time.perf_counter() - t0)
                requests += 1
                if not state["run"]["behind_bytes"]:
                    break
            catch_up = time.perf_counter() - started
            catch_up_cpu = time.process_time() - started_cpu
            assert state["run"]["events"] == writer.written, "not every event was read"

            def page_load() -> None:
                for path in ("", "static/watch.js", "static/watch.css", "api/runs", "api/state"):
                    fetch(base + path)

            loads = [timed(page_load) for _ in range(args.repeats)]
            refreshes, unchanged = [], []
            version = json.loads(fetch(state_url))["version"]
            for _ in range(args.repeats):
                batch: list[dict[str, Any]] = []
                while len(batch) < args.append:
                    for name in writer.nodes:
                        batch += writer.node_round(name, args.calls_per_round)
                writer.write(batch[: args.append])
                t0 = time.perf_counter()
                state = json.loads(fetch(f"{state_url}?since={version}"))
                refreshes.append(time.perf_counter() - t0)
                assert state["run"]["events"] == writer.written and not state.get("unchanged")
                version = state["version"]
                unchanged_url = f"{state_url}?since={version}"
                unchanged.append(timed(lambda url=unchanged_url: fetch(url)))
            state_bytes = len(fetch(state_url))
        finally:
            server.close()
        size = (directory / "events.jsonl").stat().st_size
    print(
        json.dumps(
            {
                "events": args.events,
                "events_mb": round(size / 2**20, 1),
                "nodes": args.nodes,
                "grid": list(shape),
                "generated_s": round(generated_s, 2),
                "cold_read_s": stats(cold),
                "cold_read_cpu_s": stats(cold_cpu),
                "catch_up_s": round(catch_up, 3),
                "catch_up_cpu_s": round(catch_up_cpu, 3),
                "catch_up_requests": requests,
                "first_request_complete": requests == 1,
                "slowest_request_s": round(slowest, 3),
                "page_load_s": stats(loads),
                "refresh_s": stats(refreshes),
                "refresh_events": args.append,
                "unchanged_poll_s": stats(unchanged),
                "state_kb": round(state_bytes / 1024, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
