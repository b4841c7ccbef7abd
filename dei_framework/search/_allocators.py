"""Budget allocators: how the calls of a round are shared between the run's nodes.

The allocator protocol and its decision records, the two built-in allocators (``static``, the
equal split fixed at the start; ``bandit``, the complementarity bandit: see
:mod:`~dei_framework.search.allocation`), the exact largest-remainder split they share, and the
specs the core registers for them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from dei_framework.contract.context import FactoryContext
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.registry import Kind


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
        return {"spent": self.spent, "new_cells": round(self.new_cells, 6), "landed": self.landed}


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


#: ``factory(ctx)`` builds the run's allocator; ``ctx`` holds the ``[allocation_options]`` table.
AllocatorFactory = Callable[[FactoryContext], BudgetAllocator]


@attrs.frozen(kw_only=True)
class AllocatorSpec:
    """A budget allocator a plugin registers through ``dei_budget_allocators``.

    Attributes:
        name: What users type after ``--allocation``.
        factory: ``factory(ctx)`` builds the run's allocator; ``ctx`` is a
            :class:`~dei_framework.contract.context.FactoryContext`, the mapping of the
            ``[allocation_options]`` table with the run's plugins and seed.
        description: One line for ``dei plugins``.
    """

    name: str
    factory: AllocatorFactory
    description: str = ""


#: The budget allocators: ``registry.lookup(ALLOCATORS, name)`` is an :class:`AllocatorSpec`.
ALLOCATORS: Kind[AllocatorSpec] = Kind("dei_budget_allocators")


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
            "share": {node: round(quotas[node] / budget, 6) if budget else 0.0 for node in nodes},
        }
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


def _number(
    name: str,
    options: Mapping[str, Any],
    key: str,
    default: float,
    *,
    low: float,
    high: float,
    open_low: bool = False,
) -> float:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"allocation {name}: {key} must be a number, got {value!r}")
    if value > high or value < low or (open_low and value == low):
        bound = "(" if open_low else "["
        raise ConfigError(
            f"allocation {name}: {key} must be within {bound}{low:g}, {high:g}], got {value!r}"
        )
    return float(value)


def _bandit(options: Mapping[str, Any]) -> BudgetAllocator:
    known = {"discount", "c", "floor", "landing_weight"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(
            f"allocation bandit: unknown options {unknown}; known: {', '.join(sorted(known))}"
        )
    return BanditAllocator(
        discount=_number("bandit", options, "discount", 0.7, low=0.0, high=1.0, open_low=True),
        c=_number("bandit", options, "c", 1.0, low=0.0, high=math.inf),
        floor=_number("bandit", options, "floor", 0.25, low=0.0, high=1.0),
        landing_weight=_number("bandit", options, "landing_weight", 0.5, low=0.0, high=math.inf),
    )


#: The allocators the core itself registers (through its built-in plugin).
BUILTIN_ALLOCATORS = (
    AllocatorSpec(
        name="static",
        factory=lambda options: StaticAllocator(),
        description="equal shares fixed at the start (the default)",
    ),
    AllocatorSpec(
        name="bandit",
        factory=_bandit,
        description="shares of the budget left move each round to the nodes that "
        "add merged-archive cells per call (discounted UCB, a floor per "
        "node; options discount, c, floor, landing_weight)",
    ),
)
