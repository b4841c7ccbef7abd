"""Budget ledger: equal split, hard caps under concurrency, honest counting, persistence."""

from __future__ import annotations

import asyncio

import pytest

from dei_framework import BudgetExhausted, BudgetLedger, ConfigError, OperatorReply, split_budget
from dei_framework.runtime.budget.usage import NodeUsage


def test_split_is_equal_or_refused() -> None:
    assert split_budget(240, ["a", "b", "c", "d"]) == {"a": 60, "b": 60, "c": 60, "d": 60}
    with pytest.raises(ConfigError, match="multiple of 3"):
        split_budget(100, ["a", "b", "c"])
    with pytest.raises(ConfigError):
        split_budget(1, ["a", "b"])


def test_cap_holds_under_32_concurrent_calls() -> None:
    ledger = BudgetLedger(quotas={"n": 10})
    started = []

    async def call(i: int) -> None:
        failures_left = 1 if i % 7 == 0 else 0
        while True:
            try:
                ledger.reserve("n")
            except BudgetExhausted:
                return
            started.append(i)
            await asyncio.sleep(0.001 * (i % 5))
            if failures_left:  # some calls fail once and give their slot back
                failures_left -= 1
                ledger.release("n", attempts=2)
            else:
                ledger.commit(
                    "n",
                    OperatorReply(text="x", prompt_tokens=3, completion_tokens=4, cost_usd=0.001),
                )
                return

    async def main() -> None:
        await asyncio.gather(*(call(i) for i in range(32)))

    peak = 0
    original = ledger.reserve

    def watching_reserve(node: str) -> None:
        nonlocal peak
        original(node)
        usage = ledger.usage[node]
        peak = max(peak, usage.calls + usage.in_flight)

    ledger.reserve = watching_reserve
    asyncio.run(main())
    usage = ledger.usage["n"]
    assert usage.calls == 10 and usage.in_flight == 0
    assert peak <= 10  # never one call over, even counting calls in flight
    failed = len(started) - 10
    assert usage.attempts == 10 + 2 * failed
    assert usage.prompt_tokens == 30 and usage.completion_tokens == 40
    assert usage.cost_usd == pytest.approx(0.01)
    with pytest.raises(BudgetExhausted):
        ledger.reserve("n")


def test_commit_without_reservation_is_a_bug() -> None:
    ledger = BudgetLedger(quotas={"n": 1})
    with pytest.raises(RuntimeError):
        ledger.commit("n", OperatorReply(text=""))


def test_totals_limit_and_persistence() -> None:
    ledger = BudgetLedger(quotas={"a": 2, "b": 2}, models={"a": "gp", "b": "templates"})
    for node in ("a", "b", "a"):
        ledger.reserve(node)
        ledger.commit(node, OperatorReply(text="", attempts=2), seconds=0.5)
    data = ledger.to_json()
    assert data["calls"] == 3 and data["limit"] == 4 and data["attempts"] == 6
    assert data["nodes"]["a"]["model"] == "gp" and data["nodes"]["b"]["calls"] == 1
    restored = BudgetLedger.from_json(data)
    assert restored.remaining("a") == 0 and restored.remaining("b") == 1
    assert restored.to_json()["nodes"] == data["nodes"]
    assert BudgetLedger(quotas={"x": None}).remaining("x") is None
    assert isinstance(restored.totals(), NodeUsage)


def test_money_cap_waits_for_reservations_and_refuses_what_could_break_it() -> None:
    from dei_framework.runtime.budget.usage import NodeCaps

    ledger = BudgetLedger(quotas={"n": None}, caps={"n": NodeCaps(cost_usd=1.0)})
    peak_exposure = 0.0
    outcomes = []

    async def call(i: int) -> None:
        nonlocal peak_exposure
        try:
            meter = ledger.reserve("n")
        except BudgetExhausted:
            outcomes.append("refused")
            return
        try:
            # Worst case $0.40 per attempt; the attempt really costs $0.10.
            await meter.open_attempt(prompt_tokens=100, max_tokens=100, cost_usd=0.4)
        except BudgetExhausted:
            meter.release(attempts=0)
            outcomes.append("refused")
            return
        usage = ledger.usage["n"]
        peak_exposure = max(peak_exposure, usage.cost_usd + usage.reserved_usd)
        await asyncio.sleep(0.001 * (i % 3))
        meter.settle_attempt(prompt_tokens=50, completion_tokens=50, cost_usd=0.1)
        meter.commit(OperatorReply(text="x"))
        outcomes.append("done")

    async def main() -> None:
        await asyncio.gather(*(call(i) for i in range(20)))

    asyncio.run(main())
    usage = ledger.usage["n"]
    assert peak_exposure <= 1.0 + 1e-12  # spent plus worst cases in flight never above the cap
    # Calls went on while $0.40 still fitted: 0.6 + 0.4 = 1.0 fits, 0.7 + 0.4 does not.
    assert outcomes.count("done") == usage.calls == 7
    assert usage.cost_usd == pytest.approx(0.7) and usage.tokens == 700
    assert usage.exhausted_cap == "cost" and "money cap of $1 reached" in usage.exhausted
    assert usage.in_flight == usage.open_attempts == 0
    with pytest.raises(BudgetExhausted, match="money cap"):
        ledger.reserve("n")


def test_unknown_cost_is_null_and_survives_persistence() -> None:
    ledger = BudgetLedger(quotas={"a": 2, "b": 2}, models={"a": "x/unpriced", "b": "gp"})
    ledger.reserve("a").commit(
        OperatorReply(text="", prompt_tokens=5, completion_tokens=3, cost_usd=None)
    )
    ledger.reserve("b").commit(OperatorReply(text=""))
    data = ledger.to_json()
    assert data["cost_usd"] is None and data["nodes"]["a"]["cost_usd"] is None
    assert data["nodes"]["b"]["cost_usd"] == 0.0  # offline: known to be free
    assert data["unpriced_nodes"] == ["a"]
    restored = BudgetLedger.from_json(data)
    assert restored.to_json()["nodes"] == data["nodes"]


def test_tokens_axis_share_is_a_hard_cap() -> None:
    from dei_framework.runtime.budget.usage import NodeCaps

    ledger = BudgetLedger(quotas={"n": 100}, caps={"n": NodeCaps(tokens=300)}, axis="tokens")
    assert ledger.limit == 300 and ledger.share("n") == 300

    async def spend(tokens: int) -> None:
        meter = ledger.reserve("n")
        await meter.open_attempt(prompt_tokens=10, max_tokens=40, cost_usd=None)
        meter.settle_attempt(prompt_tokens=tokens, completion_tokens=0, cost_usd=None)
        meter.commit(OperatorReply(text=""))

    asyncio.run(spend(200))
    asyncio.run(spend(60))  # 200 + a worst case of 50 still fitted
    assert ledger.spent("n") == 260 and ledger.exhausted("n") is None
    with pytest.raises(BudgetExhausted, match="token budget of 300 reached"):
        asyncio.run(spend(1))
    assert ledger.usage["n"].exhausted_cap == "token" and ledger.remaining("n") == 0
