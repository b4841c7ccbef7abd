"""The budget ledger: operator calls, attempts, tokens, cost and time, per node and in total.

The ledger is DEI's equal-compute protocol made concrete: a total call budget is split equally
across nodes and every node's quota is a hard cap. A call *reserves* a slot before it starts
and either *commits* (a completed call: counts once, whatever the reply contained) or is
*released* (a failed call: only its attempts count), so the cap holds with any number of calls
in flight.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from dei_framework.errors import BudgetExhausted, ConfigError
from dei_framework.operators import OperatorReply


@attrs.define
class NodeUsage:
    """What one node has used."""

    #: Completed operator calls (the unit of the budget).
    calls: int = 0
    #: Attempts, including failed ones and retries.
    attempts: int = 0
    #: Prompt tokens reported by the provider.
    prompt_tokens: int = 0
    #: Completion tokens reported by the provider.
    completion_tokens: int = 0
    #: Cost in US dollars where the provider's price is known.
    cost_usd: float = 0.0
    #: Seconds spent inside operator calls (summed over concurrent calls).
    call_seconds: float = 0.0
    #: Calls currently reserved and not yet committed or released (not persisted).
    in_flight: int = attrs.field(default=0, metadata={"transient": True})

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self, filter=lambda a, _: not a.metadata.get("transient"))
        data["cost_usd"] = round(self.cost_usd, 10)
        return data


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


class BudgetLedger:
    """Counts usage per node against per-node call quotas.

    Args:
        quotas: Calls allowed per node; ``None`` for a node means unlimited.
        models: Optional operator label per node, recorded in the summary.

    Example:
        >>> ledger = BudgetLedger(quotas={"node-0": 2})
        >>> ledger.reserve("node-0")
        >>> ledger.commit("node-0", OperatorReply(text="MOV 0, 1"))
        >>> ledger.remaining("node-0")
        1
    """

    def __init__(
        self,
        *,
        quotas: Mapping[str, int | None],
        models: Mapping[str, str] | None = None,
    ) -> None:
        self.quotas = dict(quotas)
        self.models = dict(models or {})
        self.usage = {node: NodeUsage() for node in self.quotas}
        self._started = time.monotonic()
        self._elapsed_before = 0.0

    @property
    def limit(self) -> int | None:
        """The total call budget (``None`` when any node is unlimited)."""
        if any(q is None for q in self.quotas.values()):
            return None
        return sum(q for q in self.quotas.values() if q is not None)

    def remaining(self, node: str) -> int | None:
        """Calls ``node`` may still start (``None`` if unlimited)."""
        quota = self.quotas[node]
        if quota is None:
            return None
        usage = self.usage[node]
        return quota - usage.calls - usage.in_flight

    def reserve(self, node: str) -> None:
        """Reserves one call for ``node``.

        Raises:
            BudgetExhausted: the node's quota is used up (counting calls in flight).
        """
        remaining = self.remaining(node)
        if remaining is not None and remaining <= 0:
            raise BudgetExhausted(f"{node}: call budget of {self.quotas[node]} used up")
        self.usage[node].in_flight += 1

    def commit(self, node: str, reply: OperatorReply, *, seconds: float = 0.0) -> None:
        """Records a completed call that was reserved with :meth:`reserve`."""
        usage = self._reserved(node)
        usage.in_flight -= 1
        usage.calls += 1
        usage.attempts += max(reply.attempts, 1)
        usage.prompt_tokens += reply.prompt_tokens
        usage.completion_tokens += reply.completion_tokens
        usage.cost_usd += reply.cost_usd
        usage.call_seconds += seconds

    def release(self, node: str, *, attempts: int = 1, seconds: float = 0.0) -> None:
        """Gives back a reserved call that failed; its attempts still count."""
        usage = self._reserved(node)
        usage.in_flight -= 1
        usage.attempts += attempts
        usage.call_seconds += seconds

    def _reserved(self, node: str) -> NodeUsage:
        usage = self.usage[node]
        if usage.in_flight <= 0:
            raise RuntimeError(f"{node}: commit or release without a reservation")
        return usage

    def totals(self) -> NodeUsage:
        """Usage summed over nodes."""
        total = NodeUsage()
        for usage in self.usage.values():
            total.calls += usage.calls
            total.attempts += usage.attempts
            total.prompt_tokens += usage.prompt_tokens
            total.completion_tokens += usage.completion_tokens
            total.cost_usd += usage.cost_usd
            total.call_seconds += usage.call_seconds
        return total

    @property
    def wall_seconds(self) -> float:
        """Wall time of the run so far, including earlier sessions of a resumed run."""
        return self._elapsed_before + time.monotonic() - self._started

    def to_json(self) -> dict[str, Any]:
        """The ``budget`` section of ``summary.json`` (also the persisted ledger)."""
        totals = self.totals().to_json()
        return {
            **totals,
            "limit": self.limit,
            "wall_seconds": round(self.wall_seconds, 3),
            "nodes": {
                node: {
                    **usage.to_json(),
                    "quota": self.quotas[node],
                    "model": self.models.get(node, ""),
                }
                for node, usage in self.usage.items()
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BudgetLedger:
        """Restores a persisted ledger (calls in flight at the time are not restored)."""
        nodes = data["nodes"]
        ledger = cls(
            quotas={node: info["quota"] for node, info in nodes.items()},
            models={node: info.get("model", "") for node, info in nodes.items()},
        )
        for node, info in nodes.items():
            usage = ledger.usage[node]
            for field in attrs.fields(NodeUsage):
                if not field.metadata.get("transient") and field.name in info:
                    setattr(usage, field.name, info[field.name])
        ledger._elapsed_before = float(data.get("wall_seconds", 0.0))
        return ledger
