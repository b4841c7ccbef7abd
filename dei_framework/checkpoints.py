"""A run's checkpoint (``checkpoint.json``): taken between two awaits, read back on ``--resume``.

A checkpoint is every node's scheduler state (admitted state plus the items handed out and not
yet admitted), the budget ledger, the log offsets, the virtual-time timeline and the sharing
counters, taken together in one synchronous step, so that it is consistent with the run log at
any moment (docs/architecture.md, "Ask/tell").

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from dei_framework.budget import BudgetLedger
from dei_framework.errors import ConfigError
from dei_framework.node import Node
from dei_framework.runlog import RunDir
from dei_framework.search import RecordedCall, SearchDriver
from dei_framework.timeline import Timeline


def write_checkpoint(run_dir: RunDir, drivers: Mapping[str, SearchDriver], nodes: Iterable[Node],
                     ledger: BudgetLedger, timeline: Timeline | None) -> None:
    """Writes the run's checkpoint (see the module's docstring)."""
    run_dir.write_checkpoint({
        "nodes": {name: driver.state_json() for name, driver in drivers.items()},
        "offsets": run_dir.offsets(),
        "wall_seconds": round(ledger.wall_seconds, 3),
        "timeline": timeline.to_json() if timeline is not None else [],
        # Sharing counters: a resumed node counts on from them (they restarted at 0 before).
        "sharing": {node.name: node.state_json(started_round=_started_round(drivers[node.name]))
                    for node in nodes},  # fmt: skip
    })  # fmt: skip


def _started_round(driver: SearchDriver) -> int:
    """The last round the node's scheduler has started (``-1`` before its first)."""
    scheduler = driver.scheduler
    return scheduler.round if scheduler.started else scheduler.round - 1


@attrs.frozen(kw_only=True)
class Resumption:
    """What a resumed run starts from: its last checkpoint.

    Attributes:
        states: Per node, its driver's state (empty without a checkpoint).
        postings: The virtual-time timeline's postings.
        sharing_states: Per node, its sharing counters (absent in older checkpoints).
    """

    states: dict[str, dict] = attrs.field(factory=dict)
    postings: list[dict] = attrs.field(factory=list)
    sharing_states: dict[str, dict] = attrs.field(factory=dict)


#: Paid replies a resume cut from ``calls.jsonl`` (made after the checkpoint) and has not
#: logged again yet: kept here first, so that a second crash before they are served again
#: loses none of them. Each resume reads it, and removes it once nothing is left unlogged.
UNLOGGED_CALLS = "calls-unlogged.jsonl"

#: The append-only logs a checkpoint holds offsets of.
LOGS = ("events.jsonl", "calls.jsonl")


def resume_from_checkpoint(
    run_dir: RunDir, ledger: BudgetLedger, replies: dict[str, dict[str, RecordedCall]]
) -> Resumption:
    """Takes a run directory back to its last checkpoint, checking the logs against it.

    The logs are cut back to the checkpoint's offsets (to nothing without a checkpoint: a
    missing or ``null`` one, as after ``kill -9`` before the first), and the ledger's wall
    time resumes from it. Every recorded call goes to ``replies`` (per node, by request key)
    to be served again without calling the operator: those the checkpoint kept as logged, the
    later ones (paid for too) to be logged and charged anew. A paid reply is never lost: the
    ones cut from ``calls.jsonl`` are first written to :data:`UNLOGGED_CALLS`.

    A torn last line (a crash mid-write) is cut back; any other damage (a log shorter than
    the checkpoint says, a line that is not a JSON object, a checkpoint of the wrong shape)
    is refused, naming the file and the byte offset, before anything is changed.

    Args:
        run_dir: The run.
        ledger: The run's new budget ledger.
        replies: Filled with the recorded calls.

    Raises:
        ConfigError: The checkpoint or a log is damaged (nothing was changed).
    """
    checkpoint = run_dir.read_checkpoint()
    offsets = _offsets(run_dir, checkpoint)
    kept, later = _read_log(run_dir.calls_path, offsets["calls.jsonl"])
    # Events after the offset are cut unread (they hold nothing paid for); those before it
    # are what the resumed run counts on.
    _read_log(run_dir.events_path, offsets["events.jsonl"], after=False)
    unlogged_path = run_dir.path / UNLOGGED_CALLS
    carried, _ = _read_log(unlogged_path, None)
    logged = {(call["node"], call["key"]) for call in kept}
    for call in kept:
        replies[call["node"]][call["key"]] = RecordedCall(record=call, logged=True)
    unlogged: dict[tuple[str, str], dict] = {}
    for call in [*carried, *later]:  # a later record of a key is the newer one
        if (call["node"], call["key"]) not in logged:
            unlogged[(call["node"], call["key"])] = call
    for (node, key), call in unlogged.items():
        replies[node][key] = RecordedCall(record=call, logged=False)
    if unlogged:  # before the cut: the replies it removes from calls.jsonl stay on disk
        run_dir.replace_jsonl(UNLOGGED_CALLS, list(unlogged.values()))
    run_dir.truncate(offsets)
    if not unlogged:
        unlogged_path.unlink(missing_ok=True)
    if checkpoint is None:
        return Resumption()
    ledger.resume_wall(checkpoint.get("wall_seconds", 0.0))
    return Resumption(states=checkpoint["nodes"], postings=checkpoint.get("timeline", []),
                      sharing_states=checkpoint.get("sharing", {}))  # fmt: skip


