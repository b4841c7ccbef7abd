"""The watch model: what it builds from events matches what the run itself reports.

Real toy runs (4 nodes, champions shared in memory) are read whole, in torn pieces, split over
per-node directories as one-process-per-node runs write them, and as an experiment.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from dei_framework.app.watch.layout import find_runs
from dei_framework.app.watch.run import WatchedRun
from dei_framework.app.watch.server import Watch
from dei_framework.app.watch.state import CURVE_POINTS, Curve, RunState, error_cause


def events_of(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def comparable(state: dict) -> dict:
    """The state without what depends on when it was read."""
    run = {
        k: v
        for k, v in state["run"].items()
        if k not in ("updated_s_ago", "elapsed_s", "status", "sources", "path")
    }
    return {**{k: v for k, v in state.items() if k not in ("version", "run")}, "run": run}


def assert_matches_summary(state: dict, run_dir: Path) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    assert state["run"]["status"] == "finished"
    assert [n["name"] for n in state["nodes"]] == list(summary["nodes"])
    assert state["merged"]["coverage"] == pytest.approx(summary["merged"]["coverage"])
    assert state["merged"]["qd_score"] == pytest.approx(summary["merged"]["qd_score"])
    assert state["merged"]["num_elites"] == summary["merged"]["num_elites"]
    assert state["run"]["calls"] == summary["budget"]["calls"]
    for node in state["nodes"]:
        final = summary["nodes"][node["name"]]
        assert node["calls"] == final["calls"] and node["quota"] == final["quota"]
        assert node["rounds_done"] == final["rounds_completed"] == summary["rounds"]
        assert node["coverage"] == pytest.approx(final["coverage_per_round"][-1])
        assert node["qd_score"] == pytest.approx(final["qd_score_per_round"][-1])
        assert [r["coverage"] for r in node["round_stats"]] == final["coverage_per_round"]
        assert node["best"]["fitness"] == pytest.approx(final["champion"]["fitness"])
        assert node["usage"]["attempts"] == final["attempts"]


def test_finished_four_node_run_matches_its_summary(finished_run) -> None:
    state = WatchedRun(finished_run).state(seconds=None)
    assert len(state["nodes"]) == 4
    assert_matches_summary(state, finished_run)
    summary = json.loads((finished_run / "summary.json").read_text())
    assert state["space"]["shape"] == summary["space"]["shape"]
    assert not state["space"]["inferred"] and state["space"]["labels"]
    # One champion per node and round, the final ones as in the summary.
    assert len(state["champions"]) == 4 * 4
    finals = {c["node"]: c["id"] for c in state["champions"] if c["round"] == 3}
    assert finals == {name: node["champion"]["id"] for name, node in summary["nodes"].items()}
    # Every received champion was matched to its re-evaluation, and the share of niches new
    # to the receiver is the niche novelty the run itself computed.
    transfers = state["transfers"]
    assert transfers and all(t["status"] in ("filled", "taken", "invalid") for t in transfers)
    for name, node in summary["nodes"].items():
        for round_index, novelty in enumerate(node["niche_novelty_per_round"]):
            valid = [
                t
                for t in transfers
                if t["to"] == name and t["round"] == round_index and t["status"] != "invalid"
            ]
            if novelty is None:
                assert not valid
            else:
                assert sum(t["novel"] for t in valid) / len(valid) == pytest.approx(novelty)
    assert sum(e["sent"] for e in state["edges"]) == len(transfers)
    assert {(e["from"], e["to"]) for e in state["edges"]} <= {
        (a, b) for a in summary["nodes"] for b in summary["nodes"] if a != b
    }
    # Invalid candidates are grouped by cause (the toy operator writes junk now and then).
    invalid = sum(n["invalid"] for n in state["nodes"])
    assert invalid == sum(
        1
        for e in events_of(finished_run)
        if e.get("status") == "invalid" and e["kind"] in ("new", "mutate")
    )
    causes = [e for n in state["nodes"] for e in n["errors"]]
    assert causes and all(c["cause"].startswith("line N: expected N-N integers") for c in causes)
    # Curves end where the archives are.
    for node in state["nodes"]:
        calls, coverage, qd = node["curve"][-1]
        assert (calls, coverage, qd) == (
            node["calls"],
            pytest.approx(node["coverage"]),
            pytest.approx(node["qd_score"]),
        )


def test_every_archive_elite_has_its_program_text(finished_run) -> None:
    watched = WatchedRun(finished_run)
    state = watched.state(seconds=None)
    final_texts = {
        elite["id"]: elite["text"]
        for path in finished_run.glob("nodes/*/round-003.json")
        for elite in json.loads(path.read_text())["archive"]["elites"]
    }
    cells = [c for node in state["nodes"] for c in node["cells"]]
    assert len(cells) == len(final_texts)
    for cell in cells:
        found = watched.elite(cell["id"])
        assert found["text"] == final_texts[cell["id"]]
        assert found["fitness"] == cell["fitness"] and found["text_source"] == "archive"
    # An elite of an earlier round (not a champion either): its reply is found in calls.jsonl.
    champions = {
        e["champion"]["id"]
        for e in map(json.loads, (finished_run / "events.jsonl").read_text().splitlines())
        if e["event"] == "round" and e["champion"]
    }
    call = next(
        c
        for c in map(json.loads, (finished_run / "calls.jsonl").read_text().splitlines())
        if c["id"] not in final_texts and c["id"] not in champions
    )
    assert watched.elite(call["id"])["text"] == call["reply"]["text"]
    assert watched.elite("no-such-elite")["text"] is None


def test_reading_torn_pieces_as_they_are_written_gives_the_same_state(finished_run, tmp_path):
    live = tmp_path / "live"
    live.mkdir()
    for name in ("config.json",):
        shutil.copy(finished_run / name, live / name)
    data = (finished_run / "events.jsonl").read_bytes()
    watched = WatchedRun(live)
    rng = random.Random(1)
    calls_seen, position = [], 0
    with open(live / "events.jsonl", "wb") as handle:
        while position < len(data):
            step = rng.randint(1, 4000)  # cuts lines anywhere
            handle.write(data[position : position + step])
            handle.flush()
            position += step
            state = watched.state(seconds=None)
            calls_seen.append(state["run"]["calls"])
    assert calls_seen == sorted(calls_seen) and calls_seen[-1] == 160
    for name in ("checkpoint.json", "summary.json"):
        shutil.copy(finished_run / name, live / name)
    shutil.copytree(finished_run / "nodes", live / "nodes")
    once = WatchedRun(live).state(seconds=None)
    assert comparable(watched.state(seconds=None)) == comparable(once)
    assert_matches_summary(once, finished_run)


def test_a_resumed_run_that_cut_its_log_back_is_read_again(finished_run, tmp_path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    (run_dir / "summary.json").unlink()
    watched = WatchedRun(run_dir)
    assert watched.state(seconds=None)["run"]["calls"] == 160
    lines = (run_dir / "events.jsonl").read_bytes().splitlines(keepends=True)
    (run_dir / "events.jsonl").write_bytes(b"".join(lines[: len(lines) // 2]))
    expected = sum(
        1 for line in lines[: len(lines) // 2] if json.loads(line).get("kind") in ("new", "mutate")
    )
    assert watched.state(seconds=None)["run"]["calls"] == expected < 160


def per_node_processes(run_dir: Path, out: Path) -> None:
    """The layout of a run whose nodes ran as separate processes: one directory per node with
    its own config (naming only that node), events, checkpoint and round files."""
    config = json.loads((run_dir / "config.json").read_text())
    events = events_of(run_dir)
    for node in config["nodes"]:
        name = node["name"]
        node_dir = out / "processes" / name
        (node_dir / "nodes").mkdir(parents=True)
        (node_dir / "config.json").write_text(json.dumps({**config, "nodes": [node]}))
        (node_dir / "events.jsonl").write_text(
            "".join(json.dumps(e) + "\n" for e in events if e.get("node") == name)
        )
        shutil.copytree(run_dir / "nodes" / name, node_dir / "nodes" / name)


def test_one_process_per_node_directories_are_one_run(finished_run, tmp_path) -> None:
    out = tmp_path / "axl-run"
    per_node_processes(finished_run, out)
    state = WatchedRun(out).state(seconds=None)
    assert sorted(n["name"] for n in state["nodes"]) == [f"node-{i}" for i in range(4)]
    assert state["run"]["sources"] == 4
    assert state["run"]["calls"] == 160
    assert all(n["quota"] is None or n["quota"] == 40 for n in state["nodes"])
    summary = json.loads((finished_run / "summary.json").read_text())
    assert state["merged"]["qd_score"] == pytest.approx(summary["merged"]["qd_score"])
    assert len(state["transfers"]) == sum(
        1 for e in events_of(finished_run) if e["event"] == "received"
    )
    # The launcher then merges everything into the top directory: nothing counts twice.
    shutil.copy(finished_run / "events.jsonl", out / "events.jsonl")
    shutil.copy(finished_run / "summary.json", out / "summary.json")
    shutil.copy(finished_run / "config.json", out / "config.json")
    merged = WatchedRun(out).state(seconds=None)
    assert merged["run"]["sources"] == 5
    assert_matches_summary(merged, finished_run)
    assert len(merged["transfers"]) == len(state["transfers"])


def test_a_second_event_file_appearing_later_counts_each_event_once(finished_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    watched = WatchedRun(run_dir)
    assert watched.state(seconds=None)["run"]["calls"] == 160
    replay = run_dir / "replay"
    replay.mkdir()
    shutil.copy(run_dir / "events.jsonl", replay / "events.jsonl")  # a replay reproduces it
    watched._scanned = 0  # look for new files now rather than in RESCAN_SECONDS
    state = watched.state(seconds=None)
    assert state["run"]["sources"] == 2 and state["run"]["calls"] == 160
    assert_matches_summary(state, finished_run)


def test_experiment_runs_are_listed_in_plan_order_and_each_matches_its_summary(
    finished_experiment,
) -> None:
    runs = find_runs(finished_experiment)
    assert [r["path"] for r in runs] == [
        f"{condition}/repeat-{k}" for condition in ("solo", "homo") for k in (0, 1)
    ]
    watch = Watch(finished_experiment)
    assert watch.runs()["kind"] == "experiment"
    for entry in runs:
        state = watch.run(entry["path"]).state(seconds=None)
        assert len(state["nodes"]) == (1 if entry["condition"] == "solo" else 4)
        assert_matches_summary(state, finished_experiment / entry["path"])
        assert state["run"]["label"] == entry["path"]
    for outside in ("", "..", "../experiment", "solo", "solo/repeat-0/../../.."):
        with pytest.raises(KeyError):
            watch.run(outside)


def test_plain_run_is_one_entry(finished_run) -> None:
    assert find_runs(finished_run) == [{"path": "", "condition": None, "repeat": None}]


# --- the model on hand-written events -------------------------------------------------------


def ev(
    node: str,
    round_index: int,
    seq: str,
    status: str,
    fitness: float | None,
    cell: list[int] | None,
    kind: str = "mutate",
    **extra,
) -> dict:
    return {
        "event": "evaluated",
        "id": f"{node}-r{round_index}-{seq}",
        "node": node,
        "round": round_index,
        "operator": extra.pop("operator", "op"),
        "kind": kind,
        "status": status,
        "fitness": fitness,
        "cell": cell,
        "descriptor": {"x": 0},
        **extra,
    }


def test_each_round_starts_a_fresh_archive_and_the_merge_follows() -> None:
    state = RunState()
    state.apply_all(
        [
            ev("a", 0, "s0", "new", 1.0, [0, 0]),
            ev("a", 0, "s1", "improve_existing", 2.0, [0, 0]),
            ev("b", 0, "s0", "new", 5.0, [0, 0]),
            ev("b", 0, "s1", "new", 1.5, [1, 0]),
            ev("a", 0, "s2", "not_added", 0.5, [0, 0]),
        ]
    )
    a, b = state.nodes["a"], state.nodes["b"]
    assert a.calls == 3 and b.calls == 2 and state.calls == 5
    assert state.merged.cells[(0, 0)].node == "b" and len(state.merged.cells) == 2
    assert state.merged.fitness_sum == pytest.approx(6.5)
    state.apply(ev("b", 1, "w0", "new", 0.25, [2, 2], kind="warm", operator="initial"))
    assert b.round == 1 and list(b.archive.cells) == [(2, 2)] and b.round_calls == 0
    assert b.calls == 2  # re-evaluating opponents is not an operator call
    # b's old cells left the merge; a's best in (0, 0) is back.
    assert {cell: e.node for cell, e in state.merged.cells.items()} == {(0, 0): "a", (2, 2): "b"}
    assert state.merged.cells[(0, 0)].fitness == 2.0


def test_a_continual_archive_is_kept_across_rounds(tmp_path) -> None:
    state = RunState()
    state.continual = True
    state.apply_all([ev("a", 0, "s0", "new", 1.0, [0, 0]), ev("a", 0, "s1", "new", 2.0, [1, 0])])
    state.apply(ev("a", 1, "s0", "improve_existing", 3.0, [0, 0]))
    a = state.nodes["a"]
    assert a.round == 1 and set(a.archive.cells) == {(0, 0), (1, 0)}
    assert a.previous_cells == {(0, 0), (1, 0)}
    assert state.merged.cells[(0, 0)].fitness == 3.0 and len(state.merged.cells) == 2
    # A watched run reads the lifecycle from the run's config.json.
    (tmp_path / "config.json").write_text(json.dumps({"lifecycle": "continual", "nodes": []}))
    (tmp_path / "events.jsonl").write_text(
        "".join(
            json.dumps(e) + "\n"
            for e in [ev("a", 0, "s0", "new", 1.0, [0, 0]), ev("a", 1, "s0", "new", 1.0, [1, 0])]
        )
    )
    watched = WatchedRun(tmp_path)
    watched.refresh()
    assert set(watched.model.nodes["a"].archive.cells) == {(0, 0), (1, 0)}


def test_transfers_are_matched_to_their_reevaluation_by_sender() -> None:
    state = RunState()
    state.apply_all(
        [
            ev("a", 0, "s0", "new", 1.0, [0, 0]),
            {
                "event": "round",
                "node": "b",
                "round": 0,
                "stats": {"qd_offset": 0.5},
                "champion": {"id": "b-r0-s0", "text": "PROGRAM", "fitness": 3.0, "cell": [1, 1]},
            },
            {"event": "round", "node": "a", "round": 0, "stats": {}, "champion": None},
            {
                "event": "received",
                "node": "a",
                "round": 1,
                "from": "c",
                "from_round": 0,
                "program": "C",
                "operator": "oc",
            },
            {
                "event": "received",
                "node": "a",
                "round": 1,
                "from": "b",
                "from_round": 0,
                "program": "B",
                "operator": "ob",
            },
            ev("a", 1, "p0", "not_added", 0.1, [0, 0], kind="peer", operator="peer:c"),
            ev("a", 1, "p1", "new", 2.0, [3, 3], kind="peer", operator="peer:b"),
        ]
    )
    c_transfer, b_transfer = state.transfers
    assert (c_transfer.status, c_transfer.novel) == ("taken", False)  # (0, 0) was a's before
    assert (b_transfer.status, b_transfer.novel, b_transfer.cell) == ("filled", True, (3, 3))
    assert state.texts["a-r1-p1"] == "B" and state.texts["b-r0-s0"] == "PROGRAM"
    assert state.qd_offset == 0.5
    assert list(state.champions) == [("b", 0)]
    assert state.edges()[0] == {
        "from": "b",
        "to": "a",
        "sent": 1,
        "filled": 1,
        "taken": 0,
        "invalid": 0,
        "pending": 0,
        "novel": 1,
    }


def test_unknown_events_fields_and_garbage_are_tolerated() -> None:
    state = RunState()
    state.apply_all(
        [
            {"event": "something_new", "node": "z", "whatever": [1, 2]},
            {"event": "evaluated"},  # no node
            {"no": "kind"},
            {"event": ["weird"], "node": "z", "round": 0},
            ev("z", 0, "s9", ["weird"], 1.0, [5, 5], kind={"odd": 1}),
            ev("z", 0, "s0", "new", 1.0, [0, 0], cost_usd=0.01, opponents=["x"]),
            ev("z", 0, "s1", "new", None, [1, 1]),  # no fitness: not admitted
            ev("z", 0, "s2", "new", 1.0, ["a"]),  # a malformed cell
            ev("z", 0, "s3", "invalid", None, None, error="line 3: bad 'MOV.Q' at 17"),
            {
                "event": "round",
                "node": "z",
                "round": 0,
                "stats": "oops",
                "champion": "oops",
                "opponents": ["x", "y"],
            },
            {"event": "node_stopped", "node": "z", "round": 1, "reason": "provider refused"},
        ]
    )
    z = state.nodes["z"]
    assert z.calls == 5 and len(z.archive.cells) == 1 and z.invalid == 1
    assert z.causes == {"line N: bad '…' at N": 1}
    assert z.stopped == "provider refused" and z.rounds_done == 1
    assert state.events == 11 and state.kinds["something_new"] == 1


def test_error_cause_groups_messages_that_differ_only_in_details() -> None:
    assert error_cause("line 12: unknown opcode 'FOO'") == error_cause("line 3: unknown opcode 'X'")
    assert error_cause(None) == "unknown error"
    assert error_cause("first\nsecond") == "first"


def test_curves_stay_bounded_and_keep_the_latest_point() -> None:
    curve = Curve()
    for i in range(100_000):
        curve.add(i, i, i)
    values = curve.values()
    assert len(values) <= CURVE_POINTS + 1
    assert values[0] == (0, 0, 0) and values[-1] == (99_999, 99_999, 99_999)
    assert [v[0] for v in values] == sorted(v[0] for v in values)
