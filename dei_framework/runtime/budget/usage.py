"""What a node may use and has used, and a run's budget arithmetic.

The quantities the budget ledger (:mod:`dei_framework.runtime.budget.ledger`) keeps and
persists: the axes equal compute is measured on, the equal split of a call budget
(:func:`split_budget`), a node's hard caps besides its call quota (:class:`NodeCaps`), its
usage (:class:`NodeUsage`: calls, attempts, tokens, cost, time); what a model charges
(:class:`~dei_framework.contract.price.Price`) is part of the contract operators implement.
From a run's configuration: each node's calls and caps (the run's budget and money cap split
equally) and the run's total on its compute axis, which
:class:`~dei_framework.runtime.config.run_config.RunConfig`'s :meth:`node_quotas`,
:meth:`node_caps` and :meth:`compute_limit` answer with.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

import attrs

from dei_framework.contract.errors import ConfigError

#: The quantities equal compute can be measured on.
ComputeAxis = Literal["calls", "tokens", "cost"]
COMPUTE_AXES: tuple[str, ...] = ("calls", "tokens", "cost")


@attrs.frozen(kw_only=True)
class NodeCaps:
    """Hard caps of one node besides its call quota (``None``: no cap)."""

    #: Tokens (prompt plus completion, every billed attempt): the share of a ``tokens`` budget.
    tokens: int | None = None
    #: US dollars (every billed attempt): the node's share of ``--max-cost-usd``.
    cost_usd: float | None = None
    #: Attempts, failed ones and retries included.
    attempts: int | None = None


@attrs.define
class NodeUsage:
    """What one node has used."""

    #: Completed operator calls (the unit of the ``calls`` budget).
    calls: int = 0
    #: Attempts, including failed ones and retries.
    attempts: int = 0
    #: Prompt tokens reported by the provider, failed attempts included.
    prompt_tokens: int = 0
    #: Completion tokens reported by the provider, failed attempts included.
    completion_tokens: int = 0
    #: Cost in US dollars of the attempts whose price is known (see ``unpriced_attempts``).
    cost_usd: float = 0.0
    #: Attempts that reported tokens at an unknown price: the node's cost is then unknown.
    unpriced_attempts: int = 0
    #: Attempts whose usage the provider did not report (timeouts, errors without usage).
    unreported_attempts: int = 0
    #: Seconds spent inside operator calls (summed over concurrent calls).
    call_seconds: float = 0.0
    #: Why the node can start no more calls (a cap reached), or ``None``.
    exhausted: str | None = None
    #: Which cap that was: ``"attempt"``, ``"token"`` or ``"cost"``.
    exhausted_cap: str | None = None
    #: Calls currently reserved and not yet committed or released (not persisted).
    in_flight: int = attrs.field(default=0, metadata={"transient": True})
    #: Attempts under way (not persisted).
    open_attempts: int = attrs.field(default=0, metadata={"transient": True})
    #: Worst-case tokens of the attempts under way (not persisted).
    reserved_tokens: int = attrs.field(default=0, metadata={"transient": True})
    #: Worst-case cost of the attempts under way (not persisted).
    reserved_usd: float = attrs.field(default=0.0, metadata={"transient": True})

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost_known(self) -> bool:
        """Whether :attr:`cost_usd` is the whole cost (no attempt had an unknown price)."""
        return self.unpriced_attempts == 0

    def add(self, other: NodeUsage) -> None:
        """Adds ``other``'s persisted counters to this one."""
        for name in _summed_fields():
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self, filter=lambda a, _: not a.metadata.get("transient"))
        # An unknown price is unknown, not free: the cost is null, never a silent 0.0.
        data["cost_usd"] = round(self.cost_usd, 10) if self.cost_known else None
        data["call_seconds"] = round(self.call_seconds, 6)
        return data

    def restore(self, data: Mapping[str, Any]) -> None:
        """Sets the persisted counters from :meth:`to_json` output."""
        for field in attrs.fields(NodeUsage):
            if not field.metadata.get("transient") and field.name in data:
                setattr(self, field.name, data[field.name])
        if self.cost_usd is None:
            self.cost_usd = 0.0


@functools.cache
def _summed_fields() -> tuple[str, ...]:
    """The counters :meth:`NodeUsage.add` sums (persisted ones, bar the ``exhausted`` marks)."""
    return tuple(
        field.name
        for field in attrs.fields(NodeUsage)
        if not field.metadata.get("transient") and not field.name.startswith("exhausted")
    )


def split_budget(total: int, nodes: Sequence[str]) -> dict[str, int]:
    """Splits ``total`` calls equally across ``nodes``.

    Raises:
        ConfigError: ``total`` does not divide equally (equal compute would not hold) or is
            smaller than the number of nodes.
    """
    if not nodes:
        raise ConfigError("no nodes to split the budget across")
    if total < len(nodes) or total % len(nodes):
        raise ConfigError(
            f"--budget {total} does not split equally across {len(nodes)} nodes; "
            f"use a multiple of {len(nodes)}"
        )
    return {node: total // len(nodes) for node in nodes}


class BudgetedRun(Protocol):
    """What the arithmetic reads of a :class:`~dei_framework.runtime.config.run_config.RunConfig`
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
