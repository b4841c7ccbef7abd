"""Replay: recorded calls served by request key only when their messages hash the same, and
the record a replay reads (:mod:`dei_framework.runtime.replay`,
:func:`dei_framework.runtime.files.checkpoints.read_replay_record`)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import defaultdict

import pytest

from dei_framework.contract.errors import ConfigError, OperatorError, ReplayMismatch
from dei_framework.contract.operators import OperatorReply, OperatorRequest
from dei_framework.runtime.files.checkpoints import read_replay_record
from dei_framework.runtime.files.run_dir import RunDir
from dei_framework.runtime.replay import (
    RecordedCall,
    RecordedOperator,
    Recording,
    messages_digest,
    recorded_digest,
    recorded_usage,
    replayed_reply,
)

ASK = [{"role": "system", "content": "Toy."}, {"role": "user", "content": "Write"}]
OTHER = [{"role": "system", "content": "Toy."}, {"role": "user", "content": "Improve 1 2"}]


def _recording(**options) -> Recording:
    return Recording(
        {
            "n/r0/s0": RecordedCall(
                record={"messages_sha256": messages_digest(ASK), "reply": {"text": "PROGRAM: 1"}}
            )
        },
        **options,
    )


# --- the messages' hash --------------------------------------------------------------------------


def test_the_messages_hash_is_the_sha256_of_their_canonical_json() -> None:
    canonical = json.dumps(ASK, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert messages_digest(ASK) == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    reordered = [{"content": m["content"], "role": m["role"]} for m in ASK]
    assert messages_digest(reordered) == messages_digest(ASK)
    assert messages_digest(OTHER) != messages_digest(ASK)


def test_a_record_without_the_hash_is_hashed_from_its_messages() -> None:
    assert recorded_digest({"messages": ASK}) == messages_digest(ASK)
    assert recorded_digest({"messages_sha256": "sha256:x", "messages": ASK}) == "sha256:x"
    assert recorded_digest({}) is None


# --- serving the record --------------------------------------------------------------------------


def test_a_matching_call_is_served_once() -> None:
    recording = _recording()
    served = recording.take("n/r0/s0", ASK)
    assert served.record["reply"] == {"text": "PROGRAM: 1"}
    assert len(recording) == 0
    with pytest.raises(ReplayMismatch, match="is not in the record"):
        recording.take("n/r0/s0", ASK)


def test_the_first_mismatch_stops_a_replay_naming_the_call_and_the_record() -> None:
    with pytest.raises(ReplayMismatch) as stopped:
        _recording(source="the record in /runs/a").take("n/r0/s0", OTHER)
    message = str(stopped.value)
    assert message.startswith("replay: call n/r0/s0 has different messages: ")
    assert message.endswith(
        "stopping at this first mismatch with the record in /runs/a (use "
        "--reask-mismatched to ask the operator for mismatched calls)"
    )
    assert "\n" not in message


def test_asking_again_notes_the_mismatched_calls_only() -> None:
    recording = _recording(on_mismatch="ask")
    assert recording.take("n/r0/s0", OTHER) is None
    assert recording.take("n/r0/s9", ASK) is None  # not recorded: nothing mismatched
    assert recording.reasked == ["n/r0/s0"]


def test_only_a_completed_call_already_logged_is_charged() -> None:
    reply = {"reply": {"text": "PROGRAM: 1"}}
    recording = Recording(
        {
            "logged": RecordedCall(record=reply, logged=True),
            "new": RecordedCall(record=reply),
            "failed": RecordedCall(record={"failed": "down"}, logged=True),
        }
    )
    assert [key for key in ("logged", "new", "failed", "absent") if recording.charged(key)] == [
        "logged"
    ]


def test_an_unknown_mismatch_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="on_mismatch must be 'stop' or 'ask', not 'skip'"):
        Recording({}, on_mismatch="skip")


# --- what a recorded call gives ------------------------------------------------------------------


def test_a_recorded_reply_is_rebuilt_and_a_recorded_failure_gives_none() -> None:
    assert replayed_reply({"reply": {"text": "PROGRAM: 1", "attempts": 2}}) == OperatorReply(
        text="PROGRAM: 1", attempts=2
    )
    assert replayed_reply({"failed": "provider down", "reply": {"text": "x"}}) is None


def test_usage_comes_from_the_record_or_from_an_older_records_reply() -> None:
    usage = {
        "attempts": 2,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "cost_usd": 0.5,
        "unpriced_attempts": 0,
    }
    assert recorded_usage({"usage": usage}) == {
        "attempts": 2,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "cost_usd": 0.5,
    }
    older = {"reply": {"text": "x", "prompt_tokens": 7, "completion_tokens": 3}}
    assert recorded_usage(older) == {
        "attempts": 1,
        "prompt_tokens": 7,
        "completion_tokens": 3,
        "cost_usd": 0.0,
    }


def test_the_recorded_operator_refuses_every_call_naming_it() -> None:
    operator = RecordedOperator(label="gpt")
    request = OperatorRequest(key="n/r1/s4", kind="new", messages=ASK, seed=0)
    with pytest.raises(
        OperatorError,
        match="^replay: no recorded reply left for n/r1/s4; the record is incomplete$",
    ):
        asyncio.run(operator.propose(request))
    assert operator.label == "gpt"


# --- the record a replay reads -------------------------------------------------------------------


def _record(path, *, nodes: dict) -> RunDir:
    run_dir = RunDir(path)
    run_dir.log_calls(
        [
            {"node": "node-0", "key": "node-0/r0/s0", "messages": ASK},
            {"node": "node-1", "key": "node-1/r0/s0", "messages": ASK},
        ]
    )
    run_dir.log_events(
        [
            {"event": "received", "node": "node-1", "round": 1, "text": "1 2"},
            {"event": "evaluated", "node": "node-1", "round": 1},
            {"event": "received", "node": "node-1", "round": 1, "text": "3"},
        ]
    )
    run_dir.write_checkpoint(
        {"nodes": nodes, "offsets": run_dir.offsets(), "digests": run_dir.digests()}
    )
    run_dir.close()
    return RunDir(path)


def test_a_replay_reads_the_calls_receptions_and_lags_of_the_record(tmp_path) -> None:
    record = _record(tmp_path, nodes={"node-0": {"lag": 24}, "node-1": {"lag": 8}})
    replies: dict = defaultdict(dict)

    read = read_replay_record(record, replies)

    assert {node: list(calls) for node, calls in replies.items()} == {
        "node-0": ["node-0/r0/s0"],
        "node-1": ["node-1/r0/s0"],
    }
    assert not any(call.logged for calls in replies.values() for call in calls.values())
    assert read.lags == {"node-0": 24, "node-1": 8}
    assert [event["text"] for event in read.received["node-1"][1]] == ["1 2", "3"]
    assert not read.received.get("node-0")


def test_a_record_without_a_checkpoint_or_with_a_bad_lag_is_refused(tmp_path) -> None:
    with pytest.raises(ConfigError, match="checkpoint.json is missing"):
        read_replay_record(RunDir(tmp_path / "none"), defaultdict(dict))
    record = _record(tmp_path / "bad", nodes={"node-0": {"lag": -1}})
    with pytest.raises(ConfigError) as refused:
        read_replay_record(record, defaultdict(dict))
    assert str(refused.value) == (f"{record.checkpoint_path} is damaged: node node-0's lag is -1")
