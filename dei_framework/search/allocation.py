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

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.records import Candidate
from dei_framework.search.archives import ArchiveBase


class AllocationSettings(Protocol):
    """What :func:`check_allocation` reads of a run's configuration (a
    :class:`~dei_framework.runtime.config.RunConfig`, which this layer does not import)."""

    allocation: str
    compute_axis: str

#: An operator-made elite's id ends with its call slot (``node-0-r2-s17``).
_CALL_ID = re.compile(r"-r\d+-s\d+$")
#: A received champion evaluated by its receiver (``node-1-r2-p0``).
_PEER_ID = re.compile(r"-r\d+-p\d+$")


@attrs.frozen(kw_only=True)
class RoundCredit:
    """What one node did for the merged archive in one round.

    Attributes:
        spent: Calls the node spent in the round.
        new_cells: Merged-archive cells it added (shared ones split between their finders).
        landed: Its champions holding a cell of a peer's archive at the round's end.
    """

    spent: int
    new_cells: float
    landed: int

    def to_json(self) -> dict[str, Any]:
        return {"spent": self.spent, "new_cells": round(self.new_cells, 6),
                "landed": self.landed}  # fmt: skip


@attrs.frozen(kw_only=True)
class AllocationDecision:
    """The calls of one round, node by node, and why.

    Attributes:
        quotas: Calls each node may make in the round.
        inputs: What the allocator decided from (rewards, confidence bounds, shares ...),
            logged with the decision.
    """

    quotas: Mapping[str, int]
    inputs: Mapping[str, Any] = attrs.field(factory=dict)


@runtime_checkable
class BudgetAllocator(Protocol):
    """Decides each node's calls of a round from what the earlier rounds gave.

    Attributes:
        name: The allocator's registered name.
        dynamic: ``False`` for an allocator that keeps the equal split fixed at the start
            (the core then runs exactly as without an allocator).
    """

    name: str
    dynamic: bool

    def decide(
        self,
        round_index: int,
        budget: int,
        history: Sequence[Mapping[str, RoundCredit]],
        nodes: Sequence[str],
    ) -> AllocationDecision:
        """The calls of round ``round_index``.

        Args:
            round_index: The round about to start (``>= 1``).
            budget: Calls the round may use in total, across ``nodes``.
            history: Per earlier round, each node's :class:`RoundCredit`.
            nodes: The live nodes, in run order: the decision must give each a quota and
                spend ``budget`` exactly.
        """


#: ``factory(options)`` builds the run's allocator from the ``[allocation_options]`` table.
AllocatorFactory = Callable[[Mapping[str, Any]], BudgetAllocator]


@attrs.frozen(kw_only=True)
class AllocatorSpec:
    """A budget allocator a plugin registers through ``dei_budget_allocators``.

    Attributes:
        name: What users type after ``--allocation``.
        factory: ``factory(options)`` builds the run's allocator; ``options`` is a
            :class:`~dei_framework.contract.context.FactoryContext`, the mapping of the
            ``[allocation_options]`` table with the run's plugins and seed.
        description: One line for ``dei plugins``.
    """

    name: str
    factory: AllocatorFactory
    description: str = ""


@attrs.frozen
class StaticAllocator:
    """The equal split fixed at the start (the default)."""

    name: str = "static"
    dynamic: bool = False

    def decide(
        self,
        round_index: int,
        budget: int,
        history: Sequence[Mapping[str, RoundCredit]],
        nodes: Sequence[str],
    ) -> AllocationDecision:
        return AllocationDecision(quotas=apportion(budget, dict.fromkeys(nodes, 1.0), 0))


