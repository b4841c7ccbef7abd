"""Merging: the nodes' archives into one (the best elite per cell of the run's grid), and the
directories of node processes into one run (:mod:`dei_framework.runtime.merge`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dei_framework.contract.descriptors import DescriptorSpace, ThresholdAxis
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.records import Candidate
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.files.run_dir import RunDir
from dei_framework.runtime.merge import RunMerge, join_processes
from dei_framework.runtime.node.process import read_node_process
from dei_framework.search.archives import GridArchive

#: The run's grid: four cells along x (below 1, below 2, below 3, the rest).
SPACE = DescriptorSpace([ThresholdAxis("x", (1, 2, 3))])
NODES = ["node-0", "node-1"]


class Floor:
    """A domain as far as a raw merge goes: its fitness floor (the QD offset)."""

    deterministic = True

    def __init__(self, fitness_floor: float = 0.0) -> None:
        self.fitness_floor = fitness_floor


def elite(text: str, fitness: float, x: float, node: str, **descriptor: float) -> Candidate:
    return Candidate(
        id=f"{node}-{text}",
        text=text,
        fitness=fitness,
        descriptor={"x": x, **descriptor},
        node=node,
    )


def archive(*elites: Candidate, space: DescriptorSpace = SPACE) -> GridArchive:
    built = GridArchive(space=space)
    for item in elites:
        built.add(item)
    return built


# --- archives ------------------------------------------------------------------------------------


def test_the_merge_keeps_the_best_elite_per_cell() -> None:
    merge = RunMerge(Floor(), SPACE, NODES)
    merge.add_round(
        "node-0", 0, archive(elite("a", 1.0, 0.5, "node-0"), elite("b", 5.0, 1.5, "node-0"))
    )
    merge.add_round(
        "node-1",
        0,
        archive(
            elite("c", 3.0, 0.5, "node-1"),
            elite("d", 2.0, 1.5, "node-1"),
            elite("e", 0.5, 3.5, "node-1"),
        ),
    )

    stats = merge.merged().stats

    assert [(e["text"], e["cell"], e["node"]) for e in merge.merged_entries] == [
        ("c", [0], "node-1"),
        ("b", [1], "node-0"),
        ("e", [3], "node-1"),
    ]
    assert stats.num_elites == 3 and stats.coverage == 3 / 4
    assert stats.qd_score == 3.0 + 5.0 + 0.5 and stats.obj_max == 5.0
    assert merge.merged().common is None  # no common ground measured


def test_equal_elites_keep_the_first_node_whatever_order_rounds_end_in() -> None:
    merge = RunMerge(Floor(), SPACE, NODES)
    merge.add_round("node-1", 0, archive(elite("late", 2.0, 0.5, "node-1")))
    merge.add_round("node-0", 0, archive(elite("early", 2.0, 0.5, "node-0")))
    merge.merged()
    assert [e["text"] for e in merge.merged_entries] == ["early"]


def test_the_final_merge_takes_each_nodes_last_round() -> None:
    merge = RunMerge(Floor(), SPACE, NODES)
    merge.add_round("node-0", 0, archive(elite("old", 9.0, 0.5, "node-0")))
    merge.add_round("node-0", 1, archive(elite("new", 1.0, 2.5, "node-0")))
    merge.add_round("node-1", 0, archive(elite("only", 4.0, 1.5, "node-1")))

    merge.merged()

    assert [e["text"] for e in merge.merged_entries] == ["only", "new"]
    per_round = merge.per_round()
    assert [(r["round"], r["num_elites"], r["qd_score"]) for r in per_round] == [
        (0, 2, 13.0),
        (1, 1, 1.0),
    ]


def test_a_kept_archive_is_a_copy_in_the_runs_grid() -> None:
    merge = RunMerge(Floor(fitness_floor=-1.0), SPACE, NODES)
    # A node's archive over axes of its own: its elites are placed by their x in the run's grid.
    own = DescriptorSpace([ThresholdAxis("y", (5,))])
    merge.add_round("node-0", 0, archive(elite("a", 2.0, 2.5, "node-0", y=1.0), space=own))
    same = archive(elite("b", 1.0, 0.5, "node-1"))
    merge.add_round("node-1", 0, same)
    same.add(elite("later", 7.0, 0.5, "node-1"))  # the node's archive goes on changing

    stats = merge.merged().stats

    assert [(e["text"], e["cell"]) for e in merge.merged_entries] == [("b", [0]), ("a", [2])]
    assert stats.qd_score == (2.0 + 1.0) + (1.0 + 1.0)  # the floor's offset per elite


def test_a_merge_of_nothing_is_empty() -> None:
    merge = RunMerge(Floor(), SPACE, NODES)
    merged = merge.merged()
    assert (merged.stats.num_elites, merged.stats.coverage, merged.stats.qd_score) == (0, 0, 0)
    assert merged.stats.cells == SPACE.cells and merged.stats.obj_max is None
    assert merge.merged_entries == [] and merge.per_round() == []


# --- node processes ------------------------------------------------------------------------------

CONFIG = RunConfig(
    domain="toy",
    nodes=[NodeConfig(name=name, operator="toy-random") for name in NODES],
    budget=40,
    rounds=2,
)


def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def _process(
    run: Path,
    name: str,
    *,
    events: list[dict],
    rounds: list[GridArchive],
    usage: dict | None = None,
) -> Path:
    """A node process's directory as one that ended without finishing leaves it."""
    source = run / "processes" / name
    _write_jsonl(source / "events.jsonl", events)
    _write_jsonl(source / "calls.jsonl", [])
    for index, round_archive in enumerate(rounds):
        path = source / "nodes" / name / f"round-{index:03d}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps({"round": index, "archive": round_archive.to_json(), "champion": None})
        )
    if usage is not None:
        offsets = {log: (source / log).stat().st_size for log in ("events.jsonl", "calls.jsonl")}
        (source / "checkpoint.json").write_text(
            json.dumps({"nodes": {name: {"usage": usage}}, "offsets": offsets})
        )
    return source


