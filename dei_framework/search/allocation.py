"""Budget allocation: how the run's budget is shared between its nodes, round by round.

The run's total on its compute axis never moves; what an allocator moves is each node's share
of the budget *left* at a round boundary. Two are built in (registered through the core's own
plugin, ``dei_budget_allocators``):

* ``static`` — today's equal split, fixed at the start (the default; a static run is exactly
  the run it was before allocators existed).
* ``bandit`` — a complementarity bandit. After every round each node is credited with the
  merged-archive cells it added (a cell no node held before that round; a cell several nodes
  reached in the same round is shared between them) plus its champions that hold a cell of a
  peer's archive at that round's end (they filled a gap the peer left: niche novelty, η), per
  call it spent. Discounted UCB turns the credits into shares: every node keeps a floor; the
  rest goes to the nodes whose upper confidence bound is above the best lower bound, in
  proportion to how far above. The decision is a pure function of the round archives and
  calls, so a seeded in-process run (virtual-time delivery) makes the same decisions run after
  run.

:class:`AllocationCoordinator` runs an allocator for the nodes of one process: a node starting
round ``r > 0`` waits until every live node has ended round ``r - 1``, and the first node there
has the decision made (once) and logged as an ``allocation`` event. Nodes on a timeline then
run on a round clock (every node's round ``r`` lasts one virtual second), so the round barrier
and virtual-time delivery wait for the same thing and cannot wait for each other.

The allocators themselves live in :mod:`~dei_framework.search._allocators`, the round reports
the coordinator decides from in :mod:`~dei_framework.search._round_reports`; their names are
importable from here too.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.kinds import EventKind
from dei_framework.contract.records import Candidate
from dei_framework.search._allocators import (
    ALLOCATORS,
    BUILTIN_ALLOCATORS,
    AllocationDecision,
    AllocatorFactory,
    AllocatorSpec,
    BanditAllocator,
    BudgetAllocator,
    RoundCredit,
    StaticAllocator,
    apportion,
)
from dei_framework.search._round_reports import (
    MAX_REPORT_CELLS,
    RoundReport,
    cell_key,
    report_credits,
)
from dei_framework.search.archives import ArchiveBase

__all__ = [
    "ALLOCATORS",
    "BUILTIN_ALLOCATORS",
    "MAX_REPORT_CELLS",
    "RESEND_SECONDS",
    "AllocationCoordinator",
    "AllocationDecision",
    "AllocationSettings",
    "AllocatorFactory",
    "AllocatorSpec",
    "BanditAllocator",
    "BudgetAllocator",
    "RoundCredit",
    "RoundReport",
    "StaticAllocator",
    "apportion",
    "cell_key",
    "check_allocation",
    "report_credits",
    "split_options",
    "Candidate",  # imported here before the module's parts moved out: still importable from it
]


class AllocationSettings(Protocol):
    """What :func:`check_allocation` reads of a run's configuration (a
    :class:`~dei_framework.runtime.config.run_config.RunConfig`, which this layer does not
    import)."""

    allocation: str
    compute_axis: str


#: Seconds between re-sends of a node's last report while it waits for its peers'.
RESEND_SECONDS = 2.0


class AllocationCoordinator:
    """Runs a dynamic allocator at round boundaries, for the nodes of one process.

    In one process every node's round ends here. With nodes in processes of their own, each
    process runs a coordinator for its own node and learns its peers' rounds from the
    :class:`RoundReport` each node publishes with its champions (``publish``; peers' arrive
    through :meth:`report_received`, fetched by ``poll``): every process then makes the same
    decision from the same reports. A node that has not heard from every live peer within
    ``wait_seconds`` (a partition, a crashed peer) keeps its quota of the round before (logged
    as ``"kept": true``).

    Args:
        allocator: The run's allocator (``dynamic``).
        nodes: The run's node names, in run order.
        rounds: Rounds of the run.
        limit: The run's total calls.
        spent: Returns the calls a local node has spent so far (the ledger's count).
        space: The run's descriptor space (see :meth:`RoundReport.from_archive`).
        apply: Called with ``(node, round, quota)`` once a local node's quota of a round is
            decided, before that node starts the round.
        record: Called with the run-log events of each decision (the ``allocation`` event,
            preceded, with peers, by the ``allocation_report`` events it was made from).
        local: The nodes of this process (default: all of ``nodes``).
        publish: Sends a local node's report to the peers (nodes in processes of their own).
        poll: Fetches what the peers sent (their reports reach :meth:`report_received`).
        wait_seconds: How long a node waits for its peers' reports at a round boundary.
    """

    def __init__(
        self,
        allocator: BudgetAllocator,
        *,
        nodes: Sequence[str],
        rounds: int,
        limit: int,
        spent: Callable[[str], int],
        space: DescriptorSpace,
        apply: Callable[[str, int, int], None],
        record: Callable[[list[dict[str, Any]]], None],
        local: Sequence[str] | None = None,
        publish: Callable[[RoundReport], Any] | None = None,
        poll: Callable[[], None] | None = None,
        wait_seconds: float = 600.0,
    ) -> None:
        self.allocator = allocator
        self.nodes = tuple(nodes)
        self.local = tuple(nodes if local is None else local)
        self.rounds = rounds
        self.limit = limit
        self.spent = spent
        self.space = space
        self.apply = apply
        self.record = record
        self.publish = publish
        self.poll = poll
        self.wait_seconds = wait_seconds
        self.history: list[dict[str, RoundCredit]] = []
        self.decisions: dict[int, dict[str, int]] = {}
        self._ended: dict[int, dict[str, RoundReport]] = {}
        self._final: dict[str, RoundReport] = {}
        self._known: set[str] = set()
        self._done: set[str] = set()
        self._changed = asyncio.Event()

    @property
    def remote(self) -> bool:
        """Whether some of the run's nodes are in other processes."""
        return len(self.local) < len(self.nodes)

    def first_round(self) -> dict[str, int]:
        """Round 0's quotas: the budget spread evenly over the rounds, split equally."""
        budget = self.limit // self.rounds
        quotas = apportion(budget, dict.fromkeys(self.nodes, 1.0), 0)
        self.decisions.setdefault(0, quotas)
        return quotas

    def restore(
        self,
        node: str,
        quotas: Mapping[int, int],
        ended: Mapping[int, tuple[ArchiveBase | Mapping[str, Any], int]],
        reports: Sequence[RoundReport] = (),
    ) -> None:
        """Puts back what a resumed node had: its quotas so far (from its checkpointed
        scheduler), the rounds it ended (their archives, or their round files' JSON, and
        calls) and the peers' reports its decisions were made from (logged before its
        checkpoint). Decisions already made are not made (nor logged) again; later ones are
        made from the same credits, recomputed from the same archives and reports."""
        for round_index, quota in quotas.items():
            self.decisions.setdefault(round_index, {})[node] = quota
        total = 0
        for round_index, (archive, calls) in sorted(ended.items()):
            total += calls
            self._ended.setdefault(round_index, {})[node] = RoundReport.from_archive(
                node, round_index, archive, calls, self.space, total=total
            )
        for report in reports:
            self._ended.setdefault(report.round, {})[report.node] = report

    def round_ended(self, node: str, round_index: int, archive: ArchiveBase, calls: int) -> None:
        """A local node ended a round: its archive and calls count for the next decision."""
        total = (
            sum(
                report.calls
                for r, ended in self._ended.items()
                if r < round_index
                for name, report in ended.items()
                if name == node
            )
            + calls
        )
        report = RoundReport.from_archive(
            node, round_index, archive, calls, self.space, total=total
        )
        self._ended.setdefault(round_index, {})[node] = report
        if self.publish is not None:
            self.publish(report)
        self._wake()

    def report_received(self, report: RoundReport) -> None:
        """A peer's report (the same report again, or one of a node of this process, is
        ignored)."""
        if (
            report.node not in self.nodes
            or report.node in self.local
            or report.round >= self.rounds + report.done
        ):
            return
        if report.done:
            self._done.add(report.node)
            self._final[report.node] = report
        else:
            self._ended.setdefault(report.round, {}).setdefault(report.node, report)
        self._wake()

    def finish(self, node: str) -> None:
        """A local node runs no more rounds (finished, stopped or failed): nobody waits for
        it; its peers are told, with what it spent in all."""
        self._done.add(node)
        if self.publish is not None:
            # Its round is the first it did not end: a peer that has its done report before
            # (gossip does not keep order) the report of its last round waits for that one.
            ended = [r for r, reports in self._ended.items() if node in reports]
            report = RoundReport(
                node=node,
                round=max(ended, default=-1) + 1,
                calls=0,
                total=self.spent(node),
                done=True,
            )
            self._final[node] = report
            self.publish(report)
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def quota(self, node: str, round_index: int) -> int:
        """Waits until round ``round_index``'s quotas can be decided, then gives ``node``'s."""
        if round_index == 0:
            return self.decisions.setdefault(0, self.first_round())[node]
        deadline = time.monotonic() + self.wait_seconds
        resend = time.monotonic() + RESEND_SECONDS
        while round_index not in self.decisions:
            if self.poll is not None:
                self.poll()
            if self._ready(round_index - 1):
                self._decide(round_index)
                break
            if self.poll is None:
                await self._changed.wait()
                continue
            now = time.monotonic()
            if now >= deadline:
                self._keep(round_index)
                break
            if now >= resend:
                # Gossip may lose a report, and a peer resumed from its checkpoint has lost
                # those that came after it: the nodes waiting at this boundary say again
                # where they are (a copy a peer has is dropped there).
                self._resend()
                resend = now + RESEND_SECONDS
            # Peers' reports come through the transport, which is fetched, not awaited.
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=0.2)
            except TimeoutError:
                pass
        return self.decisions[round_index].get(node, 0)

    def _resend(self) -> None:
        """Sends the local nodes' reports again from the round the furthest-behind live peer
        last reported (a peer resumed from its checkpoint may need them again)."""
        if self.publish is None:
            return
        peers = [node for node in self.nodes if node not in self.local and node not in self._done]
        latest = [
            max((r for r, ended in self._ended.items() if peer in ended), default=-1)
            for peer in peers
        ]
        since = min(latest, default=-1)
        for round_index, ended in sorted(self._ended.items()):
            if round_index >= since:
                for node in self.local:
                    if node in ended:
                        self.publish(ended[node])

    def _ready(self, previous: int) -> bool:
        """Whether every node that will still run has ended round ``previous``."""
        ended, final = self._ended.get(previous, {}), self._final
        return all(
            node in ended
            or (node in self._done and (node not in final or final[node].round <= previous))
            for node in self.nodes
        )

    def _spent(self, node: str, previous: int) -> int:
        """What a node had spent when it ended round ``previous``: the ledger's count in one
        process; with peers, its report's (the same figure in every process, whatever the
        node has done since)."""
        if not self.remote:
            return self.spent(node)
        report = self._ended.get(previous, {}).get(node)
        if report is None:
            report = self._final.get(node)  # it stopped before ending the round
        if report is not None:
            return report.total
        return max(
            (
                ended[node].total
                for r, ended in self._ended.items()
                if r <= previous and node in ended
            ),
            default=0,
        )

    def _decide(self, round_index: int) -> None:
        # Credits of every round up to the previous one, in order (each once).
        logged: list[dict[str, Any]] = []
        while len(self.history) < round_index:
            done = len(self.history)
            # In run order, not in the order the nodes happened to end the round.
            ended = [
                self._ended[done][node] for node in self.nodes if node in self._ended.get(done, {})
            ]
            if self.remote:  # a resumed process makes later decisions from the same reports
                logged += [
                    {"event": EventKind.ALLOCATION_REPORT, **report.to_json()}
                    for report in ended
                    if report.node not in self.local
                ]
            self.history.append(report_credits(ended, self._known))
        # A node that stopped early gets nothing more; what it left goes to the others. With
        # peers, a node that ended the round before is live whenever its peers learn that it
        # stopped since: every process then decides for the same nodes.
        previous = self._ended.get(round_index - 1, {})
        live = [
            node
            for node in self.nodes
            if node not in self._done or (self.remote and node in previous)
        ]
        spent = {node: self._spent(node, round_index - 1) for node in self.nodes}
        left = self.limit - sum(spent.values())
        rounds_left = self.rounds - round_index
        budget = max(0, left // rounds_left) if rounds_left > 0 else 0
        decision = (
            self.allocator.decide(round_index, budget, self.history, live)
            if live
            else AllocationDecision(quotas={})
        )
        quotas = {node: int(decision.quotas.get(node, 0)) for node in live}
        if sum(quotas.values()) != budget and live:
            raise RuntimeError(
                f"allocator {self.allocator.name!r} gave {sum(quotas.values())} "
                f"calls for round {round_index}, not its budget {budget}"
            )
        self.decisions[round_index] = quotas
        for node, quota in quotas.items():
            if node in self.local:
                self.apply(node, round_index, quota)
        self.record(
            [
                *logged,
                {
                    "event": EventKind.ALLOCATION,
                    "round": round_index,
                    "allocator": self.allocator.name,
                    "budget": budget,
                    "budget_left": left,
                    "quotas": quotas,
                    "spent_so_far": spent,
                    "credits": {
                        node: credit.to_json() for node, credit in self.history[-1].items()
                    },
                    **dict(decision.inputs),
                },
            ]
        )

    def _keep(self, round_index: int) -> None:
        """No word from some live peer in time: the local nodes keep their last quotas."""
        ended = self._ended.get(round_index - 1, {})
        missing = [node for node in self.nodes if node not in ended and node not in self._done]
        last = self.decisions.get(round_index - 1, {})
        quotas = {node: int(last.get(node, 0)) for node in self.local if node not in self._done}
        self.decisions.setdefault(round_index, {}).update(quotas)
        for node, quota in quotas.items():
            self.apply(node, round_index, quota)
        self.record(
            [
                {
                    "event": EventKind.ALLOCATION,
                    "round": round_index,
                    "allocator": self.allocator.name,
                    "kept": True,
                    "quotas": quotas,
                    "missing": missing,
                }
            ]
        )


def split_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], float]:
    """The ``[allocation_options]`` table split into the allocator's options and the
    coordinator's ``peer_wait``: seconds a node in a process of its own waits at a round
    boundary for its peers' reports (default 600).

    Raises:
        ConfigError: ``peer_wait`` is not a positive number.
    """
    options = dict(options)
    value = options.pop("peer_wait", 600.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(
            f"allocation option peer_wait must be a positive number of seconds, got {value!r}"
        )
    return options, float(value)


def check_allocation(config: AllocationSettings) -> None:
    """Refuses a dynamic allocator where it cannot hold its promises.

    Args:
        config: The run's :class:`~dei_framework.runtime.config.run_config.RunConfig`.

    Raises:
        ConfigError: one line saying what is not supported and what is.
    """
    name = config.allocation
    if config.compute_axis != "calls":
        raise ConfigError(
            f"--allocation {name} moves calls; with --compute-axis "
            f"{config.compute_axis} use --allocation static"
        )