@attrs.frozen(kw_only=True)
class BanditAllocator:
    """Discounted UCB over complementarity rewards, with a floor per node.

    A node's reward of a round is its round credit (new merged cells plus ``landing_weight``
    per champion holding a peer's cell) per call it spent; its mean is the average of its
    rounds' rewards discounted by ``discount`` per round of age (the archive fills, so old
    rewards say less; each round counts the same whatever the node spent in it). With
    ``n_i`` the node's discounted calls, ``N`` their sum and ``m`` the nodes' mean reward, its
    bounds are ``mean_i ± c m sqrt(ln N / n_i)`` (rewards shrink as the archive fills;
    bounds in units of ``m`` keep ``c``'s meaning). Every node first gets ``floor`` times an
    equal share of the round's calls (so none starves, and each keeps being measured); the
    rest goes to the nodes that may still be the best (``UCB_i >= max_j LCB_j``), in
    proportion to their ``UCB_i``. No random draws: the decision is a function of the history
    alone.

    Attributes:
        discount: Weight of a round's reward per round of age (``gamma``, in ``(0, 1]``).
        c: Width of the confidence bounds, in units of the nodes' mean reward per call.
        floor: Each node's minimum, as a fraction of an equal share (in ``[0, 1]``).
        landing_weight: Credit per own champion holding a peer's cell at a round's end.
    """

    name: str = "bandit"
    dynamic: bool = True
    discount: float = 0.7
    c: float = 1.0
    floor: float = 0.25
    landing_weight: float = 0.5

    def decide(
        self,
        round_index: int,
        budget: int,
        history: Sequence[Mapping[str, RoundCredit]],
        nodes: Sequence[str],
    ) -> AllocationDecision:
        # Per node: the discounted sum of its rounds' rewards per call and of their weights,
        # and its discounted calls. Each round weighs the same whatever the node spent in it,
        # so a node held at its floor is judged by what its few calls do now, not by what
        # its many calls did rounds ago.
        rates = dict.fromkeys(nodes, 0.0)
        weights_sum = dict.fromkeys(nodes, 0.0)
        calls = dict.fromkeys(nodes, 0.0)
        last: dict[str, float | None] = dict.fromkeys(nodes, None)
        for age, credits in enumerate(reversed(history)):
            weight = self.discount**age
            for node in nodes:
                credit = credits.get(node)
                if credit is None or credit.spent <= 0:
                    continue
                reward = (credit.new_cells + self.landing_weight * credit.landed) / credit.spent
                rates[node] += weight * reward
                weights_sum[node] += weight
                calls[node] += weight * credit.spent
                if age == 0:
                    last[node] = reward
        total = sum(calls.values())
        mean, upper, lower = {}, {}, {}
        for node in nodes:
            if calls[node] > 0:
                mean[node] = rates[node] / weights_sum[node]
        # New cells per call fall as the merged archive fills: the bounds are widened in
        # units of the ensemble's own reward per call, so ``c`` means the same early and late.
        scale = sum(mean.values()) / len(mean) if mean else 0.0
        for node in nodes:
            if calls[node] <= 0:  # never measured: as promising as can be
                mean[node], upper[node], lower[node] = 0.0, math.inf, -math.inf
                continue
            width = self.c * scale * math.sqrt(math.log(max(total, math.e)) / calls[node])
            upper[node], lower[node] = mean[node] + width, mean[node] - width
        # A node whose upper bound is below the best lower bound is confidently worse than
        # another: it keeps its floor only. The others share the rest by their upper bounds
        # (optimism: an uncertain node gets the benefit of the doubt), so nodes that cannot
        # be told apart get close shares instead of taking turns.
        best_lower = max(lower.values())
        weights = {node: upper[node] if upper[node] >= best_lower else 0.0 for node in nodes}
        if any(math.isinf(w) for w in weights.values()):
            weights = {node: float(math.isinf(w)) for node, w in weights.items()}
        floor_calls = int(self.floor * budget / len(nodes)) if nodes else 0
        quotas = apportion(budget, weights, floor_calls)
        inputs = {
            "reward": {node: _rounded(last[node]) for node in nodes},
            "mean": {node: _rounded(mean[node]) for node in nodes},
            "ucb": {node: _rounded(upper[node]) for node in nodes},
            "lcb": {node: _rounded(lower[node]) for node in nodes},
            "weight": {node: _rounded(weights[node]) for node in nodes},
            "floor_calls": floor_calls,
            "share": {node: round(quotas[node] / budget, 6) if budget else 0.0
                      for node in nodes},
        }  # fmt: skip
        return AllocationDecision(quotas=quotas, inputs=inputs)


def _rounded(value: float | None) -> float | None:
    """A figure for the log: finite and rounded (an unmeasured node's bound is ``None``)."""
    if value is None or not math.isfinite(value):
        return None
    return round(value, 6)


