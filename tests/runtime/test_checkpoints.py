"""Checkpoints: written between two awaits, read back on resume with the logs checked against
them, damage refused in one line naming the file (:mod:`dei_framework.runtime.files.checkpoints`,
:mod:`dei_framework.runtime.files.checkpoints`)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from dei_framework.contract.errors import ConfigError
from dei_framework.contract.operators import OperatorReply
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.files.checkpoints import (
    check_logs,
    resume_from_checkpoint,
    write_checkpoint,
)
from dei_framework.runtime.files.run_dir import RunDir
from dei_framework.runtime.files.run_layout import UNLOGGED_CALLS_FILE
from dei_framework.search.events import RoundEvent


def _call(key: str, node: str = "node-0") -> dict:
    return {"node": node, "key": key, "reply": {"text": "PROGRAM: 1 2"}}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _checkpointed_logs(path: Path) -> RunDir:
    """Two calls and an event before a checkpoint, two calls and an event after it."""
    run_dir = RunDir(path)
    run_dir.log_calls([_call("node-0/r0/s0"), _call("node-0/r0/s1")])
    run_dir.log_events([{"event": "evaluated", "node": "node-0"}])
    run_dir.write_checkpoint(
        {
            "nodes": {},
            "offsets": run_dir.offsets(),
            "digests": run_dir.digests(),
            "wall_seconds": 12.5,
        }
    )
    run_dir.log_calls([_call("node-0/r0/s2"), _call("node-1/r0/s0", node="node-1")])
    run_dir.log_events([{"event": "evaluated", "node": "node-1"}])
    run_dir.close()
    return RunDir(path)


def _resume(run_dir: RunDir):
    replies: dict = defaultdict(dict)
    ledger = BudgetLedger(quotas={"node-0": 10, "node-1": 10})
    return resume_from_checkpoint(run_dir, ledger, replies), replies, ledger


# --- a resume restores the run ------------------------------------------------------------------


def test_a_resume_restores_every_nodes_scheduler_and_usage(build, toy_config, tmp_path) -> None:
    config = toy_config()
    parts = build(config, tmp_path)
    scheduler = parts.drivers["node-0"].scheduler
    asked = scheduler.ask(4)  # round 0 starts: its warm items, then call slots
    parts.ledger.reserve("node-0").commit(OperatorReply(text="PROGRAM: 1 2"))
    run_dir = RunDir(tmp_path)
    write_checkpoint(run_dir, parts.drivers, parts.nodes, parts.ledger, parts.timeline)
    saved = {name: driver.state_json() for name, driver in parts.drivers.items()}
    run_dir.log_calls([_call(asked[-1].key)])  # a paid reply after the checkpoint
    run_dir.close()

    resumed = build(config, tmp_path, resume=True)

    assert {name: driver.state_json() for name, driver in resumed.drivers.items()} == saved
    # The logs are back at the checkpoint; the reply after it is kept, to be served again.
    assert (tmp_path / "calls.jsonl").read_bytes() == b""
    assert [c["key"] for c in _lines(tmp_path / UNLOGGED_CALLS_FILE)] == [asked[-1].key]
    assert not resumed.drivers["node-0"].replies.charged(asked[-1].key)
    assert len(resumed.drivers["node-0"].replies) == 1
    again = resumed.drivers["node-0"].scheduler
    assert again.started and not resumed.drivers["node-1"].scheduler.started
    # The items asked before the checkpoint are handed out again, in the same order.
    assert [item.key for item in again.ask(4)] == [item.key for item in asked]
    assert resumed.ledger.usage["node-0"].calls == 1
    assert resumed.ledger.usage["node-1"].calls == 0


def test_calls_before_the_checkpoint_are_served_as_logged_and_later_ones_anew(tmp_path) -> None:
    run_dir = _checkpointed_logs(tmp_path)
    before = {name: (tmp_path / name).read_bytes() for name in ("calls.jsonl", "events.jsonl")}

    resumed, replies, ledger = _resume(run_dir)

    logged = {key: call.logged for node in replies.values() for key, call in node.items()}
    assert logged == {
        "node-0/r0/s0": True,
        "node-0/r0/s1": True,
        "node-0/r0/s2": False,
        "node-1/r0/s0": False,
    }
    assert [call["key"] for call in resumed.unlogged] == ["node-0/r0/s2", "node-1/r0/s0"]
    assert ledger.wall_seconds >= 12.5  # the earlier session's wall time counts on
    # Reading changes nothing: the logs are cut once the run is rebuilt.
    assert {name: (tmp_path / name).read_bytes() for name in before} == before


def test_cutting_the_logs_keeps_the_paid_replies_it_takes_out(tmp_path) -> None:
    resumed, _, _ = _resume(_checkpointed_logs(tmp_path))

    resumed.cut_logs()

    assert [c["key"] for c in _lines(tmp_path / "calls.jsonl")] == ["node-0/r0/s0", "node-0/r0/s1"]
    assert _lines(tmp_path / "events.jsonl") == [{"event": "evaluated", "node": "node-0"}]
    assert [c["key"] for c in _lines(tmp_path / UNLOGGED_CALLS_FILE)] == [
        "node-0/r0/s2",
        "node-1/r0/s0",
    ]
    # A second crash before they are served again: the next resume still has them.
    _, replies, _ = _resume(RunDir(tmp_path))
    assert replies["node-0"]["node-0/r0/s2"].logged is False
    assert replies["node-1"]["node-1/r0/s0"].logged is False


def test_without_a_checkpoint_every_call_is_unlogged_and_the_logs_go(tmp_path) -> None:
    run_dir = RunDir(tmp_path)
    run_dir.log_calls([_call("node-0/r0/s0")])
    run_dir.close()

    resumed, replies, _ = _resume(RunDir(tmp_path))

    assert resumed.checkpoint is None and resumed.states == {}
    assert resumed.offsets == {"events.jsonl": 0, "calls.jsonl": 0}
    assert replies["node-0"]["node-0/r0/s0"].logged is False
    resumed.cut_logs()
    assert (tmp_path / "calls.jsonl").read_bytes() == b""


def test_a_torn_last_line_is_left_out(tmp_path) -> None:
    run_dir = _checkpointed_logs(tmp_path)
    with open(tmp_path / "calls.jsonl", "ab") as log:
        log.write(b'{"node": "node-0", "key": "node-0/r0/s9", "rep')  # a crash mid-write

    resumed, replies, _ = _resume(run_dir)

    assert "node-0/r0/s9" not in replies["node-0"]
    assert len(resumed.unlogged) == 2


# --- damage is refused in one line naming the file ----------------------------------------------


def _rewrite_checkpoint(path: Path, **changes) -> None:
    checkpoint = json.loads((path / "checkpoint.json").read_text())
    (path / "checkpoint.json").write_text(json.dumps({**checkpoint, **changes}))


def _flip_first_byte(path: Path) -> None:
    data = bytearray((path / "calls.jsonl").read_bytes())
    data[1:2] = b" "  # same length, other bytes: only the digest tells
    (path / "calls.jsonl").write_bytes(bytes(data))


def _cut_calls(path: Path) -> None:
    (path / "calls.jsonl").write_bytes((path / "calls.jsonl").read_bytes()[:10])


def _junk_after_the_checkpoint(path: Path) -> None:
    with open(path / "calls.jsonl", "ab") as log:
        log.write(b"not a record\n" + json.dumps(_call("node-0/r1/s0")).encode() + b"\n")


DAMAGES = {
    "checkpoint not JSON": (
        lambda path: (path / "checkpoint.json").write_text("{"),
        "checkpoint.json",
        "is damaged: not JSON",
    ),
    "offset not a number": (
        lambda path: _rewrite_checkpoint(path, offsets={"events.jsonl": "12", "calls.jsonl": 0}),
        "checkpoint.json",
        "is damaged: offset of events.jsonl is '12'",
    ),
    "wall time not a number": (
        lambda path: _rewrite_checkpoint(path, wall_seconds="long"),
        "checkpoint.json",
        "is damaged: wall_seconds is 'long'",
    ),
    "log changed before the offset": (_flip_first_byte, "calls.jsonl", "their SHA-256 differs"),
    "log cut before the offset": (_cut_calls, "calls.jsonl", "holds 10 bytes but"),
    "a line that is not a record": (
        _junk_after_the_checkpoint,
        "calls.jsonl",
        "is damaged at byte",
    ),
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_checkpoint_or_log_is_refused_in_one_line_naming_the_file(
    damage: str, tmp_path
) -> None:
    damaging, file, problem = DAMAGES[damage]
    run_dir = _checkpointed_logs(tmp_path)
    damaging(tmp_path)
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}

    with pytest.raises(ConfigError) as refused:
        _resume(run_dir)

    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(str(tmp_path / file))
    assert problem in message
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_a_finished_nodes_log_must_end_at_its_last_checkpoint(tmp_path) -> None:
    run_dir = _checkpointed_logs(tmp_path)  # the logs go on after the checkpoint
    checkpoint = run_dir.read_checkpoint()

    assert check_logs(tmp_path, checkpoint, action="merge") == checkpoint["offsets"]
    with pytest.raises(ConfigError, match="was changed after the node finished; refusing to merge"):
        check_logs(tmp_path, checkpoint, action="merge", complete=True)


def test_a_node_state_that_cannot_be_restored_is_refused_and_the_logs_kept(
    build, toy_config, tmp_path
) -> None:
    config = toy_config()
    parts = build(config, tmp_path)
    run_dir = RunDir(tmp_path)
    write_checkpoint(run_dir, parts.drivers, parts.nodes, parts.ledger, parts.timeline)
    run_dir.log_calls([_call("node-0/r0/s0")])  # after the checkpoint: a resume would cut it
    run_dir.close()
    checkpoint = json.loads((tmp_path / "checkpoint.json").read_text())
    del checkpoint["nodes"]["node-1"]["lag"]
    (tmp_path / "checkpoint.json").write_text(json.dumps(checkpoint))
    calls = (tmp_path / "calls.jsonl").read_bytes()

    with pytest.raises(ConfigError) as refused:
        build(config, tmp_path, resume=True)

    assert str(refused.value) == (
        f"{tmp_path / 'checkpoint.json'} is damaged: node node-1's "
        "state cannot be restored from it (KeyError: 'lag'); "
        "refusing to resume"
    )
    assert (tmp_path / "calls.jsonl").read_bytes() == calls


def test_a_finished_round_without_its_file_is_refused(build, toy_config, tmp_path) -> None:
    config = toy_config()
    parts = build(config, tmp_path)
    write_checkpoint(RunDir(tmp_path), parts.drivers, parts.nodes, parts.ledger, parts.timeline)
    checkpoint = json.loads((tmp_path / "checkpoint.json").read_text())
    finished = RoundEvent(
        node="node-0",
        round=0,
        calls=20,
        stats=parts.drivers["node-0"].scheduler.archive.stats(),
        champion=None,
        champion_initial=False,
        received=0,
        niche_novelty=None,
        opponents=[],
        selector="uniform",
        archive_kind="grid",
    )
    checkpoint["nodes"]["node-0"]["history"] = [finished.to_json()]
    (tmp_path / "checkpoint.json").write_text(json.dumps(checkpoint))

    with pytest.raises(ConfigError) as refused:
        build(config, tmp_path, resume=True)

    assert str(refused.value) == (
        f"{tmp_path / 'nodes' / 'node-0' / 'round-000.json'} is "
        "missing: the checkpoint says node node-0 finished round 0; "
        "refusing to resume"
    )
