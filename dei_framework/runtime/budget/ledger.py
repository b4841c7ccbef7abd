"""The budget ledger: operator calls, attempts, tokens, cost and time, per node and in total.

The ledger is DEI's equal-compute protocol made concrete: a total budget is split equally
across nodes on the *compute axis* the run chose (``calls`` as in the paper, ``tokens`` or
``cost``) and every node's share is a hard cap. Independent hard caps on money
(``--max-cost-usd``, split per node like calls) and on attempts (per node and per call) hold
whatever the axis.

A call *reserves* a slot before it starts (:meth:`BudgetLedger.reserve` returns its
:class:`CallMeter`). An operator that bills tokens opens every attempt on the meter before the
request goes out, with the attempt's worst case (the prompt's token bound plus ``max_tokens``,
and their price), and settles it to what the provider reported afterwards, failed attempts
included. An attempt that could break a cap is refused before it starts, so the caps hold with
any number of calls in flight. The call then either *commits* (a completed call: counts once,
whatever the reply contained) or is *released* (a failed call: only its attempts and their usage
count).

The quantities it keeps (compute axes, :func:`split_budget`, :class:`NodeCaps`,
:class:`NodeUsage`) are defined in :mod:`~dei_framework.runtime.budget.usage`; one call's
account, :class:`CallMeter`, in :mod:`~dei_framework.runtime.budget.call_meter`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from dei_framework.contract.errors import BudgetExhausted, ConfigError
from dei_framework.contract.operators import OperatorReply
from dei_framework.runtime.budget.call_meter import CallMeter
from dei_framework.runtime.budget.usage import COMPUTE_AXES, NodeCaps, NodeUsage


class BudgetLedger:
    """Counts usage per node against per-node quotas and caps.

    Args:
        quotas: Calls allowed per node; ``None`` for a node means no call quota.
        models: Optional operator label per node, recorded in the summary.
        caps: Token, cost and attempt caps per node (missing: none).
        attempts_per_call: Most attempts one call may make (``None``: the operator decides).
        axis: The compute axis of the run (recorded in the summary; its budget is ``quotas``
            for ``calls``, the ``tokens`` or ``cost_usd`` caps otherwise).
        limit: The run's total budget on ``axis`` (default: the sum of the node shares).

    Example:
        >>> ledger = BudgetLedger(quotas={"node-0": 2})
        >>> meter = ledger.reserve("node-0")
        >>> meter.commit(OperatorReply(text="MOV 0, 1"))
        >>> ledger.remaining("node-0")
        1
    """

    def __init__(
        self,
        *,
        quotas: Mapping[str, int | None],
        models: Mapping[str, str] | None = None,
        caps: Mapping[str, NodeCaps] | None = None,
        attempts_per_call: int | None = None,
        axis: str = "calls",
        limit: float | None = None,
    ) -> None:
        if axis not in COMPUTE_AXES:
            raise ConfigError(
                f"compute axis must be one of {', '.join(COMPUTE_AXES)}, got {axis!r}"
            )
        self.quotas = dict(quotas)
        self.models = dict(models or {})
        self.caps = {node: (caps or {}).get(node, NodeCaps()) for node in self.quotas}
        self.attempts_per_call = attempts_per_call
        self.axis = axis
        self._limit = limit
        self.usage = {node: NodeUsage() for node in self.quotas}
        self._started = time.monotonic()
        self._elapsed_before = 0.0
        self._waiters: list[asyncio.Future] = []
        #: With nodes in processes of their own (:mod:`~dei_framework.runtime.node.links`): whether
        #: a node whose next attempt does not fit its money cap may still be handed money (it then
        #: waits instead of stopping), and a callback told when a node starts or stops waiting for
        #: money.
        self.more_money: Callable[[str], bool] | None = None
        self.on_starved: Callable[[str, bool], None] | None = None

    # --- quotas ---------------------------------------------------------------------------------

    def share(self, node: str) -> float | None:
        """The node's share of the budget on the compute axis (``None``: unlimited)."""
        if self.axis == "calls":
            return self.quotas[node]
        caps = self.caps[node]
        return caps.tokens if self.axis == "tokens" else caps.cost_usd

    def spent(self, node: str) -> float:
        """What the node has used on the compute axis."""
        usage = self.usage[node]
        if self.axis == "calls":
            return usage.calls
        return usage.tokens if self.axis == "tokens" else usage.cost_usd

    @property
    def limit(self) -> float | None:
        """The total budget on the compute axis (``None`` when any node is unlimited)."""
        if self._limit is not None:
            return self._limit
        shares = [self.share(node) for node in self.quotas]
        if any(share is None for share in shares):
            return None
        return sum(shares)

    def remaining(self, node: str) -> int | None:
        """Calls ``node`` may still start (``None`` if its calls are not capped)."""
        if self.usage[node].exhausted is not None:
            return 0
        quota = self.quotas[node]
        if quota is None:
            return None
        usage = self.usage[node]
        return quota - usage.calls - usage.in_flight

    def exhausted(self, node: str) -> str | None:
        """Why ``node`` can start no more calls (a cap was reached), or ``None``."""
        return self.usage[node].exhausted

    # --- calls ----------------------------------------------------------------------------------

    def reserve(self, node: str) -> CallMeter:
        """Reserves one call for ``node`` and returns its meter.

        Raises:
            BudgetExhausted: the node's quota is used up (counting calls in flight) or a cap
                was reached.
        """
        usage = self.usage[node]
        if usage.exhausted is not None:
            raise BudgetExhausted(f"{node}: {usage.exhausted}")
        remaining = self.remaining(node)
        if remaining is not None and remaining <= 0:
            raise BudgetExhausted(f"{node}: call budget of {self.quotas[node]} used up")
        usage.in_flight += 1
        return CallMeter(self, node)

    def commit(self, node: str, reply: OperatorReply, *, seconds: float = 0.0) -> None:
        """Records a completed, reserved call from its reply alone (no meter at hand)."""
        self._reserved(node)
        CallMeter(self, node).commit(reply, seconds=seconds)

    def release(self, node: str, *, attempts: int = 1, seconds: float = 0.0) -> None:
        """Gives back a reserved call that failed; its attempts still count."""
        self._reserved(node)
        CallMeter(self, node).release(attempts=attempts, seconds=seconds)

    def count_free_calls(self, node: str, count: int, *, seconds: float = 0.0) -> None:
        """Records ``count`` completed calls of an operator that costs nothing (one attempt
        each, no tokens), made together in ``seconds`` (each lasted that long, as calls made
        concurrently do): the array path's calls, which hold no reservation because they
        cannot fail or be refused halfway.

        Raises:
            BudgetExhausted: fewer than ``count`` calls remain, or a cap was reached.
        """
        usage = self.usage[node]
        if usage.exhausted is not None:
            raise BudgetExhausted(f"{node}: {usage.exhausted}")
        remaining = self.remaining(node)
        if remaining is not None and remaining < count:
            raise BudgetExhausted(
                f"{node}: {count} calls asked, {remaining} left of the call "
                f"budget of {self.quotas[node]}"
            )
        usage.calls += count
        usage.attempts += count
        usage.call_seconds += seconds * count
        self._changed()

    def _reserved(self, node: str) -> NodeUsage:
        usage = self.usage[node]
        if usage.in_flight <= 0:
            raise RuntimeError(f"{node}: commit or release without a reservation")
        return usage

    # --- attempts -------------------------------------------------------------------------------

    async def _open_attempt(self, meter: CallMeter, tokens: int, usd: float | None) -> None:
        node = meter.node
        caps = self.caps[node]
        if self.attempts_per_call is not None and meter.usage.attempts >= self.attempts_per_call:
            raise BudgetExhausted(
                f"{node}: call reached its cap of {self.attempts_per_call} attempt(s)"
            )
        if usd is None and caps.cost_usd is not None:
            self._exhaust(
                node, "the operator cannot price its calls, and the node has a money cap", "cost"
            )
        while True:
            usage, caps = self.usage[node], self.caps[node]  # a peer may raise the money cap
            if usage.exhausted is not None:
                raise BudgetExhausted(f"{node}: {usage.exhausted}")
            checks = (
                ("attempt", caps.attempts, usage.attempts, usage.open_attempts, 1),
                ("token", caps.tokens, usage.tokens, usage.reserved_tokens, tokens),
                ("cost", caps.cost_usd, usage.cost_usd, usage.reserved_usd, usd or 0.0),
            )
            waiting = starved = False
            for what, cap, used, reserved, need in checks:
                if cap is None:
                    continue
                if used + need > cap:
                    if what == "cost" and self.more_money is not None and self.more_money(node):
                        # Peers in other processes may still hand money over: wait for it.
                        waiting = starved = True
                        continue
                    # Even with every attempt in flight settled at zero this one could break
                    # the cap: the node is done.
                    self._exhaust(node, _cap_reason(what, cap, used, need), what)
                if used + reserved + need > cap:
                    waiting = True
            if self.on_starved is not None:
                self.on_starved(node, starved)
            if not waiting:
                usage.open_attempts += 1
                usage.reserved_tokens += tokens
                usage.reserved_usd += usd or 0.0
                return
            # Attempts in flight hold worst-case reservations; most settle for less.
            future = asyncio.get_running_loop().create_future()
            self._waiters.append(future)
            if starved:  # what may still come can also stop coming (a peer's time runs out)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(future, timeout=1.0)
            else:
                await future

    def _settle_attempt(self, meter: CallMeter, tokens: int, usd: float) -> None:
        usage = self.usage[meter.node]
        usage.open_attempts -= 1
        usage.reserved_tokens -= tokens
        usage.reserved_usd = max(usage.reserved_usd - usd, 0.0)

    def _exhaust(self, node: str, reason: str, cap: str) -> None:
        usage = self.usage[node]
        usage.exhausted, usage.exhausted_cap = reason, cap
        self._changed()
        raise BudgetExhausted(f"{node}: {reason}")

    def _changed(self) -> None:
        """Wakes attempts waiting for reservations to come back."""
        waiters, self._waiters = self._waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(None)

    # --- the money cap across processes (node.links) ---------------------------------------

    def raise_cost_cap(self, node: str, usd: float) -> float:
        """Raises ``node``'s money cap by ``usd`` (money a finished peer handed over); returns
        the new cap. Attempts waiting for room are woken."""
        caps = self.caps[node]
        if caps.cost_usd is None:
            raise ValueError(f"{node} has no money cap to raise")
        self.caps[node] = attrs.evolve(caps, cost_usd=caps.cost_usd + usd)
        self._changed()
        return caps.cost_usd + usd

    def wake(self) -> None:
        """Has attempts waiting for room check again (what may come has changed)."""
        self._changed()

    def close_cost_cap(self, node: str) -> float:
        """Lowers ``node``'s money cap to what it spent (it makes no more calls); returns what
        the cap held beyond that."""
        caps = self.caps[node]
        if caps.cost_usd is None:
            return 0.0
        spent = self.usage[node].cost_usd
        self.caps[node] = attrs.evolve(caps, cost_usd=spent)
        return max(caps.cost_usd - spent, 0.0)

    # --- results --------------------------------------------------------------------------------

    def totals(self) -> NodeUsage:
        """Usage summed over nodes."""
        total = NodeUsage()
        for usage in self.usage.values():
            total.add(usage)
        return total

    def unpriced(self) -> list[str]:
        """Nodes whose cost is unknown because a model's price is unknown."""
        return [node for node, usage in self.usage.items() if not usage.cost_known]

    @property
    def wall_seconds(self) -> float:
        """Wall time of the run so far, including earlier sessions of a resumed run."""
        return self._elapsed_before + time.monotonic() - self._started

    def resume_wall(self, seconds: float) -> None:
        """Counts ``seconds`` of earlier sessions (a resumed run) into :attr:`wall_seconds`."""
        self._elapsed_before = float(seconds)

    def to_json(self) -> dict[str, Any]:
        """The ``budget`` section of ``summary.json`` (also the persisted ledger)."""
        totals = self.totals().to_json()
        totals.pop("exhausted")
        totals.pop("exhausted_cap")
        return {
            **totals,
            "axis": self.axis,
            "limit": self.limit,
            "spent": self._spent_json(sum(self.spent(node) for node in self.usage)),
            "attempts_per_call": self.attempts_per_call,
            "unpriced_nodes": self.unpriced(),
            "wall_seconds": round(self.wall_seconds, 3),
            "nodes": {
                node: {
                    **usage.to_json(),
                    "quota": self.quotas[node],
                    "share": self.share(node),
                    "spent": self._spent_json(self.spent(node)),
                    "caps": attrs.asdict(self.caps[node]),
                    "model": self.models.get(node, ""),
                }
                for node, usage in self.usage.items()
            },
        }

    def _spent_json(self, value: float) -> float | None:
        if self.axis == "cost":
            return None if self.unpriced() else round(value, 10)
        return value

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BudgetLedger:
        """Restores a persisted ledger (calls in flight at the time are not restored)."""
        nodes = data["nodes"]
        ledger = cls(
            quotas={node: info["quota"] for node, info in nodes.items()},
            models={node: info.get("model", "") for node, info in nodes.items()},
            caps={
                node: NodeCaps(**info["caps"]) for node, info in nodes.items() if info.get("caps")
            },
            attempts_per_call=data.get("attempts_per_call"),
            axis=data.get("axis", "calls"),
        )
        for node, info in nodes.items():
            ledger.usage[node].restore(info)
        ledger.resume_wall(data.get("wall_seconds", 0.0))
        return ledger


def _cap_reason(what: str, cap: float, used: float, need: float) -> str:
    if what == "cost":
        return (
            f"money cap of ${cap:.6g} reached (spent ${used:.6g}; the next attempt could "
            f"cost up to ${need:.6g})"
        )
    if what == "token":
        return (
            f"token budget of {cap:g} reached (used {used:g}; the next attempt could use "
            f"up to {need:g})"
        )
    return f"attempt cap of {cap:g} reached"
