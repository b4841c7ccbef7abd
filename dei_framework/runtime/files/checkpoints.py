"""A run's checkpoint (``checkpoint.json``): taken between two awaits, read back on ``--resume``;
and what a resume or a replay reads back while a run is assembled.

A checkpoint is every node's scheduler state (admitted state plus the items handed out and not
yet admitted), the budget ledger, the log offsets, the virtual-time timeline and the sharing
counters, taken together in one synchronous step, so that it is consistent with the run log at
any moment (docs/architecture.md, "Ask/tell"). Read back: node state restored from it (damage
refused in one line), the round files it names, a replay's record, and the peers' round
reports a resumed node process decided from.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from dei_framework.contract.errors import ConfigError
from dei_framework.contract.kinds import EventKind
from dei_framework.net.node import Node
from dei_framework.net.timeline import Timeline
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.driver import SearchDriver
from dei_framework.runtime.files.run_dir import RunDir, read_jsonl
from dei_framework.runtime.files.run_files import damaged, damaged_line
from dei_framework.runtime.files.run_layout import (
    CALLS_FILE,
    CHECKPOINT_FILE,
    EVENTS_FILE,
    LOGS,
    UNLOGGED_CALLS_FILE,
)
from dei_framework.runtime.replay import RecordedCall
from dei_framework.search.allocation import RoundReport


def write_checkpoint(
    run_dir: RunDir,
    drivers: Mapping[str, SearchDriver],
    nodes: Iterable[Node],
    ledger: BudgetLedger,
    timeline: Timeline | None,
) -> None:
    """Writes the run's checkpoint (see the module's docstring)."""
    run_dir.write_checkpoint(
        {
            "nodes": {name: driver.state_json() for name, driver in drivers.items()},
            "offsets": run_dir.offsets(),
            "digests": run_dir.digests(),
            "wall_seconds": round(ledger.wall_seconds, 3),
            "timeline": timeline.to_json() if timeline is not None else [],
            # Sharing counters: a resumed node counts on from them (they restarted at 0 before).
            "sharing": {
                node.name: node.state_json(started_round=_started_round(drivers[node.name]))
                for node in nodes
            },
        }
    )


def _started_round(driver: SearchDriver) -> int:
    """The last round the node's scheduler has started (``-1`` before its first)."""
    scheduler = driver.scheduler
    return scheduler.round if scheduler.started else scheduler.round - 1


@attrs.frozen(kw_only=True)
class Resumption:
    """What a resumed run starts from: its last checkpoint, and the cut of its logs back to it.

    Attributes:
        run_dir: The run.
        checkpoint: Its checkpoint (``None``: there was none, the run starts over).
        offsets: Where the logs are cut (the checkpoint's offsets; 0 without one).
        unlogged: Paid replies the cut takes out of ``calls.jsonl`` (with those an earlier
            resume kept), to be logged again when they are served.
    """

    run_dir: RunDir
    checkpoint: dict[str, Any] | None
    offsets: dict[str, int]
    unlogged: list[dict]

    @property
    def states(self) -> dict[str, dict]:
        """Per node, its driver's state (empty without a checkpoint)."""
        return self.checkpoint["nodes"] if self.checkpoint is not None else {}

    @property
    def postings(self) -> list[dict]:
        """The virtual-time timeline's postings."""
        return (self.checkpoint or {}).get("timeline", [])

    @property
    def sharing_states(self) -> dict[str, dict]:
        """Per node, its sharing counters (absent in older checkpoints)."""
        return (self.checkpoint or {}).get("sharing", {})

    def cut_logs(self) -> None:
        """Cuts the logs back to the checkpoint, the replies it takes out of ``calls.jsonl``
        written to :data:`UNLOGGED_CALLS_FILE` first (so that they stay on disk). Called once the
        run has been rebuilt from the checkpoint: a checkpoint that cannot be restored leaves
        every file as it was."""
        unlogged_path = self.run_dir.path / UNLOGGED_CALLS_FILE
        if self.unlogged:
            self.run_dir.replace_jsonl(UNLOGGED_CALLS_FILE, self.unlogged)
        self.run_dir.truncate(self.offsets)
        if not self.unlogged:
            unlogged_path.unlink(missing_ok=True)


