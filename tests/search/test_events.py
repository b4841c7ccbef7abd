"""The scheduler's events are records: hooks read them by attribute, ``to_json()`` is exactly the
line of ``events.jsonl`` (derived from the fields) and ``from_json()`` reads it back."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
import toy_domain

from dei_framework import (
    EvaluatedEvent,
    NodeConfig,
    RoundEvent,
    RunConfig,
    hookimpl,
    load_plugins,
    run,
)
from dei_framework.search.archives import ArchiveStats


class Observer:
    """Keeps every event the hooks hand over, and what it read of them by attribute."""

    def __init__(self) -> None:
        self.evaluated: list[EvaluatedEvent] = []
        self.rounds: list[RoundEvent] = []
        self.coverage: list[float] = []

    @hookimpl
    def dei_candidate_evaluated(self, event):
        self.evaluated.append(event)

    @hookimpl
    def dei_round_ended(self, node, round, stats):
        assert (node, round) == (stats.node, stats.round)
        self.rounds.append(stats)
        self.coverage.append(stats.stats.coverage)


def _lines(path: Path, kind: str) -> list[dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [line for line in lines if line.get("event") == kind]


@pytest.fixture(scope="module")
def observed(tmp_path_factory):
    observer = Observer()
    registry = load_plugins([toy_domain, observer])
    config = RunConfig(
        domain="toy",
        nodes=[
            NodeConfig(name="a", operator="toy-random"),
            NodeConfig(name="b", operator="toy-random"),
        ],
        budget=32,
        rounds=2,
        seed=3,
        eval_workers=0,
    )
    out = tmp_path_factory.mktemp("events") / "run"
    run(config, out, registry=registry)
    return observer, out


def test_hooks_receive_records_whose_json_is_the_run_logs_line(observed) -> None:
    observer, out = observed
    logged = _lines(out / "events.jsonl", "evaluated")
    assert len(logged) > 10 and all(isinstance(e, EvaluatedEvent) for e in observer.evaluated)
    # The same events, one for one (nodes interleave in the log as they do in the hook calls).
    assert sorted(json.dumps(e.to_json(), sort_keys=True) for e in observer.evaluated) == sorted(
        json.dumps(line, sort_keys=True) for line in logged
    )
    rounds = _lines(out / "events.jsonl", "round")
    assert len(observer.rounds) == len(rounds) == 4
    assert sorted(json.dumps(e.to_json(), sort_keys=True) for e in observer.rounds) == sorted(
        json.dumps(line, sort_keys=True) for line in rounds
    )
    assert observer.coverage == [e.stats.coverage for e in observer.rounds]
    assert all(isinstance(e.stats, ArchiveStats) for e in observer.rounds)


def test_records_read_back_from_the_run_log_are_equal(observed) -> None:
    _, out = observed
    for kind, record in (("evaluated", EvaluatedEvent), ("round", RoundEvent)):
        for line in _lines(out / "events.jsonl", kind):
            again = record.from_json(line)
            assert again.to_json() == line
            assert record.from_json(json.loads(json.dumps(again.to_json()))) == again


def test_invalid_and_valid_evaluated_events_keep_the_logs_keys() -> None:
    common = dict(id="n-r0-s1", node="n", round=0, operator="op", kind="new", parent=None, slot=1)
    invalid = EvaluatedEvent(status="invalid", error="no program", **common)
    assert invalid.invalid and list(invalid.to_json())[8:13] == [
        "status",
        "error",
        "fitness",
        "descriptor",
        "cell",
    ]
    valid = EvaluatedEvent(
        status="new",
        fitness=1.5,
        descriptor={"x": 0.2},
        cell=(3,),
        extra={"timings": {"eval_s": 0.01}},
        **common,
    )
    assert "error" not in valid.to_json() and valid.to_json()["cell"] == [3]
    assert valid.timings == {"eval_s": 0.01} and valid.generality_matches == ()


def test_a_record_is_not_a_dict(observed) -> None:
    observer, _ = observed
    with pytest.raises(TypeError):
        observer.rounds[0]["stats"]  # noqa: B018 -- read by attribute: event.stats


def test_the_records_json_keys_are_their_fields(observed) -> None:
    # One declaration: every key of a line is the event's tag, a field, or one of its extras.
    observer, _ = observed
    for events in (observer.evaluated, observer.rounds):
        for event in events:
            fields = {field.alias for field in attrs.fields(type(event))} - {"extra"}
            keys = set(event.to_json())
            extra = set(getattr(event, "extra", {}))
            assert keys - extra - {"event"} <= fields
            assert fields - keys <= {"error", "generality_champion"}  # written only when set
