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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from dei_framework.archives import ArchiveBase
from dei_framework.descriptors import DescriptorSpace
from dei_framework.errors import ConfigError
from dei_framework.records import Candidate

if TYPE_CHECKING:
    from dei_framework.config import RunConfig

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
            :class:`~dei_framework.context.FactoryContext`, the mapping of the
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


def round_credits(
    archives: Mapping[str, ArchiveBase],
    spent: Mapping[str, int],
    known: set[Any],
    space: DescriptorSpace,
) -> dict[str, RoundCredit]:
    """Each node's credit for one round, from the nodes' archives at that round's end.

    Args:
        archives: Each node's archive at the round's end.
        spent: Calls each node spent in the round.
        known: The merged archive's cells before the round; updated with the round's cells.
        space: The run's descriptor space (cells are compared there, so nodes with their own
            axes compare too; an elite without the run's axes is keyed by its node's cell).
    """
    finders: dict[Any, list[str]] = {}
    landed = dict.fromkeys(archives, 0)
    reached: set[Any] = set()
    for node, archive in archives.items():
        for elite in _elites(archive):
            cell = _merged_cell(elite, node, space)
            reached.add(cell)
            if _CALL_ID.search(elite.id or "") and cell not in known:
                finders.setdefault(cell, [])
                if node not in finders[cell]:
                    finders[cell].append(node)
            elif _PEER_ID.search(elite.id or "") and (elite.operator or "").startswith("peer:"):
                sender = elite.operator.removeprefix("peer:")
                if sender in landed and sender != node:
                    landed[sender] += 1
    new_cells = dict.fromkeys(archives, 0.0)
    for nodes in finders.values():
        for node in nodes:
            new_cells[node] += 1.0 / len(nodes)
    known.update(reached)
    return {node: RoundCredit(spent=int(spent.get(node, 0)), new_cells=new_cells[node],
                              landed=landed[node]) for node in archives}  # fmt: skip


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
    """Runs a dynamic allocator for the nodes of one process, at round boundaries.

    Args:
        allocator: The run's allocator (``dynamic``).
        nodes: The node names, in run order.
        rounds: Rounds of the run.
        limit: The run's total calls.
        spent: Returns the calls a node has spent so far (the ledger's count).
        space: The run's descriptor space (see :func:`round_credits`).
        apply: Called with ``(node, round, quota)`` once a node's quota of a round is decided,
            before that node starts the round.
        record: Called with the ``allocation`` event of each decision (the run log).
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
        record: Callable[[dict[str, Any]], None],
    ) -> None:
        self.allocator = allocator
        self.nodes = tuple(nodes)
        self.rounds = rounds
        self.limit = limit
        self.spent = spent
        self.space = space
        self.apply = apply
        self.record = record
        self.history: list[dict[str, RoundCredit]] = []
        self.decisions: dict[int, dict[str, int]] = {}
        self._ended: dict[int, dict[str, tuple[ArchiveBase, int]]] = {}
        self._known: set[Any] = set()
        self._done: set[str] = set()
        self._changed = asyncio.Event()

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
    ) -> None:
        """Puts back what a resumed node had: its quotas so far (from its checkpointed
        scheduler) and the rounds it ended (their archives, or their round files' JSON, and
        calls). Decisions already made are not made (nor logged) again; later ones are made
        from the same credits, recomputed from the same archives."""
        for round_index, quota in quotas.items():
            self.decisions.setdefault(round_index, {})[node] = quota
        for round_index, (archive, calls) in ended.items():
            self._ended.setdefault(round_index, {})[node] = (archive, calls)

    def round_ended(self, node: str, round_index: int, archive: ArchiveBase, calls: int) -> None:
        """A node ended a round: its archive and calls count for the next decision."""
        self._ended.setdefault(round_index, {})[node] = (archive, calls)
        self._wake()

    def finish(self, node: str) -> None:
        """The node runs no more rounds (finished, stopped or failed): nobody waits for it."""
        self._done.add(node)
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def quota(self, node: str, round_index: int) -> int:
        """Waits until round ``round_index``'s quotas can be decided, then gives ``node``'s."""
        if round_index == 0:
            return self.decisions.setdefault(0, self.first_round())[node]
        while round_index not in self.decisions:
            if self._ready(round_index - 1):
                self._decide(round_index)
                break
            await self._changed.wait()
        return self.decisions[round_index].get(node, 0)

    def _ready(self, previous: int) -> bool:
        """Whether every node that will still run has ended round ``previous``."""
        ended = self._ended.get(previous, {})
        return all(node in ended or node in self._done for node in self.nodes)

    def _decide(self, round_index: int) -> None:
        # Credits of every round up to the previous one, in order (each once).
        while len(self.history) < round_index:
            done = len(self.history)
            # In run order, not in the order the nodes happened to end the round.
            ended = [(node, self._ended[done][node]) for node in self.nodes
                     if node in self._ended.get(done, {})]  # fmt: skip
            self.history.append(
                round_credits(
                    {node: archive for node, (archive, _) in ended},
                    {node: calls for node, (_, calls) in ended},
                    self._known,
                    self.space,
                )
            )
        # A node that stopped early gets nothing more; what it left goes to the others.
        live = [node for node in self.nodes if node not in self._done]
        left = self.limit - sum(self.spent(n) for n in self.nodes)
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
            self.apply(node, round_index, quota)
        self.record({
            "event": "allocation", "round": round_index, "allocator": self.allocator.name,
            "budget": budget, "budget_left": left, "quotas": quotas,
            "credits": {node: credit.to_json() for node, credit in self.history[-1].items()},
            **dict(decision.inputs),
        })  # fmt: skip


def check_allocation(config: RunConfig, *, processes: bool) -> None:
    """Refuses a dynamic allocator where it cannot hold its promises.

    Args:
        config: The run's :class:`~dei_framework.config.RunConfig`.
        processes: The nodes run as processes of their own (``dei node``, AXL).

    Raises:
        ConfigError: one line saying what is not supported and what is.
    """
    name = config.allocation
    if processes:
        raise ConfigError(f"--allocation {name} moves budget between the nodes of one process "
                          "only; nodes in processes of their own (dei node, --transport axl) "
                          "run with --allocation static")  # fmt: skip
    if config.compute_axis != "calls":
        raise ConfigError(f"--allocation {name} moves calls; with --compute-axis "
                          f"{config.compute_axis} use --allocation static")  # fmt: skip