def apportion(budget: int, weights: Mapping[str, float], floor: int) -> dict[str, int]:
    """Splits ``budget`` whole calls: ``floor`` each, the rest in proportion to ``weights``.

    Largest remainders, ties to the node listed first, so the split is exact (it sums to
    ``budget``) and the same on every machine. All-zero weights split the rest equally.

    Example:
        >>> apportion(10, {"a": 1.0, "b": 0.0, "c": 3.0}, 1)
        {'a': 3, 'b': 1, 'c': 6}
    """
    nodes = list(weights)
    if not nodes:
        return {}
    floor = max(0, min(floor, budget // len(nodes)))
    rest = budget - floor * len(nodes)
    total = sum(weights.values())
    if total <= 0:
        weights, total = dict.fromkeys(nodes, 1.0), float(len(nodes))
    exact = {node: rest * weights[node] / total for node in nodes}
    quotas = {node: floor + math.floor(exact[node]) for node in nodes}
    left = budget - sum(quotas.values())
    ranked = sorted(nodes, key=lambda n: (-(exact[n] - math.floor(exact[n])), nodes.index(n)))
    for node in ranked[:left]:
        quotas[node] += 1
    return quotas


def _number(name: str, options: Mapping[str, Any], key: str, default: float, *,
            low: float, high: float, open_low: bool = False) -> float:  # fmt: skip
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"allocation {name}: {key} must be a number, got {value!r}")
    if value > high or value < low or (open_low and value == low):
        bound = "(" if open_low else "["
        raise ConfigError(f"allocation {name}: {key} must be within {bound}{low:g}, {high:g}], "
                          f"got {value!r}")  # fmt: skip
    return float(value)


def _bandit(options: Mapping[str, Any]) -> BudgetAllocator:
    known = {"discount", "c", "floor", "landing_weight"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"allocation bandit: unknown options {unknown}; known: "
                          f"{', '.join(sorted(known))}")  # fmt: skip
    return BanditAllocator(
        discount=_number("bandit", options, "discount", 0.7, low=0.0, high=1.0, open_low=True),
        c=_number("bandit", options, "c", 1.0, low=0.0, high=math.inf),
        floor=_number("bandit", options, "floor", 0.25, low=0.0, high=1.0),
        landing_weight=_number("bandit", options, "landing_weight", 0.5, low=0.0, high=math.inf),
    )


#: The allocators the core itself registers (through its built-in plugin).
BUILTIN_ALLOCATORS = (
    AllocatorSpec(name="static", factory=lambda options: StaticAllocator(),
                  description="equal shares fixed at the start (the default)"),
    AllocatorSpec(name="bandit", factory=_bandit,
                  description="shares of the budget left move each round to the nodes that "
                              "add merged-archive cells per call (discounted UCB, a floor per "
                              "node; options discount, c, floor, landing_weight)"),
)  # fmt: skip


#: Seconds between re-sends of a node's last report while it waits for its peers'.
RESEND_SECONDS = 2.0
#: Most cells one round report may list (the wire bound of a report: a few hundred KB).
MAX_REPORT_CELLS = 20_000


@attrs.frozen(kw_only=True)
class RoundReport:
    """What the allocation needs to know of one node's round: its archive's cells at the
    round's end and the calls it spent. In one process it is made from the node's archive; a
    node in a process of its own publishes it with its champions, so that every node makes the
    same decision from the same reports.

    Attributes:
        node: The node's name.
        round: The round it ended.
        calls: Calls it spent in the round.
        total: Calls it had spent in all, at the round's end.
        found: Cells (see :func:`cell_key`) of elites its own calls made, in archive order.
        held: Cells of its other elites (initial programs, received champions).
        landed: Per sender: that peer's champions holding a cell of this node's archive.
        done: The node runs no more rounds (finished, stopped or failed); ``round`` is then
            the first round it did not end, and ``total`` all it spent.
    """

    node: str
    round: int
    calls: int
    total: int
    found: tuple[str, ...] = ()
    held: tuple[str, ...] = ()
    landed: Mapping[str, int] = attrs.field(factory=dict)
    done: bool = False

    @classmethod
    def from_archive(
        cls,
        node: str,
        round_index: int,
        archive: ArchiveBase | Mapping[str, Any],
        calls: int,
        space: DescriptorSpace,
        *,
        total: int = 0,
    ) -> RoundReport:
        """The report of a node's round from its archive at the round's end (or the archive's
        JSON, from a round file)."""
        found: list[str] = []
        held: list[str] = []
        landed: dict[str, int] = {}
        for elite in _elites(archive):
            cell = cell_key(_merged_cell(elite, node, space))
            if _CALL_ID.search(elite.id or ""):
                found.append(cell)
                continue
            held.append(cell)
            if _PEER_ID.search(elite.id or "") and (elite.operator or "").startswith("peer:"):
                sender = elite.operator.removeprefix("peer:")
                landed[sender] = landed.get(sender, 0) + 1
        return cls(node=node, round=round_index, calls=int(calls), total=int(total),
                   found=tuple(found), held=tuple(held), landed=landed)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "round": self.round, "calls": self.calls,
                "total": self.total, "found": list(self.found), "held": list(self.held),
                "landed": dict(self.landed), "done": self.done}  # fmt: skip

    @classmethod
    def from_json(cls, data: Any) -> RoundReport:
        """Reads :meth:`to_json` output, checking every field (it may come from a peer).

        Raises:
            ValueError: A field is missing, of the wrong type or out of bounds.
        """
        if not isinstance(data, Mapping):
            raise ValueError("a round report is a JSON object")

        def number(key: str) -> int:
            value = data.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**12:
                raise ValueError(f"round report: {key} is {value!r}")
            return value

        def cells(key: str) -> tuple[str, ...]:
            value = data.get(key)
            if not isinstance(value, list) or len(value) > MAX_REPORT_CELLS or not all(
                isinstance(cell, str) and len(cell) <= 256 for cell in value
            ):
                raise ValueError(f"round report: {key} is not a list of cells")
            return tuple(value)

        landed = data.get("landed")
        if not isinstance(landed, Mapping) or len(landed) > 1024 or not all(
            isinstance(k, str) and len(k) <= 64 and isinstance(v, int) and not isinstance(v, bool)
            and 0 <= v <= MAX_REPORT_CELLS for k, v in landed.items()
        ):  # fmt: skip
            raise ValueError("round report: landed is not a map of sender to count")
        node = data.get("node")
        if not isinstance(node, str) or not node or len(node) > 64:
            raise ValueError(f"round report: node is {node!r}")
        if not isinstance(data.get("done"), bool):
            raise ValueError(f"round report: done is {data.get('done')!r}")
        return cls(node=node, round=number("round"), calls=number("calls"),
                   total=number("total"), found=cells("found"), held=cells("held"),
                   landed=dict(landed), done=data["done"])  # fmt: skip


