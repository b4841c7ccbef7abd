"""A node in a process of its own (``dei node``): what it exchanges with its peers besides
champions, travelling with them on the transport, and the ensemble-wide money cap.

A dynamic allocation's coordinator publishes the node's round reports and takes in its peers';
a money cap becomes the ensemble's (:class:`MoneyPool`), moved by signed hand-overs. A node
waits at a round start for the round's quota when an allocator decides it.

``--max-cost-usd X`` gives each of a run's ``N`` nodes a cap of ``X / N`` (the ledger holds
it, attempt by attempt, reservations included). In one process that is the whole story. With
one process per node (``dei node``, ``--transport axl``) the nodes also tell each other, with
their champions, where they stand, and money moves to where it is used:

* a node that finishes for good — its rounds done, its operator failed for good, or its money
  spent — lowers its cap to what it spent and hands the rest to the peers it has not heard
  finish, in equal parts; each raises its own cap by its part, once;
* a node whose next attempt does not fit its cap, while some peer still runs, does not stop:
  it says it is *starved* and waits for a hand-over; it stops (and finishes, handing over its
  crumbs) once every peer has finished or is starved too, or after ``MAX_STARVED_SECONDS``
  without a word from a running peer.

Money only moves from a finished node to running or starved ones, and a node's cap is lowered
to what it spent before it hands the rest over, so the caps never sum to more than ``X``: the
ensemble's bill stays within ``X`` whatever the timing, the losses or the failures (a part sent
to a node that finished meanwhile is spent by no one), as long as the members are honest: a
hand-over is signed by its sender's key, and a member that lies about what it left can raise
each peer's cap by at most ``X`` once. A node stopped by Ctrl-C hands nothing over (it may be
resumed) but tells its peers it stopped, and a resumed node starts again from its own
``X / N`` without the parts it had received.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from dei_framework.contract.errors import ConfigError
from dei_framework.contract.kinds import EventKind
from dei_framework.net.node import Node
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.config.run_config import RunConfig
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


#: The ``kind`` of a money message in a report envelope's payload.
HANDOVER = "money"
#: Longest wait of a starved node without a word from a running peer.
MAX_STARVED_SECONDS = 120.0


class MoneyPool:
    """Shares a run's money cap between node processes: hand-overs and starved waits.

    Args:
        ledger: The process's ledger (one node, with a money cap).
        node: The process's node.
        nodes: The run's nodes.
        limit: The run's money cap (``--max-cost-usd``): no hand-over can be larger.
        publish: Sends a money message to every peer (a report envelope's payload).
        record: Logs events (``money_handed``, ``money_received``, ``money_starved``).
        poll: Fetches what the peers sent (their money messages reach :meth:`received`); a
            node fetches only at round starts otherwise, and a starved one is mid-round.
        clock: Monotonic seconds (injectable for tests).
    """

    def __init__(
        self,
        *,
        ledger: BudgetLedger,
        node: str,
        nodes: Sequence[str],
        limit: float,
        publish: Callable[[dict[str, Any]], Awaitable[None]],
        record: Callable[[list[dict[str, Any]]], None],
        poll: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ledger = ledger
        self.node = node
        self.peers = [name for name in nodes if name != node]
        self.limit = limit
        self.publish = publish
        self.record = record
        self.poll = poll
        self.clock = clock
        #: What each peer last said: ``"running"`` (until it says otherwise), ``"starved"``
        #: or ``"finished"``.
        self.states: dict[str, str] = dict.fromkeys(self.peers, "running")
        #: USD received from each peer.
        self.received_usd: dict[str, float] = {}
        self._seq: dict[str, int] = {}
        self._sent = 0
        self._starved_since: float | None = None
        self._heard = clock()
        self._tasks: set[Any] = set()
        ledger.more_money = self._more_money
        ledger.on_starved = self._starved

    def _more_money(self, node: str) -> bool:
        """Whether a running peer may still hand money over (and the wait has not run out)."""
        self.poll()
        if not any(state == "running" for state in self.states.values()):
            return False
        return self.clock() - self._heard < MAX_STARVED_SECONDS

    def _starved(self, node: str, starved: bool) -> None:
        if starved == (self._starved_since is not None):
            return
        self._starved_since = self.clock() if starved else None
        if starved:
            self._heard = self.clock()
            self.record(
                [
                    {
                        "event": EventKind.MONEY_STARVED,
                        "node": node,
                        "cap_usd": self.ledger.caps[node].cost_usd,
                        "spent_usd": round(self.ledger.usage[node].cost_usd, 9),
                    }
                ]
            )
        self._send({"state": "starved" if starved else "running"})

    def _send(self, fields: dict[str, Any]) -> None:
        task = asyncio.get_running_loop().create_task(self._publish(fields))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _publish(self, fields: dict[str, Any]) -> None:
        self._sent += 1
        await self.publish({"kind": HANDOVER, "node": self.node, "seq": self._sent, **fields})

    async def finished(self, *, hand_over: bool = True) -> None:
        """This node makes no more calls. For good (``hand_over``): its cap becomes what it
        spent and the rest goes to the peers that have not finished. Stopped (Ctrl-C): its
        peers only learn that it stopped."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        left, to, part = 0.0, [], 0.0
        if hand_over and self.ledger.caps[self.node].cost_usd is not None:
            left = self.ledger.close_cost_cap(self.node)
            to = [peer for peer, state in self.states.items() if state != "finished"]
            # Whole nano-dollars, rounded down: the parts never sum to more than what was left.
            part = math.floor(left / len(to) * 1e9) / 1e9 if to else 0.0
            self.record(
                [
                    {
                        "event": EventKind.MONEY_HANDED,
                        "node": self.node,
                        "usd": round(left, 9),
                        "part_usd": part,
                        "to": to,
                    }
                ]
            )
        await self._publish({"state": "finished", "part_usd": part, "to": to})

    def received(self, data: Mapping[str, Any]) -> None:
        """A peer's money message: its state, and for a finished one, this node's part (a
        peer's second hand-over, or one above the run's whole cap, adds nothing)."""
        sender, state, seq = data.get("node"), data.get("state"), data.get("seq")
        if (
            sender not in self.peers
            or state not in ("running", "starved", "finished")
            or isinstance(seq, bool)
            or not isinstance(seq, int)
        ):
            return
        if self.states[sender] == "finished" or seq <= self._seq.get(sender, 0):
            return  # gossip does not keep order: an older word changes nothing
        self._seq[sender] = seq
        self.states[sender] = state
        self._heard = self.clock()
        part, to = data.get("part_usd"), data.get("to")
        if (
            state == "finished"
            and isinstance(to, list)
            and self.node in to
            and isinstance(part, (int, float))
            and not isinstance(part, bool)
            and math.isfinite(part)
            and 0 < part <= self.limit
            and sender not in self.received_usd
            and self.ledger.caps[self.node].cost_usd is not None
        ):
            self.received_usd[sender] = float(part)
            cap = self.ledger.raise_cost_cap(self.node, float(part))
            self.record(
                [
                    {
                        "event": EventKind.MONEY_RECEIVED,
                        "node": self.node,
                        "from": sender,
                        "usd": part,
                        "cap_usd": round(cap, 9),
                    }
                ]
            )
        else:
            self.ledger.wake()  # a starved node re-checks whether more may come
