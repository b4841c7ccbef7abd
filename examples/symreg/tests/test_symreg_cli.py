"""The example as a user meets it: installed, discovered by ``dei``, run by ``dei-run``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def console_script(name: str) -> str:
    """The installed console script (next to this interpreter first, then on PATH)."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed; run: pip install -e '.[test]'", pytrace=False)
    return found


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)


def test_dei_plugins_lists_the_entry_point_plugin():
    result = run(console_script("dei"), "plugins", "--json")
    assert result.returncode == 0, result.stderr
    listing = json.loads(result.stdout)
    domains = {row["name"]: row for row in listing["domains"]}
    operators = {row["name"]: row for row in listing["operators"]}
    assert domains["symreg"]["plugin"] == "dei-symreg:symreg"
    assert operators["symreg-gp"]["offline"] is True


def test_dei_symreg_score():
    result = run(console_script("dei"), "symreg", "score", "x0^2 * sin(x1) + 0.5*x0")
    assert result.returncode == 0, result.stderr
    scored = json.loads(result.stdout)
    assert scored["fitness"] == pytest.approx(1.0)
    assert scored["descriptor"]["size"] == 10
    bad = run(console_script("dei"), "symreg", "score", "x0 +")
    assert bad.returncode == 1 and "column 5" in bad.stderr


def test_dei_run_end_to_end(tmp_path):
    out = tmp_path / "run"
    result = run(
        console_script("dei-run"),
        "--domain",
        "symreg",
        "--transport",
        "inmemory",
        "--nodes",
        "2",
        "--budget",
        "60",
        "--rounds",
        "2",
        "--eval-workers",
        "2",
        "--progress",
        "quiet",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["domain"] == "symreg"
    space = summary["space"]
    assert (space["axes"], space["shape"], space["cells"]) == (["size", "nonlinearity"], [8, 6], 48)
    assert [axis["name"] for axis in space["grid"]] == space["axes"]
    assert summary["budget"]["calls"] == summary["budget"]["limit"] == 60
    assert set(summary["nodes"]) == {"node-0", "node-1"}
    for node in summary["nodes"].values():
        assert node["operator"] == "symreg-gp"
        assert node["calls"] == 30 and node["rounds_completed"] == 2 and node["stopped"] is None
        assert 0.0 < node["champion"]["fitness"] <= 1.0
        assert 0.0 <= node["generality"] <= 1.0
        assert node["sharing"]["published"] == 2
    merged = summary["merged"]
    assert 0.0 < merged["coverage"] <= 1.0 and merged["qd_score"] > 0
    assert len(merged["per_round"]) == 2
    assert summary["evaluated"] >= 60
    assert "done: 2 nodes, 60/60 calls" in result.stdout
