"""The string enums of a run's records: every source, work kind, event kind and progress kind a
seeded run writes or reports is a member, the core hands out the members themselves, and the
files keep their plain-string shape."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from dei_framework import (
    CandidateSource,
    EventKind,
    NodeConfig,
    ProgressKind,
    RunConfig,
    WorkKind,
    load_plugins,
    run,
)


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def _candidate_records(event: dict) -> list[dict]:
    """The candidate records a ``round`` event holds (champion, generality champion)."""
    return [
        record
        for record in (event.get("champion"), event.get("generality_champion"))
        if record is not None
    ]


def _config(**overrides) -> RunConfig:
    values = dict(
        domain="toy",
        nodes=[
            NodeConfig(name="node-0", operator="toy-random"),
            NodeConfig(name="node-1", operator="toy-random"),
        ],
        budget=60,
        rounds=3,
        seed=5,
        eval_workers=0,
    )
    values.update(overrides)
    return RunConfig(**values)


@pytest.fixture(scope="module")
def seeded_run(toy_site, tmp_path_factory) -> tuple[Path, list[tuple[object, dict]]]:
    """A two-node toy run (champions shared in virtual time) and the progress updates it made."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(toy_site))
        out = tmp_path_factory.mktemp("kinds") / "run"
        updates: list[tuple[object, dict]] = []
        run(
            _config(),
            out,
            registry=load_plugins(),
            progress=lambda kind, data: updates.append((kind, data)),
        )
    return out, updates


def test_every_event_kind_and_work_kind_in_the_log_is_a_member(seeded_run) -> None:
    out, _ = seeded_run
    log = _events(out)
    events = {event["event"] for event in log}
    kinds = {event["kind"] for event in log if event["event"] == EventKind.EVALUATED}
    assert events <= set(EventKind)
    assert kinds <= set(WorkKind)
    # The run says enough for the check to mean something.
    assert {EventKind.EVALUATED, EventKind.ROUND, EventKind.RECEIVED} <= events
    assert kinds == set(WorkKind)


def test_every_source_in_the_log_is_a_member(seeded_run) -> None:
    out, _ = seeded_run
    rounds = [event for event in _events(out) if event["event"] == EventKind.ROUND]
    opponents = {o["source"] for event in rounds for o in event["opponents"]}
    champions = {record["source"] for event in rounds for record in _candidate_records(event)}
    assert opponents | champions <= set(CandidateSource)
    assert opponents == {CandidateSource.INITIAL, CandidateSource.OWN, CandidateSource.PEER}
    summary = json.loads((out / "summary.json").read_text())
    finals = {node["champion"]["source"] for node in summary["nodes"].values()}
    assert finals <= set(CandidateSource)


def test_the_core_hands_out_the_members_themselves(seeded_run) -> None:
    _, updates = seeded_run
    assert {kind for kind, _ in updates} <= set(ProgressKind)
    assert all(type(kind) is ProgressKind for kind, _ in updates)
    evaluated = [data for kind, data in updates if kind == ProgressKind.EVALUATED]
    assert evaluated and all(type(data["event"]) is EventKind for data in evaluated)
    assert all(type(data["kind"]) is WorkKind for data in evaluated)
    rounds = [data for kind, data in updates if kind == ProgressKind.ROUND]
    assert rounds and all(
        type(o["source"]) is CandidateSource for data in rounds for o in data["opponents"]
    )


def test_members_are_written_as_their_plain_strings() -> None:
    record = {"event": EventKind.RECEIVED_LATE, "kind": WorkKind.PEER}
    record["source"] = CandidateSource.PEER_EXCLUDED
    expected = {"event": "received_late", "kind": "peer", "source": "peer-excluded"}
    assert json.loads(json.dumps(record)) == expected
    assert orjson.loads(orjson.dumps(record)) == expected
    assert f"{WorkKind.MUTATE}" == str(WorkKind.MUTATE) == "mutate"
    assert CandidateSource.NONE == "" and not CandidateSource.NONE


def test_a_received_champions_source_says_whether_it_may_take_a_cell() -> None:
    assert CandidateSource.received(to_cells=True) is CandidateSource.PEER
    assert CandidateSource.received(to_cells=False) is CandidateSource.PEER_EXCLUDED


def test_a_champion_kept_out_of_cells_is_evaluated_then_reported_not_admitted(
    toy_env, tmp_path
) -> None:
    # opponents-only: received champions join the pool, and are kept out of cells.
    out = tmp_path / "run"
    run(_config(sharing="opponents-only"), out, registry=load_plugins())
    peers = [
        event
        for event in _events(out)
        if event["event"] == EventKind.EVALUATED and event["kind"] == WorkKind.PEER
    ]
    assert peers
    assert all(event["status"] == "invalid" for event in peers)
    assert {event["error"] for event in peers} == {"not admitted (sharing policy)"}
