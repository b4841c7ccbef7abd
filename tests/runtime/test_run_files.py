"""How a run's files are written: log lines and archive files through orjson, the same values
as the standard library reads back, numbers that are not finite as null, records it refuses
through the standard library, and archive files with one elite per line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dei_framework.runtime.files.run_dir import dumps, write_json_atomic


def test_a_log_line_reads_back_as_the_record_it_was() -> None:
    record = {
        "event": "evaluated",
        "id": "nœud-r0-s1",
        "fitness": 1e-05,
        "big": 1e16,
        "cell": (3, 4),
        "parent": None,
        "ok": True,
        "descriptor": {"a": -0.0},
    }
    line = dumps(record)
    assert "\n" not in line and " " not in line
    assert json.loads(line) == {**record, "cell": [3, 4]}


def test_numbers_that_are_not_finite_are_null_and_numpy_values_are_numbers() -> None:
    line = dumps(
        {
            "nan": math.nan,
            "inf": -math.inf,
            "np": np.float64(2.5),
            "i": np.int64(7),
            "row": np.array([1.0, 2.0]),
        }
    )
    assert json.loads(line) == {"nan": None, "inf": None, "np": 2.5, "i": 7, "row": [1.0, 2.0]}


def test_records_orjson_refuses_go_through_the_standard_library() -> None:
    record = {1: "integer key", "huge": 2**70, "nan": math.nan}
    assert json.loads(dumps(record)) == {"1": "integer key", "huge": 2**70, "nan": None}


def test_a_value_nothing_can_write_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not JSON serialisable: object"):
        dumps({"x": object()})


@pytest.mark.parametrize("layout", ["indent", "compact", "records"])
def test_every_layout_reads_back_the_same(tmp_path, layout) -> None:
    data = {
        "type": "grid",
        "space": [{"name": "a", "count": 3}],
        "qd_offset": 0.0,
        "elites": [
            {"text": "x y", "fitness": 1.5, "cell": [0, 1]},
            {"text": "z", "fitness": -2.0, "cell": [2, 2]},
        ],
        "empty": [],
        "n": {},
    }
    path = tmp_path / "archive.json"
    write_json_atomic(path, data, layout=layout)
    assert json.loads(path.read_text()) == data
    lines = path.read_text().splitlines()
    if layout == "records":  # each elite on its own line, indented under its key
        assert '  {"text":"x y","fitness":1.5,"cell":[0,1]},' in lines
        assert '  {"text":"z","fitness":-2.0,"cell":[2,2]}' in lines
    if layout == "compact":
        assert len(lines) == 1
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed


def test_opponent_set_directories_of_dead_processes_are_removed(tmp_path) -> None:
    import os
    import subprocess
    import sys

    from dei_framework.evaluation.local import SETS_PREFIX, remove_orphaned_set_dirs

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = tmp_path / f"{SETS_PREFIX}{gone.stdout.strip()}-abc"
    live = tmp_path / f"{SETS_PREFIX}{os.getpid()}-def"
    unnamed = tmp_path / f"{SETS_PREFIX}xyz"  # an older name without a process id
    for directory in (dead, live, unnamed):
        directory.mkdir()
        (directory / "set.pickle").write_bytes(b"x")
    assert remove_orphaned_set_dirs(str(tmp_path)) == [str(dead)]
    assert not dead.exists() and live.exists() and unnamed.exists()


def test_one_rule_says_what_a_run_and_an_experiment_directory_are(tmp_path) -> None:
    from dei_framework.app.watch.layout import is_experiment
    from dei_framework.report.export import find_runs
    from dei_framework.runtime.files.run_dir import holds_experiment, holds_run

    started, logged, rounds, plain = (tmp_path / name for name in ("a", "b", "c", "d"))
    for folder in (started, logged, rounds / "nodes" / "n0", plain):
        folder.mkdir(parents=True)
    (started / "config.json").write_text("{}")
    (logged / "events.jsonl").write_text("")
    (rounds / "nodes" / "n0" / "round-000.json").write_text("{}")
    assert [holds_run(p) for p in (started, logged, rounds, plain)] == [True, True, True, False]
    assert find_runs(logged) == [logged]  # dei export goes by the same rule
    planned, summarised = tmp_path / "e1", tmp_path / "e2"
    planned.mkdir()
    summarised.mkdir()
    (planned / "experiment.json").write_text("{}")
    (summarised / "summary.json").write_text('{"kind": "experiment"}')
    assert holds_experiment(planned) and holds_experiment(summarised)
    assert is_experiment(summarised) and not holds_experiment(started)  # dei watch too
