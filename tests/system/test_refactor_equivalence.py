"""Seeded runs give the figures and archives recorded in ``tests/data/golden_runs.json``.

The record holds a two-node ``dei-run`` (champions shared in virtual time, common ground), the
same nodes as ``dei node`` processes joined by ``dei merge``, and a Solo/Diverse ``dei
experiment``, reduced by ``scripts/golden_runs.py`` (summaries, merged and round archives,
reports, without timings and process ids). Moving code between modules must leave them as they
are; a change of behaviour made on purpose rewrites the record (the failure says how).
"""

from __future__ import annotations

import difflib
import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _golden_runs():
    spec = importlib.util.spec_from_file_location(
        "golden_runs", REPO / "scripts" / "golden_runs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lines(value: object) -> list[str]:
    return json.dumps(value, indent=1, sort_keys=True).splitlines()


def test_seeded_runs_and_experiment_match_the_record(tmp_path: Path) -> None:
    golden = _golden_runs()
    recorded = json.loads(golden.RECORD.read_text())
    fresh = golden.golden(tmp_path)
    assert fresh["run"]["summary"]["nodes"], "the run recorded no node: it would prove little"
    assert fresh["run"]["summary"]["merged"]["common"]["coverage"] > 0
    assert fresh["processes"]["summary"]["merged"] == fresh["processes"]["in_process_merged"]
    if fresh != recorded:
        diff = difflib.unified_diff(
            _lines(recorded), _lines(fresh), "recorded", "now", lineterm="", n=2
        )
        shown = "\n".join(list(diff)[:200])
        raise AssertionError(
            f"seeded runs differ from {golden.RECORD.relative_to(REPO)}:\n{shown}\n"
            f"If the change is intended, rewrite the record with `{golden.REGENERATE}` and "
            "review its diff."
        )


def test_the_reduction_drops_timings_and_masks_report_seconds() -> None:
    golden = _golden_runs()
    summary = {
        "pid": 1,
        "budget": {
            "wall_seconds": 2.0,
            "calls": 16,
            "nodes": {"a": {"call_seconds": 0.1, "calls": 8}},
        },
    }
    assert golden.canonical_json(summary) == {"budget": {"calls": 16, "nodes": {"a": {"calls": 8}}}}
    report = (
        "see /x/out/plots\n\n| node | calls | wall s |\n|---|---|---|\n| a | 8 | 0.2 |\n\n"
        "Wall time 1.5 s; ok"
    )
    assert golden.canonical_report(report, Path("/x/out")) == [
        "see <OUT>/plots",
        "",
        "| node | calls | wall s |",
        "|---|---|---|",
        "| a | 8 | ~ |",
        "",
        "Wall time ~ s; ok",
    ]
