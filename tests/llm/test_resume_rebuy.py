"""A resume never buys a recorded reply twice: with no checkpoint (kill -9 before the first, or
one removed or ``null``) the replies already in ``calls.jsonl`` are served, and by the loopback
server's own count the resume buys exactly the budget's other calls.

A reply the server sent while the run was being killed, which never reached ``calls.jsonl``,
died with the process: the resume buys it again (docs/reliability.md, "Crashes"). At most the
calls in flight at the kill are lost that way (2 nodes x concurrency 2 here)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from openai_stub import ok

from dei_framework.runtime.files.run_layout import UNLOGGED_CALLS_FILE

MODEL = "openai/stub-model"
TOY_REPLY = "Sum near two hundred.\nPROGRAM: 50 60 70\n"
BUDGET = 40
#: Calls that can be in flight at once: 2 nodes, each with ``concurrency = 2``.
IN_FLIGHT = 4
CONFIG = "checkpoint_seconds = {}\n[operator_options]\nmax_tokens = 40\nconcurrency = 2\n"


def _args(stub, out: Path, config: Path) -> list[str]:
    return [
        "dei-run",
        "--domain",
        "toy",
        "--nodes",
        "2",
        "--operator",
        MODEL,
        "--api-base",
        stub.base_url,
        "--budget",
        str(BUDGET),
        "--rounds",
        "2",
        "--seed",
        "3",
        "--config",
        str(config),
        "--out",
        str(out),
        "--progress",
        "quiet",
        "--no-report",
        "--eval-workers",
        "0",
    ]


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.mark.parametrize("checkpoint", ["never written", "removed", "null"])
def test_resume_without_a_checkpoint_serves_the_recorded_replies(
    cli, env, stub, tmp_path, checkpoint
) -> None:
    config = tmp_path / "dei.toml"
    # "never written": no periodic checkpoint, so the kill comes before the first; "removed"
    # and "null": checkpoints every 0.05 s, one of them there at the kill, then taken away.
    config.write_text(CONFIG.format(100000 if checkpoint == "never written" else 0.05))
    stub.default = ok(TOY_REPLY)
    clean = tmp_path / "clean"
    cli(*_args(stub, clean, config), env=env, timeout=300)
    assert stub.billed_attempts == BUDGET
    stub.billed_attempts = 0

    stub.default = ok(TOY_REPLY, delay=0.15)  # slow enough to be killed midway
    out = tmp_path / "killed"
    run = subprocess.Popen(
        _args(stub, out, config),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    wanted = checkpoint != "never written"  # a checkpoint on disk too, before the kill
    while _lines(out / "calls.jsonl") < 8 or (out / "checkpoint.json").exists() < wanted:
        assert run.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "no calls were logged"
        time.sleep(0.01)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    paid = stub.billed_attempts
    recorded = _lines(out / "calls.jsonl")
    assert 8 <= recorded < BUDGET
    if checkpoint == "never written":
        assert not (out / "checkpoint.json").exists()
    elif checkpoint == "removed":
        (out / "checkpoint.json").unlink()
    else:
        (out / "checkpoint.json").write_text("null")

    stub.default = ok(TOY_REPLY)
    cli("dei-run", "--resume", str(out), "--progress", "quiet", "--no-report", env=env, timeout=300)
    # The server's own count: what the first session paid plus what the resume bought, which
    # is every call of the budget but the recorded ones.
    assert stub.billed_attempts - paid == BUDGET - recorded, (paid, recorded, stub.billed_attempts)
    assert 0 <= paid - recorded <= IN_FLIGHT, (paid, recorded)  # lost with the killed process
    calls = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    assert len(calls) == BUDGET and len({c["key"] for c in calls}) == BUDGET
    assert sum(bool(c.get("replayed")) for c in calls) >= recorded
    summary, expected = (json.loads((p / "summary.json").read_text()) for p in (out, clean))
    assert summary["budget"]["calls"] == BUDGET
    assert summary["merged"] == expected["merged"]
    assert not (out / UNLOGGED_CALLS_FILE).exists()  # every carried reply was logged again
