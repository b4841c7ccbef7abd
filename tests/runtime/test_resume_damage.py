"""Resume checks the logs against the checkpoint: a torn last line is cut back, any other damage
is refused with one line naming the file and the byte offset, and no paid reply is dropped."""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from dei_framework.contract.errors import ConfigError
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.files.checkpoints import resume_from_checkpoint
from dei_framework.runtime.files.run_dir import RunDir
from dei_framework.runtime.files.run_layout import LOCK_FILE, UNLOGGED_CALLS_FILE


def _call(index: int) -> dict:
    return {"key": f"a/r0/s{index}", "node": "a", "reply": {"text": f"reply {index}"}}


def _event(index: int) -> dict:
    return {"event": "evaluated", "id": f"a-r0-s{index}", "node": "a"}


def _lines(records: list[dict]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _resume(path: Path) -> dict:
    replies: dict = defaultdict(dict)
    ledger = BudgetLedger(quotas={"a": 10})
    resume_from_checkpoint(RunDir(path), ledger, replies).cut_logs()
    return {key: (call.record["reply"]["text"], call.logged) for key, call in replies["a"].items()}


def _write(path: Path, events: bytes, calls: bytes, checkpoint: object = None) -> None:
    path.mkdir(exist_ok=True)
    (path / "events.jsonl").write_bytes(events)
    (path / "calls.jsonl").write_bytes(calls)
    if checkpoint is not None:
        (path / "checkpoint.json").write_text(json.dumps(checkpoint))


def _checkpoint(events: int, calls: int) -> dict:
    return {"nodes": {}, "offsets": {"events.jsonl": events, "calls.jsonl": calls}}


def test_torn_last_lines_are_cut_and_every_paid_reply_is_served(tmp_path) -> None:
    events, calls = _lines([_event(0), _event(1)]), _lines([_call(0), _call(1)])
    _write(
        tmp_path,
        events + b'{"event": "evalu',
        calls + _lines([_call(2)]) + b'{"key": "a/',
        _checkpoint(len(events), len(_lines([_call(0)]))),
    )
    replies = _resume(tmp_path)
    assert replies == {
        "a/r0/s0": ("reply 0", True),
        "a/r0/s1": ("reply 1", False),
        "a/r0/s2": ("reply 2", False),
    }
    assert (tmp_path / "events.jsonl").read_bytes() == events  # the torn line is gone
    assert (tmp_path / "calls.jsonl").read_bytes() == _lines([_call(0)])
    # The replies cut from calls.jsonl are on disk until served again: a second crash now
    # (before any is logged anew) loses none of them.
    assert _resume(tmp_path) == replies


def test_without_a_checkpoint_the_recorded_replies_are_kept(tmp_path) -> None:
    whole = json.dumps(_call(2)).encode()  # all but its newline reached the disk
    _write(tmp_path, _lines([_event(0)]), _lines([_call(0), _call(1)]) + whole)
    (tmp_path / "checkpoint.json").write_text("null")
    assert _resume(tmp_path) == {f"a/r0/s{i}": (f"reply {i}", False) for i in range(3)}
    assert (tmp_path / "calls.jsonl").read_bytes() == b""
    assert len((tmp_path / UNLOGGED_CALLS_FILE).read_bytes().splitlines()) == 3


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("events cut short", r"events.jsonl holds \d+ bytes but \S+checkpoint.json says \d+"),
        ("calls line junk", r"calls.jsonl is damaged at byte 0: the line is not a call record"),
        ("events line junk", r"events.jsonl is damaged at byte \d+: the line is not a JSON"),
        ("events not utf-8", r"events.jsonl is damaged at byte 0"),
        ("events line a list", r"events.jsonl is damaged at byte 0"),
        ("offset inside a line", r"events.jsonl is damaged: byte 5 .* inside a line"),
        ("checkpoint {}", r"checkpoint.json is damaged: not a checkpoint"),
        ("checkpoint []", r"checkpoint.json is damaged: it holds a list, not a JSON object"),
        ("checkpoint binary", r"checkpoint.json is damaged"),
        ("negative offset", r"checkpoint.json is damaged: offset of calls.jsonl is -4"),
        ("huge offset", r"calls.jsonl holds \d+ bytes but \S+checkpoint.json says 10{30}"),
    ],
)
def test_other_damage_is_refused_naming_file_and_offset(tmp_path, damage, message) -> None:
    events = _lines([_event(0), _event(1)])
    calls = _lines([_call(0), _call(1)])
    checkpoint: object = _checkpoint(len(events), len(calls))
    if damage == "events cut short":
        events = events[:7]
    elif damage == "calls line junk":
        calls = b"not json\n" + calls
        checkpoint = _checkpoint(len(events), len(calls))
    elif damage == "events line junk":
        events = events + b"{half\n"
        checkpoint = _checkpoint(len(events), len(calls))
    elif damage == "events not utf-8":
        events = b"\xff\xfe\n" + events[3:]
    elif damage == "events line a list":
        events = b"[1, 2]\n" + events[7:]
    elif damage == "offset inside a line":
        checkpoint = _checkpoint(5, len(calls))
    elif damage == "negative offset":
        checkpoint = _checkpoint(len(events), -4)
    elif damage == "huge offset":
        checkpoint = _checkpoint(len(events), 10**30)
    elif damage.startswith("checkpoint "):
        checkpoint = None
    _write(tmp_path, events, calls, checkpoint)
    if damage == "checkpoint {}":
        (tmp_path / "checkpoint.json").write_text("{}")
    elif damage == "checkpoint []":
        (tmp_path / "checkpoint.json").write_text("[]")
    elif damage == "checkpoint binary":
        (tmp_path / "checkpoint.json").write_bytes(b"\x00\xff\x10binary")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ConfigError, match=message):
        _resume(tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing changed


def test_dei_run_resume_of_a_damaged_run_is_one_line_and_changes_nothing(
    toy_env, cli, tmp_path
) -> None:
    out = tmp_path / "run"
    cli(
        "dei-run",
        "--domain",
        "toy",
        "--operator",
        "toy-random",
        "--nodes",
        "2",
        "--budget",
        "24",
        "--rounds",
        "2",
        "--eval-workers",
        "0",
        "--progress",
        "quiet",
        "--no-report",
        "--out",
        str(out),
        env=toy_env,
    )
    events = out / "events.jsonl"
    events.write_bytes(events.read_bytes()[: events.stat().st_size // 2])  # cut in half

    def files() -> dict[str, bytes]:
        return {
            str(p.relative_to(out)): p.read_bytes()
            for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != LOCK_FILE
        }

    before = files()
    result = subprocess.run(
        ["dei-run", "--resume", str(out), "--progress", "quiet"],
        env=toy_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert f"{events} holds" in lines[0] and "refusing to resume" in lines[0]
    assert files() == before
