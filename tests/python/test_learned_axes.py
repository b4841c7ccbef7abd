"""`dei-run` on OpenEvolve task folders whose features OpenEvolve would scale: values far
outside [0, 1] land on a grid learned from them (elites kept, many cells), and a run that keeps
no elite says why in one line (exit code 0: the run did what it was asked)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openevolve_task import EVALUATOR, write_task

from dei_framework.contract.descriptors import learned_bounds

RAW = EVALUATOR.replace("min(abs(x - 3.0), 10.0) / 10.0", "100.0 * abs(x - 3.0)").replace(
    "min(abs(x), 10.0) / 10.0", "50.0 + 7.0 * abs(x)"
)
NO_DISTANCE = EVALUATOR.replace('"distance": min(abs(x - 3.0), 10.0) / 10.0,', "")


def _run(cli, task: Path, out: Path, *extra: str):
    return cli(
        "dei-run", "--domain", "python", "--task", str(task), "--operator", "python-ast",
        "--nodes", "2", "--budget", "12", "--rounds", "2", "--out", str(out),
        "--progress", "quiet", *extra, timeout=600,
    )  # fmt: skip


@pytest.mark.timeout(600)
def test_features_far_outside_zero_one_get_learned_bounds_and_keep_elites(cli, tmp_path) -> None:
    assert RAW != EVALUATOR
    out = tmp_path / "run"
    result = _run(cli, write_task(tmp_path / "raw", evaluator=RAW), out, "--no-report")
    assert "no elite kept" not in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    values = [e["descriptor"] for e in events if e["event"] == "evaluated" and e["descriptor"]]
    grid = summary["space"]["grid"]
    assert [axis["kind"] for axis in grid] == ["learned", "learned"]
    for axis in grid:  # the union of every value seen, by either node
        seen = [v[axis["name"]] for v in values]
        assert axis["seen"] == [min(seen), max(seen)] and min(seen) > 1
        assert [axis["low"], axis["high"]] == list(learned_bounds(min(seen), max(seen)))
    elites = json.loads((out / "merged_archive.json").read_text())
    assert summary["merged"]["num_elites"] == len(elites) > 2  # not all in one clamped end bin
    assert len({tuple(e["cell"]) for e in elites}) == len(elites)
    assert "no_elite" not in summary


@pytest.mark.timeout(600)
def test_fixed_bounds_from_the_axes_option_stay_fixed(cli, tmp_path) -> None:
    out = tmp_path / "run"
    task = write_task(tmp_path / "raw", evaluator=RAW)
    _run(
        cli, task, out, "--no-report", "--domain-option", "axes=distance:0:1000:4,magnitude:0:100:2"
    )
    grid = json.loads((out / "summary.json").read_text())["space"]["grid"]
    assert grid == [
        {"kind": "uniform", "name": "distance", "low": 0.0, "high": 1000.0, "count": 4},
        {"kind": "uniform", "name": "magnitude", "low": 0.0, "high": 100.0, "count": 2},
    ]


@pytest.mark.timeout(600)
def test_a_run_keeping_no_elite_names_the_commonest_reason(cli, tmp_path) -> None:
    out = tmp_path / "run"
    result = _run(cli, write_task(tmp_path / "nodist", evaluator=NO_DISTANCE), out)
    assert result.returncode == 0
    summary = json.loads((out / "summary.json").read_text())
    invalid = summary["invalid"]
    assert invalid == summary["evaluated"] > 0
    line = (
        f"no elite kept: all {invalid} candidates were invalid; commonest reason "
        f"({invalid} of {invalid}): the evaluator returned no feature 'distance' (it returned "
        "combined_score, magnitude; DEI computes only complexity, diversity, score)"
    )
    lines = result.stdout.splitlines()
    assert lines[0].startswith("done: ") and "merged coverage 0.0%" in lines[0]
    assert lines[1] == line  # right under the figures it explains
    assert summary["no_elite"] == line
    assert line in (out / "report.md").read_text()
