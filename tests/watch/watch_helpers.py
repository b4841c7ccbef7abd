"""Helpers shared by the watch tests that talk to a live server."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from pathlib import Path

TOY = ["--domain", "toy", "--operator", "toy-random", "--eval-workers", "0", "--no-report"]


def slow_toy_config(tmp_path: Path, delay: float) -> Path:
    """A config whose operators take ``delay`` seconds per call, so the run lasts a while."""
    path = tmp_path / "slow.toml"
    path.write_text(f"operator_options = {{ delay = {delay} }}\n")
    return path


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as response:
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
