"""The issue's acceptance run: a Core War experiment with two operators through the real CLI."""

from __future__ import annotations

import json

import pytest
from dei_coreware.generality import BUNDLED_GENERALITY


@pytest.mark.slow  # 4 conditions x 2 repeats of Core War runs, through the CLI
def test_two_operator_experiment_has_common_ground_and_comparisons(cli, tmp_path) -> None:
    out = tmp_path / "exp"
    cli(
        "dei",
        "experiment",
        "--domain",
        "coreware",
        "--operator",
        "bombers",
        "--operator",
        "scanners",
        "--conditions",
        "solo,homo,diverse",
        "--repeats",
        "2",
        "--nodes",
        "2",
        "--budget",
        "16",
        "--rounds",
        "2",
        "--seed",
        "3",
        "--domain-option",
        "rounds=2",
        "--domain-option",
        "cycles=2000",
        "--domain-option",
        "generality_rounds=2",
        "--eval-workers",
        "1",
        "--progress",
        "quiet",
        "--out",
        str(out),
    )
    summary = json.loads((out / "summary.json").read_text())
    conditions = summary["conditions"]
    assert list(conditions) == ["solo", "homo:bombers", "homo:scanners", "diverse"]
    for condition in conditions.values():
        common = condition["merged"]["common"]
        assert common["coverage"]["n"] == 2 and common["qd_score"]["n"] == 2
        assert common["reference"]["count"] == 4  # the four default initial opponents
        assert common["fitness_scale"] == 5.0
        assert len(condition["runs"]) == 2
        for run in condition["runs"]:
            assert (out / run["dir"] / "merged_archive.json").exists()
    assert len(summary["comparisons"]) == 3 * 4
    for entry in summary["comparisons"]:
        # n = 2 against 2: the rank interval cannot reach 95 % and says so; Holm within metric.
        assert entry["ci_level"] == pytest.approx(2 / 3) and entry["ci95"] is None
        assert 0.0 <= entry["a12"] <= 1.0 and entry["p_holm"] >= entry["p_value"]
    assert summary["generality_reference"]["count"] == len(list(BUNDLED_GENERALITY.glob("*.red")))
    # Core War evaluation depends on the seed: the same text must still score the same in
    # every condition and repeat, because common ground has seeds of its own (one to choose
    # the elite per cell, K = 5 to score it).
    seen: dict[str, set[float]] = {}
    found_in: dict[str, set[str]] = {}
    for name, condition in conditions.items():
        for run in condition["runs"]:
            for elite in json.loads((out / run["dir"] / "merged_archive.json").read_text()):
                assert elite["common_fitness_n"] == 5
                seen.setdefault(elite["text"], set()).add(elite["common_fitness"])
                found_in.setdefault(elite["text"], set()).add(name)
    shared = [text for text, names in found_in.items() if len(names) >= 2]
    assert shared
    assert all(len(seen[text]) == 1 for text in shared)
    report = (out / "report.md").read_text()
    assert "## Comparisons" in report and "coverage (common)" in report
