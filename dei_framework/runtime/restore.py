"""What a resume or a replay reads back while a run is assembled: node state restored from a
checkpoint (damage refused in one line), the round files it names, a replay's record, and the
peers' round reports a resumed node process decided from.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import attrs

from dei_framework.contract.errors import ConfigError
from dei_framework.contract.kinds import EventKind
from dei_framework.runtime.checkpoints import Resumption, check_logs
from dei_framework.runtime.replay import RecordedCall
from dei_framework.runtime.run_dir import RunDir, read_jsonl
from dei_framework.runtime.run_files import damaged
from dei_framework.runtime.run_layout import EVENTS_FILE
from dei_framework.search.allocation import RoundReport


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
