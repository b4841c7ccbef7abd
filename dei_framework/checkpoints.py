"""A run's checkpoint (``checkpoint.json``): taken between two awaits, read back on ``--resume``.

A checkpoint is every node's scheduler state (admitted state plus the items handed out and not
yet admitted), the budget ledger, the log offsets, the virtual-time timeline and the sharing
counters, taken together in one synchronous step, so that it is consistent with the run log at
any moment (docs/architecture.md, "Ask/tell").

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from dei_framework.budget import BudgetLedger
from dei_framework.node import Node
from dei_framework.runlog import RunDir, read_jsonl
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


def resume_from_checkpoint(run_dir: RunDir, ledger: BudgetLedger,
                           replies: dict[str, dict[str, RecordedCall]]) -> Resumption:
    """Takes a run directory back to its last checkpoint.

    The logs are cut back to the checkpoint's offsets (to nothing without a checkpoint), the
    ledger's wall time resumes from it, and every call of ``calls.jsonl`` goes to ``replies``
    (per node, by request key) to be served again without calling the operator.

    Args:
        run_dir: The run.
        ledger: The run's new budget ledger.
        replies: Filled with the recorded calls.
    """
    checkpoint = run_dir.read_checkpoint()
    if checkpoint is None:
        run_dir.truncate({"events.jsonl": 0, "calls.jsonl": 0})
        return Resumption()
    states = checkpoint["nodes"]
    postings = checkpoint.get("timeline", [])
    sharing_states = checkpoint.get("sharing", {})  # absent in older checkpoints
    offsets = checkpoint["offsets"]
    ledger.resume_wall(checkpoint.get("wall_seconds", 0.0))
    # Calls completed before the checkpoint are in its budget and log; calls after
    # it were paid for too: both are served again by key, the latter logged anew.
    kept = len(list(read_jsonl(run_dir.calls_path, limit=offsets["calls.jsonl"])))
    for index, call in enumerate(read_jsonl(run_dir.calls_path)):
        replies[call["node"]][call["key"]] = RecordedCall(record=call, logged=index < kept)
    run_dir.truncate(offsets)
    return Resumption(states=states, postings=postings, sharing_states=sharing_states)
