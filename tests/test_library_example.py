"""examples/custom_loop.py, the library-use example, runs and finds what it reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "custom_loop.py"


def run_example(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip


def test_custom_loop_reports_a_growing_archive():
    result = run_example("--json", "--rounds", "2", "--iterations", "60", "--seed", "3")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["domain"], report["operator"]) == ("symreg", "symreg-gp")
    assert report["space"] == {"axes": ["size", "nonlinearity"], "shape": [8, 6]}
    assert [r["round"] for r in report["rounds"]] == [0, 1]
    # Every program offered is counted once: 60 calls per round plus the warm starts (the 3
    # initial opponents each round, and in round 1 round 0's champion unless it is one of them).
    assert 2 * 60 + 3 + 3 <= sum(report["counts"].values()) <= 2 * 60 + 3 + 4
    final = report["final"]
    assert final["num_elites"] >= 3 and final["qd_score"] > 0
    assert final["coverage"] == final["num_elites"] / 48
    champion = report["champion"]
    assert champion["fitness"] == final["obj_max"] and 0 < champion["fitness"] <= 1
    assert 0 <= report["generality"] <= 1
    # Round 1 starts from round 0's champion, so it can only do as well or better.
    assert report["rounds"][1]["best"] >= report["rounds"][0]["best"]


def test_custom_loop_is_reproducible():
    args = ("--json", "--rounds", "1", "--iterations", "40", "--seed", "5")
    first, second = run_example(*args), run_example(*args)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == json.loads(second.stdout)


def test_custom_loop_human_output_and_errors():
    result = run_example("--rounds", "1", "--iterations", "20")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("round 0: coverage ")
    assert "champion: " in result.stdout
    bad = run_example("--domain", "no-such-domain")
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: unknown domain 'no-such-domain'")
