"""A node in a process of its own (``dei node``): what it exchanges with its peers besides
champions, travelling with them on the transport.

A dynamic allocation's coordinator publishes the node's round reports and takes in its peers';
a money cap becomes the ensemble's (:mod:`~dei_framework.runtime.money_pool`), moved by signed
hand-overs. A node waits at a round start for the round's quota when an allocator decides it.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from dei_framework.contract.errors import ConfigError
from dei_framework.net.node import Node
from dei_framework.runtime.budget import BudgetLedger
from dei_framework.runtime.config import RunConfig
from dei_framework.runtime.money_pool import HANDOVER, MoneyPool
from dei_framework.search.allocation import AllocationCoordinator, RoundReport


def link_node_process(
    config: RunConfig,
    *,
    local: str | None,
    nodes: list[Node],
    allocation: AllocationCoordinator | None,
    ledger: BudgetLedger,
    record: Callable[[list[dict]], None],
    reports_out: set[asyncio.Task],
) -> MoneyPool | None:
    """Links a node process's allocation and money cap to its peers; returns the ensemble's
    money pool (``None``: all nodes in one process, or no money cap).

    Args:
        config: The run's configuration.
        local: The node this process runs (``None``: every node, nothing to link).
        nodes: The nodes this process runs.
        allocation: The run's allocator at work (``None``: a static split).
        ledger: The process's budget ledger.
        record: Logs events.
        reports_out: Round reports being sent, kept so that a finishing node waits for them.

    Raises:
        ConfigError: A dynamic allocation between processes with no transport to carry it.
    """
    if local is None or not nodes or nodes[0].transport is None:
        if allocation is not None and allocation.remote:
            raise ConfigError(
                f"--allocation {config.allocation} with nodes in "
                "processes of their own needs a transport that shares "
                "champions"
            )
        return None
    node = nodes[0]
    money = None
    # On the cost axis the money is the equal-compute budget: shares must not move.
    if config.max_cost_usd is not None and config.compute_axis != "cost":
        money = MoneyPool(
            ledger=ledger,
            node=node.name,
            nodes=config.node_names,
            limit=config.max_cost_usd,
            # A message's round is its number: every one has an id of its own.
            publish=lambda data: node.publish_report(data, data["seq"]),
            record=record,
            poll=node.poll,
        )

    def publish(report: RoundReport) -> None:
        task = asyncio.get_running_loop().create_task(
            node.publish_report(report.to_json(), report.round)
        )
        reports_out.add(task)
        task.add_done_callback(reports_out.discard)

    def received(data: Mapping[str, Any]) -> None:
        if data.get("kind") == HANDOVER:
            if money is not None:
                money.received(data)
            return
        if allocation is None:
            return
        try:
            report = RoundReport.from_json(data)
        except ValueError:
            node.inbox.dropped["malformed"] += 1
            return
        allocation.report_received(report)

    if allocation is not None:
        allocation.publish, allocation.poll = publish, node.poll
    node.on_report = received
    return money


def round_receiver(node: Node, allocation: AllocationCoordinator | None) -> Callable[[int], Any]:
    """What a node's driver calls at a round start: with a dynamic allocator, the round's
    quota is waited for (every node must have ended the round before) first."""
    if allocation is None:
        return node.receive_round

    async def receive(round_index: int) -> list:
        await allocation.quota(node.name, round_index)
        return await node.receive_round(round_index)

    return receive