def resume_from_checkpoint(
    run_dir: RunDir, ledger: BudgetLedger, replies: dict[str, dict[str, RecordedCall]]
) -> Resumption:
    """Reads a run directory's last checkpoint and its logs for a resume, checking the logs
    against it; :meth:`Resumption.cut_logs` then takes the logs back to it.

    The logs are to be cut back to the checkpoint's offsets (to nothing without a checkpoint:
    a missing or ``null`` one, as after ``kill -9`` before the first), and the ledger's wall
    time resumes from it. Every recorded call goes to ``replies`` (per node, by request key)
    to be served again without calling the operator: those the checkpoint kept as logged, the
    later ones (paid for too) to be logged and charged anew. A paid reply is never lost: the
    ones the cut takes from ``calls.jsonl`` are first written to :data:`UNLOGGED_CALLS_FILE`.

    A torn last line (a crash mid-write) is cut back; any other damage (see
    :func:`check_logs`) is refused, naming the file and the byte offset. Nothing is changed
    here.

    Args:
        run_dir: The run.
        ledger: The run's new budget ledger.
        replies: Filled with the recorded calls.

    Raises:
        ConfigError: The checkpoint or a log is damaged.
    """
    checkpoint = run_dir.read_checkpoint()
    offsets = check_logs(run_dir.path, checkpoint, action="resume")
    kept, later = _read_log(run_dir.calls_path, offsets[CALLS_FILE], action="resume")
    # Events after the offset are cut unread (they hold nothing paid for); those before it
    # are what the resumed run counts on.
    _read_log(run_dir.events_path, offsets[EVENTS_FILE], after=False, action="resume")
    carried, _ = _read_log(run_dir.path / UNLOGGED_CALLS_FILE, None, action="resume")
    logged = {(call["node"], call["key"]) for call in kept}
    for call in kept:
        replies[call["node"]][call["key"]] = RecordedCall(record=call, logged=True)
    unlogged: dict[tuple[str, str], dict] = {}
    for call in [*carried, *later]:  # a later record of a key is the newer one
        if (call["node"], call["key"]) not in logged:
            unlogged[(call["node"], call["key"])] = call
    for (node, key), call in unlogged.items():
        replies[node][key] = RecordedCall(record=call, logged=False)
    if checkpoint is not None:
        wall = checkpoint.get("wall_seconds", 0.0)
        if isinstance(wall, bool) or not isinstance(wall, (int, float)):
            raise ConfigError(f"{run_dir.checkpoint_path} is damaged: wall_seconds is {wall!r}")
        ledger.resume_wall(wall)
    return Resumption(
        run_dir=run_dir, checkpoint=checkpoint, offsets=offsets, unlogged=list(unlogged.values())
    )


def check_logs(
    directory: Path, checkpoint: Mapping[str, Any] | None, *, action: str, complete: bool = False
) -> dict[str, int]:
    """Checks a run's logs against its checkpoint; returns the checkpoint's offsets (0 each
    without a checkpoint).

    Each log must hold at least the bytes the checkpoint says were written (exactly those with
    ``complete``: a finished node's logs end at its last checkpoint), its offset must fall at
    the end of a line, and those bytes must have the SHA-256 the checkpoint recorded
    (checkpoints from before digests were recorded have none). The lines themselves are
    checked by whoever reads them. Nothing is changed.

    Args:
        directory: The run directory.
        checkpoint: Its checkpoint (:func:`~dei_framework.runtime.files.run_files.read_checkpoint`).
        action: What is refused, for the message (``"resume"``, ``"merge"`` ...).
        complete: The logs must end at the checkpoint's offsets.

    Raises:
        ConfigError: A log disagrees with the checkpoint (naming the file and the offset).
    """
    offsets = _offsets(directory, checkpoint, action)
    digests = (checkpoint or {}).get("digests")
    for name, offset in offsets.items():
        path = directory / name
        size = path.stat().st_size if path.exists() else 0
        if complete and size != offset:
            raise ConfigError(
                f"{path} holds {size} bytes but its node's last checkpoint says "
                f"{offset} were written: the log was changed after the node "
                f"finished; refusing to {action}"
            )
        if not offset:
            continue
        with open(path, "rb") as handle:
            written = handle.read(offset)
        if not written.endswith(b"\n"):  # a checkpoint's offset is taken after a whole line
            raise ConfigError(
                f"{path} is damaged: byte {offset} (the checkpoint's offset) is "
                f"inside a line; refusing to {action}"
            )
        expected = digests.get(name) if isinstance(digests, dict) else None
        if expected is not None and f"sha256:{hashlib.sha256(written).hexdigest()}" != expected:
            raise ConfigError(
                f"{path} is damaged: its first {offset} bytes are not those the "
                "checkpoint recorded (their SHA-256 differs): the log was "
                f"changed after it was written; refusing to {action}"
            )
    return offsets


def _offsets(directory: Path, checkpoint: Mapping[str, Any] | None, action: str) -> dict[str, int]:
    """The checkpoint's log offsets (0 without one), each checked against its file."""
    where = directory / CHECKPOINT_FILE
    if checkpoint is None:
        return dict.fromkeys(LOGS, 0)
    offsets = {}
    for name in LOGS:
        value = checkpoint["offsets"].get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{where} is damaged: offset of {name} is {value!r}")
        size = (directory / name).stat().st_size if (directory / name).exists() else 0
        if value > size:
            raise ConfigError(
                f"{directory / name} holds {size} bytes but {where} says {value} "
                "were written: the log was cut or replaced (or the checkpoint "
                f"is damaged); refusing to {action}"
            )
        offsets[name] = value
    return offsets


