"""One writer per run directory: a second writer is refused with one line naming the holder.

The runs here are held alive by the toy domain's generality gate (the first round champion's
generality waits until the test creates a file), so "while the run lives" is an event the test
controls, not a race against a clock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dei_framework.contract.errors import ConfigError
from dei_framework.runtime.files.run_layout import LOCK_FILE
from dei_framework.runtime.files.run_lock import RunDirInUse, held, lock_run_dir


def _wait_for(condition, what: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _gated_run(out: Path, gate: Path, env: dict) -> list[str]:
    return [
        "dei-run",
        "--domain",
        "toy",
        "--operator",
        "toy-random",
        "--nodes",
        "2",
        "--budget",
        "40",
        "--rounds",
        "2",
        "--eval-workers",
        "1",
        "--out",
        str(out),
        "--domain-option",
        f"generality_gate={gate}",
        "--progress",
        "quiet",
        "--no-report",
    ]


def _start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def _assert_one_clean_log(out: Path, *, nodes: int, rounds: int) -> None:
    log = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    ids = [e["id"] for e in log if e["event"] == "evaluated"]
    assert ids and len(ids) == len(set(ids)), "a candidate was logged twice"
    assert sum(e["event"] == "round" for e in log) == nodes * rounds
    assert json.loads((out / "summary.json").read_text())["budget"]["calls"] == 40


def _refusal(result: subprocess.CompletedProcess | tuple[int, str], pid: int) -> str:
    code, stderr = (result.returncode, result.stderr) if not isinstance(result, tuple) else result
    assert code == 1, stderr
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert f"in use by another DEI process (pid {pid})" in lines[0], lines[0]
    return lines[0]


def test_a_second_writer_of_a_live_run_is_refused_naming_the_pid(toy_env, tmp_path) -> None:
    out, gate = tmp_path / "run", tmp_path / "gate"
    first = _start(_gated_run(out, gate, toy_env), toy_env)
    try:
        _wait_for(lambda: Path(f"{gate}.started").exists(), "the run's first generality job")
        assert (out / LOCK_FILE).read_text().strip() == str(first.pid)
        before = (out / "events.jsonl").read_bytes()
        attempts = {
            "resume": ["dei-run", "--resume", str(out), "--progress", "quiet", "--no-report"],
            "fresh": _gated_run(out, gate, toy_env),
            "merge": ["dei", "merge", str(out), "--no-report"],
        }
        for what, args in attempts.items():
            result = subprocess.run(args, env=toy_env, capture_output=True, text=True, timeout=300)
            line = _refusal(result, first.pid)
            assert str(out) in line, (what, line)
        # Nothing the refused commands did reached the live run's log.
        assert (out / "events.jsonl").read_bytes()[: len(before)] == before
    finally:
        gate.touch()
        _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    _assert_one_clean_log(out, nodes=2, rounds=2)


def test_two_runs_started_together_on_one_out_give_one_refusal(toy_env, tmp_path) -> None:
    out, gate = tmp_path / "run", tmp_path / "gate"
    # Both start at once: both find no config.json; only the lock tells them apart.
    runs = [_start(_gated_run(out, gate, toy_env), toy_env) for _ in range(2)]
    try:
        _wait_for(lambda: any(run.poll() is not None for run in runs), "one run to be refused")
        loser = next(run for run in runs if run.poll() is not None)
        winner = next(run for run in runs if run is not loser)
        _refusal((loser.returncode, loser.stderr.read()), winner.pid)
        assert winner.poll() is None  # it waits at the gate: it cannot have finished
    finally:
        gate.touch()
        for run in runs:
            run.wait(timeout=300)
    assert winner.returncode == 0, winner.stderr.read()
    _assert_one_clean_log(out, nodes=2, rounds=2)


def test_two_node_processes_of_one_node_give_one_refusal(toy_env, tmp_path) -> None:
    gate = tmp_path / "gate"
    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "toy"\nsharing = "none"\nbudget = 20\nrounds = 2\neval_workers = 1\n'
        f'[domain_options]\ngenerality_gate = "{gate}"\n'
        '[[node]]\nname = "a"\noperator = "toy-random"\n'
    )
    out = tmp_path / "run"
    args = [
        "dei",
        "node",
        "--config",
        str(config),
        "--name",
        "a",
        "--out",
        str(out),
        "--progress",
        "quiet",
    ]
    first = _start(args, toy_env)
    try:
        _wait_for(lambda: Path(f"{gate}.started").exists(), "the node's first generality job")
        for again in (args, ["dei", "node", "--resume", str(out), "--name", "a"]):
            result = subprocess.run(again, env=toy_env, capture_output=True, text=True, timeout=300)
            assert str(out / "processes" / "a") in _refusal(result, first.pid)
    finally:
        gate.touch()
        _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr


_HOLDER = """
import sys
from dei_framework.runtime.files.run_lock import lock_run_dir
lock_run_dir(sys.argv[1])
print("locked", flush=True)
sys.stdin.readline()
"""


def test_the_lock_is_the_kernels_and_names_its_holder(tmp_path) -> None:
    run_dir = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(run_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunDirInUse, match=rf"\(pid {holder.pid}\)"):
            lock_run_dir(run_dir)
        assert held(run_dir) is None
    finally:
        holder.kill()  # kill -9: the kernel releases the lock
        holder.wait()
    lock = lock_run_dir(run_dir)
    assert lock_run_dir(run_dir) is lock  # the same process gets its own lock back
    assert (run_dir / LOCK_FILE).read_text().strip() == str(os.getpid())
    lock.abandon()
    assert list(run_dir.iterdir()) == []  # the lock file goes; the directory was not ours
    assert held(run_dir) is None
    fresh = lock_run_dir(tmp_path / "fresh")
    fresh.abandon()
    assert not (tmp_path / "fresh").exists()  # made by the lock, and nothing else in it


def test_a_run_directory_that_cannot_be_made_is_one_error(tmp_path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(ConfigError, match="cannot create the run directory"):
        lock_run_dir(tmp_path / "file" / "run")