def cell_key(cell: Any) -> str:
    """A merged-archive cell as a short string: ``"3,4"``, or ``"node-0/3,4"`` for a cell of
    a node's own axes (same cell, same string, in every process)."""
    if cell and isinstance(cell[0], str):
        return f"{cell[0]}/{','.join(map(str, cell[1]))}"
    return ",".join(map(str, cell))


def report_credits(reports: Sequence[RoundReport], known: set[str]) -> dict[str, RoundCredit]:
    """Each node's credit for one round, from the nodes' reports of that round (in run order).

    Args:
        reports: One report per node that ended the round.
        known: The merged archive's cells before the round; updated with the round's cells.
    """
    finders: dict[str, list[str]] = {}
    names = {report.node for report in reports}
    landed = dict.fromkeys((report.node for report in reports), 0)
    reached: set[str] = set()
    for report in reports:
        reached.update(report.held)
        for cell in report.found:
            reached.add(cell)
            if cell not in known:
                finders.setdefault(cell, [])
                if report.node not in finders[cell]:
                    finders[cell].append(report.node)
        for sender, count in report.landed.items():
            if sender in names and sender != report.node:
                landed[sender] += count
    new_cells = dict.fromkeys(landed, 0.0)
    for nodes in finders.values():
        for node in nodes:
            new_cells[node] += 1.0 / len(nodes)
    known.update(reached)
    return {report.node: RoundCredit(spent=report.calls, new_cells=new_cells[report.node],
                                     landed=landed[report.node]) for report in reports}  # fmt: skip


def _elites(archive: ArchiveBase | Mapping[str, Any]) -> Iterable[Candidate]:
    """An archive's elites, from the archive or its JSON (a round file read on resume)."""
    if isinstance(archive, Mapping):
        return [Candidate.from_json(elite) for elite in archive["elites"]]
    return archive