def _read_log(
    path: Path, offset: int | None, *, action: str, after: bool = True
) -> tuple[list[dict], list[dict]]:
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
            raise ConfigError(
                f"{path} is damaged: byte {cut} (the checkpoint's offset) is "
                f"inside a line; refusing to {action}"
            )
    end_of_reading = len(data) if after else cut
    calls = path.name != EVENTS_FILE
    before: list[dict] = []
    later: list[dict] = []
    position = 0
    while position < end_of_reading:
        end = data.find(b"\n", position)
        if end < 0:  # the last line, cut short by a crash mid-write: the cut removes it
            torn = _record_or_none(data[position:])
            if after and calls and torn is not None and _is_call(torn):
                later.append(torn)  # all but its newline was written: a reply kept
            break
        record = _record_or_none(data[position:end])
        if record is None or (calls and not _is_call(record)):
            what = "a call record" if calls else "a JSON object"
            raise ConfigError(f"{damaged_line(path, position, what)}; refusing to {action}")
        (before if position < cut else later).append(record)
        position = end + 1
    return before, later


def _record_or_none(line: bytes) -> dict | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or not UTF-8
        return None
    return record if isinstance(record, dict) else None


def _is_call(record: dict) -> bool:
    return isinstance(record.get("node"), str) and isinstance(record.get("key"), str)


@contextlib.contextmanager
def restoring(run_dir: RunDir, what: str) -> Iterator[None]:
    """Restoring ``what`` from the checkpoint: a state it cannot be restored from (a key
    missing, a value of the wrong type) is a damaged checkpoint, refused in one line."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise damaged(
            run_dir.checkpoint_path,
            f"{what} cannot be restored from it ({type(exc).__name__}: {exc}); refusing to resume",
        ) from None


def finished_round_file(run_dir: RunDir, name: str, round_index: int) -> Path:
    """The file of a round the checkpoint says node ``name`` finished (it must exist: a round's
    file is written in the step that ends it, before any checkpoint can hold the round)."""
    path = run_dir.round_path(name, round_index)
    if not path.exists():
        raise ConfigError(
            f"{path} is missing: the checkpoint says node {name} finished "
            f"round {round_index}; refusing to resume"
        )
    return path


@attrs.frozen(kw_only=True)
class ReplayRecord:
    """What a replay serves from the recorded run besides its calls.

    Attributes:
        received: Per node, the champions it received, by round (``received`` events).
        lags: Per node, its scheduler's lag in the record.
    """

    received: dict[str, dict[int, list[dict]]]
    lags: dict[str, int]


def read_replay_record(record: RunDir, replies: dict[str, dict[str, RecordedCall]]) -> ReplayRecord:
    """Reads the recorded run a replay serves: its calls (into ``replies``, per node by request
    key), the champions each node received and each node's lag, the record's logs checked
    against its checkpoint first.

    Raises:
        ConfigError: The record has no checkpoint, or a file of it is damaged.
    """
    recorded = record.read_checkpoint()
    if recorded is None:
        raise ConfigError(
            f"{record.checkpoint_path} is missing (or null): a replay needs "
            "the recorded run's checkpoint (its lags and log offsets)"
        )
    check_logs(record.path, recorded, action="replay")
    for position, call in enumerate(read_jsonl(record.calls_path)):
        if not (isinstance(call.get("node"), str) and isinstance(call.get("key"), str)):
            raise damaged(record.calls_path, f"record {position} is not a call record")
        replies[call["node"]][call["key"]] = RecordedCall(record=call)
    received: dict[str, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for position, event in enumerate(read_jsonl(record.events_path)):
        if event.get("event") != EventKind.RECEIVED:
            continue
        if not (isinstance(event.get("node"), str) and isinstance(event.get("round"), int)):
            raise damaged(
                record.events_path,
                f"record {position} is a received event without its node and round",
            )
        received[event["node"]][event["round"]].append(event)
    lags = {}
    for name, state in recorded["nodes"].items():
        lag = state.get("lag")
        if isinstance(lag, bool) or not isinstance(lag, int) or lag < 0:
            raise damaged(record.checkpoint_path, f"node {name}'s lag is {lag!r}")
        lags[name] = lag
    return ReplayRecord(received=received, lags=lags)


def peer_reports(run_dir: RunDir, resumed: Resumption) -> list[RoundReport]:
    """The peers' round reports a resumed node process's decisions were made from: its
    ``allocation_report`` events before the checkpoint."""
    offset = resumed.offsets.get(EVENTS_FILE, 0)
    with open(run_dir.events_path, "rb") as handle:
        lines = handle.read(offset).splitlines()
    reports = []
    for line in lines:
        if b'"allocation_report"' in line:  # EventKind.ALLOCATION_REPORT, as written
            event = json.loads(line)
            if event.get("event") == EventKind.ALLOCATION_REPORT:
                with restoring(run_dir, "a peer's round report"):
                    reports.append(RoundReport.from_json(event))
    return reports
