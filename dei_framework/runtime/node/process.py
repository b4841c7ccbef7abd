"""One node process's directory (``processes/<node>/``) read and checked: its summary, last
checkpoint, round files and logs, refused when its logs are incomplete or damaged.

:func:`dei_framework.runtime.merge.join_processes` reads every node's this way before it
merges anything.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from dei_framework.contract.errors import ConfigError
from dei_framework.contract.kinds import EventKind
from dei_framework.contract.run_summary import RunSummary
from dei_framework.runtime.files import run_layout
from dei_framework.runtime.files.checkpoints import check_logs
from dei_framework.runtime.files.run_dir import read_jsonl
from dei_framework.runtime.files.run_files import (
    damaged,
    read_checkpoint,
    read_round,
    read_run_summary,
)
from dei_framework.runtime.files.run_layout import (
    CALLS_FILE,
    CHECKPOINT_FILE,
    EVENTS_FILE,
    SUMMARY_FILE,
)


@attrs.frozen(kw_only=True)
class NodeProcess:
    """What one node process wrote (``processes/<node>/``), read and checked by
    :func:`read_node_process`.

    Attributes:
        path: Its directory.
        summary: Its ``summary.json`` (``None``: the process ended without finishing).
        checkpoint: Its last checkpoint (``None``: it never took one).
        rounds: Its round files, round 0 first: each path with its content.
        events: Its ``events.jsonl`` records.
        calls: Its ``calls.jsonl`` records.
    """

    path: Path
    summary: RunSummary | None
    checkpoint: dict[str, Any] | None
    rounds: list[tuple[Path, dict[str, Any]]]
    events: list[dict]
    calls: list[dict]


def read_node_process(source: Path, name: str) -> NodeProcess:
    """Reads node ``name``'s process directory, checking that its logs are complete.

    A process that finished (it has ``summary.json``) must have a checkpoint its logs end at
    exactly (its last), every round its summary counts has its file and its ``round`` event,
    and its logs hold the evaluations and replies its summary counts. A process that ended
    without a summary needs only logs that agree with its last checkpoint as far as it goes.
    A missing directory is a process that never started: nothing is read.

    Raises:
        ConfigError: A file is damaged, or the logs are incomplete (naming the file and what
            disagrees).
    """
    if not source.is_dir():
        return NodeProcess(
            path=source, summary=None, checkpoint=None, rounds=[], events=[], calls=[]
        )
    summary_path = source / SUMMARY_FILE
    summary = read_run_summary(summary_path) if summary_path.exists() else None
    if summary is not None and name not in summary.nodes:
        raise damaged(summary_path, f"it holds no node {name}")
    checkpoint = read_checkpoint(source / CHECKPOINT_FILE)
    if summary is not None and checkpoint is None:
        raise ConfigError(
            f"{source / CHECKPOINT_FILE} is missing: node {name} finished, so "
            "its last checkpoint is what its logs are checked against; refusing "
            "to merge"
        )
    check_logs(source, checkpoint, action="merge", complete=summary is not None)
    events = list(read_jsonl(source / EVENTS_FILE))
    calls = list(read_jsonl(source / CALLS_FILE))
    if summary is not None:
        count = summary.nodes[name].rounds_completed
        paths = [run_layout.round_path(source, name, index) for index in range(count)]
    else:
        paths = run_layout.round_paths(source, name)
    rounds = []
    for path in paths:
        if not path.exists():
            raise ConfigError(
                f"{path} is missing: {summary_path} says node {name} finished "
                f"{len(paths)} rounds; refusing to merge"
            )
        rounds.append((path, read_round(path)))
    if summary is not None:
        _check_counts(source, name, summary, events, calls)
    return NodeProcess(
        path=source,
        summary=summary,
        checkpoint=checkpoint,
        rounds=rounds,
        events=events,
        calls=calls,
    )


def _check_counts(
    source: Path, name: str, summary: RunSummary, events: list[dict], calls: list[dict]
) -> None:
    """A finished node's logs hold what its summary counts: its evaluations and rounds in
    ``events.jsonl``, its replies in ``calls.jsonl`` (none are logged on the array path)."""
    node = summary.nodes[name]
    counts = [
        (
            EVENTS_FILE,
            "evaluations",
            sum(e.get("event") == EventKind.EVALUATED for e in events),
            summary.evaluated,
        ),
        (
            EVENTS_FILE,
            "round events",
            sum(e.get("event") == EventKind.ROUND for e in events),
            node.rounds_completed,
        ),
    ]
    if not node.array_path:
        replies = sum(c.get("node") == name and "reply" in c for c in calls)
        counts.append((CALLS_FILE, "replies", replies, node.calls))
    for file, what, found, counted in counts:
        if counted is not None and found != counted:
            raise ConfigError(
                f"{source / file} holds {found} {what} of node {name} but "
                f"{source / SUMMARY_FILE} counts {counted}: the node's log is "
                "incomplete; refusing to merge"
            )