def _decision(round_index: int, quotas: dict, **fields) -> dict:
    return {"event": "allocation", "round": round_index, "quotas": quotas, **fields}


def test_joining_processes_gathers_their_rounds_logs_and_one_decision_per_round(tmp_path) -> None:
    quotas = {"node-0": 20, "node-1": 20}
    _process(
        tmp_path,
        "node-0",
        usage={"calls": 3, "attempts": 4},
        rounds=[archive(elite("a", 1.0, 0.5, "node-0"))],
        events=[
            {"event": "evaluated", "node": "node-0"},
            _decision(1, quotas),
            {"event": "allocation_report", "node": "node-1", "round": 0},
        ],
    )
    _process(
        tmp_path,
        "node-1",
        rounds=[archive(elite("b", 2.0, 0.5, "node-1"))],
        events=[_decision(1, quotas), {"event": "evaluated", "node": "node-1"}],
    )
    merge = RunMerge(Floor(), SPACE, NODES)

    joined = join_processes(CONFIG, RunDir(tmp_path), merge, {"node-1": {"pid": 42}})

    assert [e["event"] for e in joined.events] == ["evaluated", "allocation", "evaluated"]
    assert joined.events[1]["agreed"] is True
    assert (tmp_path / "nodes" / "node-0" / "round-000.json").exists()
    assert {name: len(rounds) for name, rounds in merge.round_archives.items()} == {
        "node-0": 1,
        "node-1": 1,
    }
    # Neither finished: each entry comes from its last checkpoint (none: nothing counted).
    zero, one = joined.nodes["node-0"], joined.nodes["node-1"]
    assert (zero.calls, zero.attempts, zero.rounds_completed) == (3, 4, 1)
    assert zero.stopped.startswith("its process ended without finishing")
    assert (one.calls, one.pid) == (0, 42)
    # only the checkpoint's fields are written for such a node
    assert "sharing" not in one.to_json() and one.to_json()["pid"] == 42
    assert joined.budget_nodes["node-0"]["calls"] == 3
    assert joined.budget_nodes["node-0"]["quota"] == 20


def test_a_decision_a_process_kept_for_want_of_a_peer_is_not_agreed(tmp_path) -> None:
    full = _decision(1, {"node-0": 30, "node-1": 10})
    _process(tmp_path, "node-0", rounds=[], events=[full])
    _process(
        tmp_path,
        "node-1",
        rounds=[],
        events=[_decision(1, {"node-0": 20, "node-1": 20}, kept=True)],
    )

    joined = join_processes(CONFIG, RunDir(tmp_path), RunMerge(Floor(), SPACE, NODES))

    assert joined.events == [{**full, "agreed": False}]


def test_a_damaged_node_log_is_refused_unless_its_process_failed(tmp_path) -> None:
    _process(tmp_path, "node-0", rounds=[], events=[])
    damaged = _process(tmp_path, "node-1", rounds=[], events=[])
    (damaged / "events.jsonl").write_text("{}\nnot json\n")

    with pytest.raises(ConfigError, match=r"events.jsonl is damaged at byte 3"):
        join_processes(CONFIG, RunDir(tmp_path), RunMerge(Floor(), SPACE, NODES))
    joined = join_processes(
        CONFIG,
        RunDir(tmp_path),
        RunMerge(Floor(), SPACE, NODES),
        {"node-1": {"failed": "exit status 1"}},
    )

    stopped = joined.nodes["node-1"]
    assert stopped.extra["failed"] == "exit status 1" and stopped.calls == 0
    assert stopped.stopped.startswith("its process failed and its files cannot be read (")
    assert "node-0" in joined.nodes and joined.nodes["node-0"].stopped


def test_a_finished_process_whose_log_misses_evaluations_is_refused(tmp_path) -> None:
    source = _process(
        tmp_path, "node-0", rounds=[], usage={}, events=[{"event": "evaluated", "node": "node-0"}]
    )
    stats = {"num_elites": 0, "cells": 4, "coverage": 0.0, "qd_score": 0.0, "qd_offset": 0.0}
    node = {"operator": "o", "model": "o", "calls": 0, "attempts": 0, "quota": 1}
    node |= {"rounds_completed": 0, "champion": None, "stopped": None}
    (source / "summary.json").write_text(
        json.dumps(
            {
                **dict.fromkeys(("domain", "transport", "sharing", "lifecycle"), ""),
                **{"seed": 0, "rounds": 1, "space": {}, "generality": {}},
                **{"operator_divergence": {}, "compute_axis": "calls", "invalid": 0},
                "nodes": {"node-0": node},
                "merged": {**stats, "obj_max": None, "obj_mean": None, "per_round": []},
                "evaluated": 2,
                "budget": {"nodes": {"node-0": {"calls": 0}}, "calls": 0},
            }
        )
    )

    with pytest.raises(ConfigError) as refused:
        read_node_process(source, "node-0")

    assert str(refused.value) == (
        f"{source / 'events.jsonl'} holds 1 evaluations of node "
        f"node-0 but {source / 'summary.json'} counts 2: the node's "
        "log is incomplete; refusing to merge"
    )


def test_a_process_that_never_started_reads_as_empty(tmp_path) -> None:
    process = read_node_process(tmp_path / "processes" / "node-0", "node-0")
    assert (process.summary, process.checkpoint, process.rounds, process.events) == (
        None,
        None,
        [],
        [],
    )
