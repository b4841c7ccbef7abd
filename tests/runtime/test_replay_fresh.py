"""``--replay`` writes only into a directory that holds no run: it never overwrites or appends."""

from __future__ import annotations

import subprocess
from pathlib import Path

from dei_framework.runtime.files.run_layout import LOCK_FILE

TOY = [
    "--domain",
    "toy",
    "--operator",
    "toy-random",
    "--nodes",
    "2",
    "--budget",
    "24",
    "--rounds",
    "2",
    "--eval-workers",
    "0",
    "--progress",
    "quiet",
    "--no-report",
]


def _files(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` with its bytes (the lock file aside: it holds the pid of
    the last process that locked the directory, and is no result of the run)."""
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != LOCK_FILE
    }


def _refused(args: list[str], env: dict) -> str:
    result = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_replay_into_an_existing_run_is_refused_and_leaves_it_byte_identical(
    toy_env, cli, tmp_path
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    cli("dei-run", *TOY, "--seed", "1", "--out", str(first), env=toy_env)
    cli("dei-run", *TOY, "--seed", "2", "--out", str(second), env=toy_env)
    before = {path: _files(path) for path in (first, second)}
    fresh_refusal = _refused(["dei-run", *TOY, "--out", str(second)], toy_env)
    assert "already holds a run" in fresh_refusal
    # The same refusal as a fresh run's, onto another run and onto the recorded run itself.
    assert (
        _refused(["dei-run", "--replay", str(first), "--out", str(second)], toy_env)
        == fresh_refusal
    )
    assert "already holds a run" in _refused(
        ["dei-run", "--replay", str(first), "--out", str(first)], toy_env
    )
    assert {path: _files(path) for path in (first, second)} == before


def test_replaying_twice_without_out_goes_to_a_fresh_directory_each_time(
    toy_env, cli, tmp_path
) -> None:
    run = tmp_path / "a"
    cli("dei-run", *TOY, "--out", str(run), env=toy_env)
    replay = ["dei-run", "--replay", str(run), "--progress", "quiet", "--no-report"]
    cli(*replay, env=toy_env)
    recorded = _files(run)
    first = _files(run / "replay")
    assert "summary.json" in first
    cli(*replay, env=toy_env)
    again = _files(run / "replay-2")
    assert _files(run) == {**recorded, **{f"replay-2/{k}": v for k, v in again.items()}}
    assert _files(run / "replay") == first  # the first replay's log did not grow
    assert again["events.jsonl"].count(b"\n") == first["events.jsonl"].count(b"\n")
