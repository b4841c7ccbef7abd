"""``--allocation bandit`` with one process per node over real AXL nodes.

Each node process publishes a round report with its champions; every process decides each
round's quotas from the same reports, so the processes agree on every decision, and the run
spends its budget exactly, as an in-process bandit run does (docs/adaptive.md).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from midway import events
from test_axl_processes import axl_env, finish, launch, processes, rounds_done, wait_for

pytestmark = pytest.mark.axl
__all__ = ["axl_env"]  # the fixture, shared with test_axl_processes

NAMES = ("a", "b", "c")
ROUNDS = 4
BUDGET = 180


def _config(path: Path, *, delay: float = 0.05) -> Path:
    """A toy bandit run: a and b fill cells, c (toy-stuck) never fills a new one."""
    operators = {"a": "toy-random", "b": "toy-random", "c": "toy-stuck"}
    nodes = "".join(f'[[node]]\nname = "{n}"\noperator = "{operators[n]}"\n' for n in NAMES)
    path.write_text(
        f'domain = "toy"\ntransport = "axl"\nbudget = {BUDGET}\nrounds = {ROUNDS}\nseed = 5\n'
        f'eval_workers = 0\ncheckpoint_seconds = 0.5\nallocation = "bandit"\n{nodes}'
        f"[operator_options]\ndelay = {delay}\n[transport_options]\nheartbeat = 0.2\n"
    )
    return path


def _decisions(directory: Path) -> dict[int, dict]:
    return {e["round"]: e for e in events(directory) if e.get("event") == "allocation"}


def test_bandit_over_axl_processes_agrees_everywhere_and_spends_the_budget(
    axl_env, tmp_path
) -> None:
    out = tmp_path / "run"
    code, stdout, stderr = finish(launch(_config(tmp_path / "run.toml"), out, axl_env))
    assert code == 0, stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["budget"]["calls"] == BUDGET  # the run's total, exactly
    per_process = {name: _decisions(out / "processes" / name) for name in NAMES}
    # Every process made every decision (none kept its last quota for want of a report) ...
    for name, decisions in per_process.items():
        assert sorted(decisions) == list(range(1, ROUNDS)), name
        assert not any(d.get("kept") for d in decisions.values()), decisions
    # ... and the same one: the same quotas from the same credits, in every process.
    for round_index in range(1, ROUNDS):
        made = [per_process[name][round_index] for name in NAMES]
        assert all(d["quotas"] == made[0]["quotas"] for d in made), made
        assert all(d["credits"] == made[0]["credits"] for d in made), made
        assert sum(made[0]["quotas"].values()) == made[0]["budget"]
    # Each node made the calls its process was given, round by round.
    for name in NAMES:
        rounds = {
            e["round"]: e["calls"]
            for e in events(out / "processes" / name)
            if e.get("event") == "round"
        }
        for round_index in range(1, ROUNDS):
            assert rounds[round_index] == per_process[name][round_index]["quotas"][name]
    # The node that never fills a new cell is held at its floor while the others rise.
    decisions = [per_process["a"][r] for r in range(1, ROUNDS)]
    assert any(d["quotas"]["c"] == d["floor_calls"] < d["quotas"]["a"] for d in decisions), [
        d["quotas"] for d in decisions
    ]
    # The merged run's log has each decision once, with what the processes agreed on.
    merged = [e for e in events(out) if e.get("event") == "allocation"]
    assert sorted(e["round"] for e in merged) == list(range(1, ROUNDS))
    # The watch page shows them, from the merged run as from the processes' logs.
    from dei_framework.app.watch.run import WatchedRun

    shown = WatchedRun(out).state(seconds=None)["allocation"]
    assert [(d["round"], d["quotas"]) for d in shown] == [
        (r, per_process["a"][r]["quotas"]) for r in range(1, ROUNDS)
    ]


def test_a_bandit_node_process_killed_with_sigkill_is_resumed_and_the_run_spends_the_budget(
    axl_env, tmp_path
) -> None:
    config = _config(tmp_path / "run.toml", delay=0.3)
    out = tmp_path / "run"
    launcher = launch(config, out, axl_env)
    wait_for(lambda: rounds_done(out, "b") >= 1, what="node b's first round")
    victim = processes(out)["b"]["pid"]
    os.kill(victim, signal.SIGKILL)
    code, _, stderr = finish(launcher)
    assert code == 0, stderr[-3000:]
    assert f"b (pid {victim}) was killed by signal 9; resuming it" in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["budget"]["calls"] == BUDGET
    per_process = {name: _decisions(out / "processes" / name) for name in NAMES}
    for round_index in range(1, ROUNDS):
        made = [
            per_process[name][round_index] for name in NAMES if round_index in per_process[name]
        ]
        # b's log keeps the decisions made before its checkpoint; the others, all of them
        assert len(made) >= 2 and not any(d.get("kept") for d in made), made
        assert all(d["quotas"] == made[0]["quotas"] for d in made), made
