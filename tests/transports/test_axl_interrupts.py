"""Ctrl-C of a launched AXL run at seeded-random moments, each resumed to the finished run.

What resume guarantees for a run with one process per node over AXL (docs/reliability.md):
the same ledger (every node pays exactly its quota, each call logged once), every round of
every node completed and written, and every call's candidate evaluated exactly once, as in a
run never interrupted. The archives themselves, and the evaluations that depend on them (the
warm start's re-evaluation of elites, received champions), are not compared: which champions
a node has received when a round starts depends on when they arrive over the network,
interrupted or not.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
from pathlib import Path

import pytest
from midway import events
from test_axl_processes import (
    NAMES,
    alive,
    assert_exact_ledger,
    axl_env,
    finish,
    launch,
    processes,
    wait_for,
    write_config,
)

pytestmark = [pytest.mark.axl, pytest.mark.slow]
__all__ = ["axl_env"]  # the fixture, shared with test_axl_processes

ROUNDS = 3
#: Interrupts, each in a run of its own, at a seeded-random count of evaluations.
INTERRUPTS = 8


def _evaluated(out: Path) -> int:
    return sum(
        1
        for name in NAMES
        for e in events(out / "processes" / name)
        if e.get("event") == "evaluated"
    )


def _shape(out: Path) -> dict:
    """What an interrupted and resumed run must share with the uninterrupted one."""
    summary = json.loads((out / "summary.json").read_text())
    return {
        "calls": summary["budget"]["calls"],
        # Candidates born of a call (the warm start and peers' champions vary with timing).
        "call_candidates": {
            name: sum(
                1
                for e in events(out / "processes" / name)
                if e.get("event") == "evaluated" and e.get("kind") in ("mutate", "new")
            )
            for name in summary["nodes"]
        },
        "nodes": {
            name: (node["calls"], node["rounds_completed"], bool(node.get("stopped")))
            for name, node in summary["nodes"].items()
        },
        "round_files": {
            name: sorted(p.name for p in (out / "nodes" / name).glob("round-*.json"))
            for name in summary["nodes"]
        },
    }


def test_eight_random_ctrl_c_each_resume_to_the_uninterrupted_run(axl_env, tmp_path) -> None:
    config = write_config(tmp_path / "run.toml", delay=0.3, rounds=ROUNDS)
    whole = tmp_path / "whole"
    code, _, stderr = finish(launch(config, whole, axl_env))
    assert code == 0, stderr[-3000:]
    expected = _shape(whole)
    total = sum(expected["call_candidates"].values())
    assert total == expected["calls"] and expected["round_files"] == {
        name: [f"round-{r:03d}.json" for r in range(ROUNDS)] for name in NAMES
    }
    assert_exact_ledger(whole, json.loads((whole / "summary.json").read_text()), rounds=ROUNDS)
    # Resuming a finished run starts no node and reports none of its old rounds again.
    again = subprocess.run(
        ["dei-run", "--resume", str(whole), "--no-report"],
        env=axl_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr.count("already finished") == len(NAMES), again.stderr[-3000:]
    assert "(pid None)" not in again.stderr and " done, coverage" not in again.stderr
    assert _shape(whole) == expected

    points = sorted(random.Random(36).sample(range(1, total), INTERRUPTS))
    for index, point in enumerate(points):
        out = tmp_path / f"interrupted-{index}"
        launcher = launch(config, out, axl_env)
        wait_for(
            lambda: _evaluated(out) >= point or launcher.poll() is not None,  # noqa: B023
            timeout=300,
            what=f"{point} evaluations",
        )
        children = processes(out)
        launcher.send_signal(signal.SIGINT)
        code, _, stderr = finish(launcher, timeout=120)
        # A run that finished before the signal reached it exits 0; none here should.
        assert code == 130, (point, stderr[-3000:])
        assert "Traceback" not in stderr and "(pid None)" not in stderr, stderr[-3000:]
        pids = [
            pid
            for entry in children.values()
            for pid in (entry.get("pid"), entry.get("axl_pid"))
            if pid
        ]
        assert not [pid for pid in pids if alive(pid)], (point, pids)
        resumed = subprocess.run(
            ["dei-run", "--resume", str(out), "--no-report"],
            env=axl_env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert resumed.returncode == 0, (point, resumed.stderr[-3000:])
        assert "Traceback" not in resumed.stderr and "(pid None)" not in resumed.stderr
        assert _shape(out) == expected, point
        assert_exact_ledger(out, json.loads((out / "summary.json").read_text()), rounds=ROUNDS)
