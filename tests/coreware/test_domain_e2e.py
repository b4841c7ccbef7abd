"""End to end: the Core War issue's offline ensemble, and reproducible runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dei_framework import NodeConfig, RunConfig, RunSummary, run

DEI_RUN = [sys.executable, "-c", "from dei_framework.app.cli import dei_run_main; dei_run_main()"]


def _one_node_run(out: Path) -> RunSummary:
    config = RunConfig(
        domain="coreware",
        nodes=[NodeConfig(name="solo", operator="gp")],
        budget=24,
        rounds=2,
        seed=5,
        eval_workers=0,
        domain_options={"rounds": 4, "generality_rounds": 2},
    )
    return run(config, out)


def test_the_same_one_node_run_twice_gives_the_same_results(tmp_path) -> None:
    first = _one_node_run(tmp_path / "a")
    second = _one_node_run(tmp_path / "b")
    assert first.merged == second.merged
    assert first.nodes["solo"].generality_per_round == second.nodes["solo"].generality_per_round

    def evaluated(path: Path) -> list:
        lines = (path / "events.jsonl").read_text().splitlines()
        events = [json.loads(line) for line in lines]
        return [
            (e["id"], e["status"], e["fitness"], e["cell"])
            for e in events
            if e.get("event") == "evaluated"
        ]

    assert evaluated(tmp_path / "a") == evaluated(tmp_path / "b")
    assert first.nodes["solo"].calls == 24


@pytest.mark.slow
def test_offline_ensemble_of_the_issue(tmp_path, corewar_dir) -> None:
    """4 nodes (gp, templates, gp, templates), 3 rounds, 240 calls, generality on 316 humans."""
    out = tmp_path / "run"
    command = [
        *DEI_RUN,
        "--domain",
        "coreware",
        "--transport",
        "inmemory",
        "--nodes",
        "4",
        "--operator",
        "gp",
        "--operator",
        "templates",
        "--rounds",
        "3",
        "--budget",
        "240",
        "--seed",
        "3",
        "--human-set",
        str(corewar_dir / "warriors" / "human"),
        "--out",
        str(out),
        "--progress",
        "quiet",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["space"]["cells"] == 36
    assert summary["merged"]["coverage"] > 0.30
    assert summary["merged"]["qd_score"] > 0
    assert set(summary["nodes"]) == {"node-0", "node-1", "node-2", "node-3"}
    for name, node in summary["nodes"].items():
        assert node["calls"] == 60, name
        assert node["rounds_completed"] == 3
        assert node["generality"] is not None and 0.0 <= node["generality"] <= 1.0
        assert all(g is not None for g in node["generality_per_round"])
        assert node["niche_novelty"] is not None
    assert [n["operator"] for n in summary["nodes"].values()] == ["gp", "templates"] * 2
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    crashed = [e for e in events if "worker process died" in (e.get("error") or "")]
    assert not crashed
