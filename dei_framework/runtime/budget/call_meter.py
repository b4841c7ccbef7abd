"""One call's account with the budget ledger: :class:`CallMeter`, handed to the operator with
its request, opens and settles each attempt against the ledger's caps and ends the call as
committed or released. The ledger hands meters out
(:meth:`~dei_framework.runtime.budget.ledger.BudgetLedger.reserve`).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from typing import Any, Protocol

from dei_framework.contract.operators import OperatorReply
from dei_framework.runtime.budget.usage import NodeUsage


class MeteringLedger(Protocol):
    """What a meter uses of a :class:`~dei_framework.runtime.budget.ledger.BudgetLedger` (which
    imports this module: it is not imported here)."""

    usage: dict[str, NodeUsage]

    async def _open_attempt(self, meter: CallMeter, tokens: int, usd: float | None) -> None: ...

    def _settle_attempt(self, meter: CallMeter, tokens: int, usd: float) -> None: ...

    def _reserved(self, node: str) -> NodeUsage: ...

    def _changed(self) -> None: ...


class CallMeter:
    """One call's account with the ledger, handed to the operator with the request.

    An operator that bills per attempt calls :meth:`open_attempt` before each request and
    :meth:`settle_attempt` after it (in a ``finally``: a failed, timed-out or cancelled attempt is
    settled too). Operators that never use the meter are accounted from their reply.
    """

    def __init__(self, ledger: MeteringLedger, node: str) -> None:
        self.ledger = ledger
        self.node = node
        #: Attempts settled so far, and their usage.
        self.usage = NodeUsage()
        self._open: tuple[int, float] | None = None
        self._done = False

    async def open_attempt(
        self, *, prompt_tokens: int, max_tokens: int, cost_usd: float | None
    ) -> None:
        """Reserves an attempt's worst case before it goes out.

        Args:
            prompt_tokens: An upper bound of the prompt's tokens.
            max_tokens: The completion limit sent with the request.
            cost_usd: The attempt's worst-case cost, ``None`` when the price is unknown.

        Raises:
            BudgetExhausted: The attempt could break a cap of the node or of the call. Waits
                instead while attempts in flight hold reservations that may yet be returned.
        """
        if self._open is not None:
            raise RuntimeError(f"{self.node}: an attempt is already open on this call")
        await self.ledger._open_attempt(self, prompt_tokens + max_tokens, cost_usd)
        self._open = (prompt_tokens + max_tokens, cost_usd or 0.0)

    def settle_attempt(
        self,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        cost_usd: float | None = 0.0,
    ) -> None:
        """Records what the open attempt used (``None`` tokens: the provider did not say)."""
        if self._open is None:
            raise RuntimeError(f"{self.node}: settle without an open attempt")
        tokens, usd = self._open
        self._open = None
        self.ledger._settle_attempt(self, tokens, usd)
        self._add(1, prompt_tokens, completion_tokens, cost_usd)

    def record(
        self,
        *,
        attempts: int,
        prompt_tokens: int | None,
        completion_tokens: int | None,
        cost_usd: float | None,
    ) -> None:
        """Records usage that was not metered attempt by attempt (replayed or reply-only)."""
        self._add(attempts, prompt_tokens, completion_tokens, cost_usd)

    def _add(
        self, attempts: int, prompt: int | None, completion: int | None, cost: float | None
    ) -> None:
        # What NodeUsage.add of a delta would do, without building the delta (once per call).
        unreported = attempts if prompt is None and completion is None else 0
        prompt, completion = prompt or 0, completion or 0
        unpriced = (attempts if prompt + completion else 0) if cost is None else 0
        for usage in (self.usage, self.ledger.usage[self.node]):
            usage.attempts += attempts
            usage.prompt_tokens += prompt
            usage.completion_tokens += completion
            usage.cost_usd += 0.0 if cost is None else cost
            usage.unpriced_attempts += unpriced
            usage.unreported_attempts += unreported
        self.ledger._changed()

    def commit(self, reply: OperatorReply, *, seconds: float = 0.0) -> None:
        """Ends the call as completed (it counts as one call)."""
        if not self.usage.attempts:
            self.record(
                attempts=max(reply.attempts, 1),
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                cost_usd=reply.cost_usd,
            )
        self._finish(seconds, completed=True)

    def release(self, *, attempts: int = 1, seconds: float = 0.0) -> None:
        """Ends the call as failed: only its attempts (and what they used) count."""
        if not self.usage.attempts and attempts:
            self.record(attempts=attempts, prompt_tokens=None, completion_tokens=None, cost_usd=0.0)
        self._finish(seconds, completed=False)

    def _finish(self, seconds: float, *, completed: bool) -> None:
        if self._done:
            raise RuntimeError(f"{self.node}: call committed or released twice")
        if self._open is not None:  # an operator that forgot to settle: count the attempt
            self.settle_attempt()
        self._done = True
        usage = self.ledger._reserved(self.node)
        usage.in_flight -= 1
        usage.calls += int(completed)
        usage.call_seconds += seconds
        self.ledger._changed()

    def to_json(self) -> dict[str, Any]:
        """What this call used, for its record in ``calls.jsonl`` (the fields of
        :meth:`NodeUsage.to_json` that describe one call)."""
        usage = self.usage
        return {
            "attempts": usage.attempts,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cost_usd": round(usage.cost_usd, 10) if usage.cost_known else None,
        }
