"""Helpers shared by the watch tests that talk to a live server."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

TOY = ["--domain", "toy", "--operator", "toy-random", "--eval-workers", "0", "--no-report"]


def slow_toy_config(tmp_path: Path, delay: float) -> Path:
    """A config whose operators take ``delay`` seconds per call, so the run lasts a while."""
    path = tmp_path / "slow.toml"
    path.write_text(f"operator_options = {{ delay = {delay} }}\n")
    return path


#: Talks to the loopback server directly, whatever proxy the environment configures.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def urlopen(url: str | urllib.request.Request):
    """Opens ``url`` without any proxy (raises ``HTTPError`` for error statuses)."""
    return _DIRECT.open(url, timeout=30)


def get(url: str) -> dict:
    with urlopen(url) as response:
        return json.loads(response.read())


def read_url(process: subprocess.Popen, deadline: float = 60) -> str:
    """The URL a watching process prints on stderr (``watch: http://...``)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        line = process.stderr.readline()
        if line.startswith("watch: http"):
            return line.split()[1]
        if not line and process.poll() is not None:
            break
    raise AssertionError("no watch URL printed")


def wait_for(predicate, url: str, timeout: float = 120) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        state = get(url)
        if predicate(state):
            return state
        time.sleep(0.1)
    raise AssertionError(f"timed out; last state run: {state['run']}")


@contextlib.contextmanager
def watched_run(
    env: dict[str, str], tmp_path: Path, *, delay: float, budget: int = 320
) -> Iterator[tuple]:
    """`dei watch` on a new directory, then a 4-node toy run (``budget`` calls: 80 per node by
    default, 4 rounds, ``delay`` seconds per call) into it; yields ``(url, run directory, run
    process)``."""
    out = tmp_path / "run"
    watch = subprocess.Popen(
        ["dei", "watch", str(out), "--port", "0"],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    run = None
    try:
        url = read_url(watch)
        run = subprocess.Popen(
            [
                "dei-run",
                *TOY,
                "--progress",
                "quiet",
                "--nodes",
                "4",
                "--budget",
                str(budget),
                "--rounds",
                "4",
                "--config",
                str(slow_toy_config(tmp_path, delay)),
                "--out",
                str(out),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        yield url, out, run
    finally:
        for process in (run, watch):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGINT)
                process.wait(timeout=30)
