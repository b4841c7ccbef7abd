"""A run's budget arithmetic, from its configuration: each node's calls and caps (the run's
budget and money cap split equally), and the run's total on its compute axis.

:class:`~dei_framework.runtime.run_config.RunConfig`'s :meth:`node_quotas`, :meth:`node_caps`
and :meth:`compute_limit` answer with these.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from dei_framework.runtime._usage import NodeCaps, split_budget


class BudgetedRun(Protocol):
    """What the arithmetic reads of a :class:`~dei_framework.runtime.run_config.RunConfig`
    (which imports this module: it is not imported here)."""

    nodes: Sequence[object]
    rounds: int
    budget: int | None
    iterations: int | None
    compute_axis: str
    max_cost_usd: float | None
    max_attempts_per_node: int | None

    @property
    def node_names(self) -> list[str]: ...

    def node_quotas(self) -> dict[str, int]: ...


def node_quotas(config: BudgetedRun) -> dict[str, int]:
    """Calls per node: the budget split equally, or iterations x rounds (on a ``tokens``
    axis, where ``budget`` counts tokens, always the latter)."""
    if config.budget is not None and config.compute_axis != "tokens":
        return split_budget(config.budget, config.node_names)
    return {name: config.iterations * config.rounds for name in config.node_names}


def node_caps(config: BudgetedRun) -> dict[str, NodeCaps]:
    """Each node's token, money and attempt caps: the run's token budget and money cap split
    equally, like calls."""
    count = len(config.nodes)
    names = config.node_names
    tokens = split_budget(config.budget, names) if config.compute_axis == "tokens" else {}
    cost = None if config.max_cost_usd is None else config.max_cost_usd / count
    return {
        name: NodeCaps(
            tokens=tokens.get(name), cost_usd=cost, attempts=config.max_attempts_per_node
        )
        for name in names
    }


def compute_limit(config: BudgetedRun) -> float | None:
    """The run's total budget on its compute axis."""
    if config.compute_axis == "cost":
        return config.max_cost_usd
    if config.compute_axis == "tokens":
        return config.budget
    return sum(config.node_quotas().values())
