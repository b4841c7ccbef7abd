"""kill -9 in the middle of a python-domain run (evaluations in sandboxed workers), then
`--resume`: the run ends where an uninterrupted run of the same seed ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from midway import stop_midway


def _args(out: Path) -> list[str]:
    return [
        "--domain",
        "python",
        "--operator",
        "python-ast",
        "--nodes",
        "2",
        "--budget",
        "64",
        "--rounds",
        "4",
        "--seed",
        "21",
        "--eval-workers",
        "1",
        "--out",
        str(out),
        "--progress",
        "quiet",
        "--no-report",
    ]


@pytest.mark.timeout(900)
def test_kill_9_then_resume_ends_as_the_uninterrupted_run(cli, tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    cli("dei-run", *_args(whole), timeout=600)
    killed = tmp_path / "killed"
    stopped = stop_midway(_args(killed), killed, env=None, min_events=24)
    assert stopped.returncode == -9
    cli("dei-run", "--resume", str(killed), "--progress", "quiet", "--no-report", timeout=600)

    def archive(out: Path) -> list[dict]:
        return json.loads((out / "merged_archive.json").read_text())

    assert archive(killed) == archive(whole)
    summaries = [json.loads((out / "summary.json").read_text()) for out in (whole, killed)]
    assert summaries[0]["budget"]["calls"] == summaries[1]["budget"]["calls"] == 64
    assert summaries[0]["merged"] == summaries[1]["merged"]
