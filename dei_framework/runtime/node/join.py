"""Joining a run of one process per node (``dei-run --transport axl``, ``dei node``) into one
run directory, as if its nodes had run in one process.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from dei_framework.contract.run_summary import RunSummary
from dei_framework.plugin.manager import PluginRegistry
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.builders import build_domain_parts, new_evaluator
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.files.run_dir import RunDir, write_json_atomic
from dei_framework.runtime.files.run_layout import CALLS_FILE, EVENTS_FILE, MERGED_ARCHIVE_FILE
from dei_framework.runtime.merge import join_processes
from dei_framework.runtime.summary import EventTally, run_summary


def merge_node_processes(
    config: RunConfig,
    run_dir: RunDir,
    registry: PluginRegistry,
    extra: Mapping[str, Mapping[str, Any]] | None = None,
) -> RunSummary:
    """Joins the node processes' directories (``processes/<node>/``) into ``run_dir``.

    Events and calls are concatenated node by node and round files copied; the summary is
    computed as an in-memory run's is, from each process's summary, or, for a node whose
    process ended without one, from its last checkpoint (and marked ``stopped``).

    Args:
        config: The run's configuration.
        run_dir: The run directory holding ``processes/``.
        registry: The loaded plugins.
        extra: Per node, fields added to its summary entry (a launcher's process ids ...);
            a process's own ``pid`` wins over one given here.

    Returns:
        The summary (also written to ``summary.json``).
    """
    base = build_domain_parts(config, registry, config.node_names)
    config, merge = base.config, base.merge
    joined = join_processes(config, run_dir, merge, extra)
    nodes, wall = joined.nodes, joined.wall_seconds
    if config.common_ground:
        merge.merge_common_ground(
            partial(new_evaluator, config, base.domain, registry),
            config.common_seeds,
            nodes,
            joined.champions,
        )
    run_dir.replace_jsonl(EVENTS_FILE, joined.events)
    run_dir.replace_jsonl(CALLS_FILE, joined.calls)
    ledger = BudgetLedger.from_json(
        {
            "nodes": joined.budget_nodes,
            "wall_seconds": wall,
            "axis": config.compute_axis,
            "attempts_per_call": config.max_attempts_per_call,
        }
    )
    budget = {**ledger.to_json(), "wall_seconds": round(wall, 3)}
    summary = run_summary(
        config, base.domain, merge, nodes, budget, EventTally(base.space, joined.events)
    )
    write_json_atomic(run_dir.path / MERGED_ARCHIVE_FILE, merge.merged_entries, layout="records")
    run_dir.write_config(config.to_json())
    run_dir.write_summary(summary)
    registry.notify("dei_run_finished", run_dir=str(run_dir.path), summary=summary)
    return summary
