"""examples/custom_loop.py, the library-use example: a full ask/tell search, public API only."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "custom_loop.py"


def run_example(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def rounds_of(result: subprocess.CompletedProcess) -> list[dict]:
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_the_example_is_short_and_uses_no_private_name():
    source = SCRIPT.read_text()
    assert len(source.splitlines()) <= 45  # the whole loop on one screen, as ruff formats it
    names = {node.attr for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Attribute)}
    assert not [name for name in names if name.startswith("_")]
    assert "from dei_framework import" in source and "dei_framework." not in source


def test_custom_loop_runs_a_red_queen_search():
    rounds = rounds_of(run_example("--rounds", "2", "--iterations", "60", "--seed", "3"))
    assert [r["round"] for r in rounds] == [0, 1]
    first, second = rounds
    # Round 0 fights the symreg domain's 3 initial opponents; round 1 also its own champion.
    assert [o["source"] for o in first["opponents"]] == ["initial"] * 3
    own = [o for o in second["opponents"] if o["source"] == "own"]
    assert own == [] or own == [{"source": "own", "round": 0, "node": "custom"}]
    for entry in rounds:
        stats = entry["stats"]
        assert stats["num_elites"] >= 3 and stats["qd_score"] > 0
        assert stats["coverage"] == stats["num_elites"] / 48
        assert entry["champion"]["fitness"] == stats["obj_max"]
        # More elites than warm-start programs: the operator's programs entered the archive.
        assert stats["num_elites"] > len(entry["opponents"])


def test_custom_loop_is_reproducible_and_seeded():
    args = ("--rounds", "1", "--iterations", "40", "--seed", "5")
    first, second = run_example(*args), run_example(*args)
    assert rounds_of(first) == rounds_of(second)
    other = rounds_of(run_example("--rounds", "1", "--iterations", "40", "--seed", "6"))
    assert other != rounds_of(first)


def test_custom_loop_reports_an_unknown_plugin_in_one_line():
    bad = run_example("no-such-domain")
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: unknown domain 'no-such-domain'")
    assert "Traceback" not in bad.stderr