def _merged_cell(elite: Any, node: str, space: DescriptorSpace) -> Any:
    try:
        return space.cell(elite.descriptor)
    except KeyError:  # an array-path elite keeps its node's own axes only
        return (node, tuple(elite.cell))


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
                node, round_index, archive, calls, self.space, total=total)
        for report in reports:
            self._ended.setdefault(report.round, {})[report.node] = report

    def round_ended(self, node: str, round_index: int, archive: ArchiveBase, calls: int) -> None:
        """A local node ended a round: its archive and calls count for the next decision."""
        total = sum(report.calls for r, ended in self._ended.items() if r < round_index
                    for name, report in ended.items() if name == node) + calls  # fmt: skip
        report = RoundReport.from_archive(node, round_index, archive, calls, self.space,
                                          total=total)  # fmt: skip
        self._ended.setdefault(round_index, {})[node] = report
        if self.publish is not None:
            self.publish(report)
        self._wake()

    def report_received(self, report: RoundReport) -> None:
        """A peer's report (the same report again, or one of a node of this process, is
        ignored)."""
        if (report.node not in self.nodes or report.node in self.local
                or report.round >= self.rounds + report.done):  # fmt: skip
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
            report = RoundReport(node=node, round=max(ended, default=-1) + 1, calls=0,
                                 total=self.spent(node), done=True)  # fmt: skip
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
        latest = [max((r for r, ended in self._ended.items() if peer in ended), default=-1)
                  for peer in peers]  # fmt: skip
        since = min(latest, default=-1)
        for round_index, ended in sorted(self._ended.items()):
            if round_index >= since:
                for node in self.local:
                    if node in ended:
                        self.publish(ended[node])

    def _ready(self, previous: int) -> bool:
        """Whether every node that will still run has ended round ``previous``."""
        ended, final = self._ended.get(previous, {}), self._final
        return all(node in ended or (node in self._done and (node not in final
                                                            or final[node].round <= previous))
                   for node in self.nodes)  # fmt: skip

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
        return max((ended[node].total for r, ended in self._ended.items()
                    if r <= previous and node in ended), default=0)  # fmt: skip

    def _decide(self, round_index: int) -> None:
        # Credits of every round up to the previous one, in order (each once).
        logged: list[dict[str, Any]] = []
        while len(self.history) < round_index:
            done = len(self.history)
            # In run order, not in the order the nodes happened to end the round.
            ended = [self._ended[done][node] for node in self.nodes
                     if node in self._ended.get(done, {})]  # fmt: skip
            if self.remote:  # a resumed process makes later decisions from the same reports
                logged += [{"event": "allocation_report", **report.to_json()}
                           for report in ended if report.node not in self.local]  # fmt: skip
            self.history.append(report_credits(ended, self._known))
        # A node that stopped early gets nothing more; what it left goes to the others. With
        # peers, a node that ended the round before is live whenever its peers learn that it
        # stopped since: every process then decides for the same nodes.
        previous = self._ended.get(round_index - 1, {})
        live = [node for node in self.nodes
                if node not in self._done or (self.remote and node in previous)]  # fmt: skip
        spent = {node: self._spent(node, round_index - 1) for node in self.nodes}
        left = self.limit - sum(spent.values())
        rounds_left = self.rounds - round_index
        budget = max(0, left // rounds_left) if rounds_left > 0 else 0
        decision = (self.allocator.decide(round_index, budget, self.history, live)
                    if live else AllocationDecision(quotas={}))  # fmt: skip
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
        self.record([*logged, {
            "event": "allocation", "round": round_index, "allocator": self.allocator.name,
            "budget": budget, "budget_left": left, "quotas": quotas, "spent_so_far": spent,
            "credits": {node: credit.to_json() for node, credit in self.history[-1].items()},
            **dict(decision.inputs),
        }])  # fmt: skip

    def _keep(self, round_index: int) -> None:
        """No word from some live peer in time: the local nodes keep their last quotas."""
        ended = self._ended.get(round_index - 1, {})
        missing = [node for node in self.nodes if node not in ended and node not in self._done]
        last = self.decisions.get(round_index - 1, {})
        quotas = {node: int(last.get(node, 0)) for node in self.local if node not in self._done}
        self.decisions.setdefault(round_index, {}).update(quotas)
        for node, quota in quotas.items():
            self.apply(node, round_index, quota)
        self.record([{"event": "allocation", "round": round_index,
                      "allocator": self.allocator.name, "kept": True, "quotas": quotas,
                      "missing": missing}])  # fmt: skip


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
        raise ConfigError(f"allocation option peer_wait must be a positive number of "
                          f"seconds, got {value!r}")  # fmt: skip
    return options, float(value)


def check_allocation(config: AllocationSettings) -> None:
    """Refuses a dynamic allocator where it cannot hold its promises.

    Args:
        config: The run's :class:`~dei_framework.runtime.config.RunConfig`.

    Raises:
        ConfigError: one line saying what is not supported and what is.
    """
    name = config.allocation
    if config.compute_axis != "calls":
        raise ConfigError(f"--allocation {name} moves calls; with --compute-axis "
                          f"{config.compute_axis} use --allocation static")  # fmt: skip