def _offsets(run_dir: RunDir, checkpoint: Any) -> dict[str, int]:
    """The checkpoint's log offsets (0 without one), each checked against its file."""
    where = run_dir.checkpoint_path
    if checkpoint is None:
        return dict.fromkeys(LOGS, 0)
    shaped = isinstance(checkpoint, dict) and all(
        isinstance(checkpoint.get(key), dict) for key in ("nodes", "offsets")
    )
    if not shaped:
        raise ConfigError(
            f"{where} is damaged: not a checkpoint (no nodes and offsets); "
            "remove it to resume from the start (paid replies are kept)"
        )
    offsets = {}
    for name in LOGS:
        value = checkpoint["offsets"].get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{where} is damaged: offset of {name} is {value!r}")
        size = (run_dir.path / name).stat().st_size if (run_dir.path / name).exists() else 0
        if value > size:
            raise ConfigError(f"{run_dir.path / name} holds {size} bytes but the checkpoint "
                              f"says {value} were written: the log was cut or replaced; "
                              "refusing to resume")  # fmt: skip
        offsets[name] = value
    return offsets


def _read_log(path: Path, offset: int | None, *,
              after: bool = True) -> tuple[list[dict], list[dict]]:  # fmt: skip
    """The records of a log before ``offset`` and after it (all before, for ``None``;
    none after, left unread, for ``after=False``). A torn last line is left out.

    Raises:
        ConfigError: A line other than a torn last one is not a record, or ``offset`` falls
            inside a line (naming the file and the byte offset).
    """
    if not path.exists():
        return [], []
    data = path.read_bytes()
    cut = len(data) if offset is None else offset
    if 0 < cut <= len(data) and data[cut - 1 : cut] != b"\n":
        # A checkpoint's offset is taken after a whole line; an unlogged-calls file is
        # written whole: either way a line that never ended lies before the cut.
        if offset is not None or cut < len(data):
            raise ConfigError(f"{path} is damaged: byte {cut} (the checkpoint's offset) is "
                              "inside a line; refusing to resume")  # fmt: skip
    end_of_reading = len(data) if after else cut
    before: list[dict] = []
    later: list[dict] = []
    position = 0
    while position < end_of_reading:
        end = data.find(b"\n", position)
        torn = end < 0
        end = len(data) if torn else end
        try:
            record = json.loads(data[position:end])
        except ValueError:  # not JSON, or not UTF-8
            record = None
        if torn:  # the last line, cut short by a crash mid-write: the cut removes it
            if after and isinstance(record, dict) and _is_call(record):
                later.append(record)  # all but its newline was written: a reply kept
            break
        if not isinstance(record, dict) or (path.name != "events.jsonl"
                                            and not _is_call(record)):  # fmt: skip
            what = "a JSON object" if path.name == "events.jsonl" else "a call record"
            raise ConfigError(f"{path} is damaged at byte {position}: the line is not {what}; "
                              "refusing to resume")  # fmt: skip
        (before if position < cut else later).append(record)
        position = end + 1
    return before, later


def _is_call(record: dict) -> bool:
    return isinstance(record.get("node"), str) and isinstance(record.get("key"), str)
