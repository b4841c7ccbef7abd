"""The ensemble-wide money cap between node processes, without a network: pools whose money
messages are delivered by hand (docs/llm.md; over real AXL: tests/transports/test_axl_money.py).
"""

from __future__ import annotations

import asyncio

import pytest

from dei_framework.contract.errors import BudgetExhausted
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.budget.usage import NodeCaps
from dei_framework.runtime.node.links import MoneyPool

NAMES = ("a", "b", "c")


def _pools(cap: float, *, lost: set[str] = frozenset()) -> dict[str, MoneyPool]:
    """One ledger and pool per node; a message from a node in ``lost`` never arrives."""
    pools: dict[str, MoneyPool] = {}
    inbox: dict[str, list[dict]] = {name: [] for name in NAMES}

    def publish(sender: str):
        async def send(data: dict) -> None:
            if sender not in lost:
                for name in NAMES:
                    if name != sender:
                        inbox[name].append(data)

        return send

    def poll(name: str):
        def fetch() -> None:
            waiting, inbox[name] = inbox[name], []
            for data in waiting:
                pools[name].received(data)

        return fetch

    for name in NAMES:
        ledger = BudgetLedger(quotas={name: None}, caps={name: NodeCaps(cost_usd=cap / 3)})
        pools[name] = MoneyPool(
            ledger=ledger,
            node=name,
            nodes=NAMES,
            limit=cap,
            publish=publish(name),
            record=lambda events: None,
            poll=poll(name),
        )
    return pools


async def _spend(pool: MoneyPool, cost: float, calls: int) -> float:
    """Makes up to ``calls`` calls of ``cost`` each (one attempt each, billed in full);
    returns what was spent, then finishes as a node does."""
    ledger, name = pool.ledger, pool.node
    try:
        for _ in range(calls):
            meter = ledger.reserve(name)
            try:
                await meter.open_attempt(prompt_tokens=0, max_tokens=0, cost_usd=cost)
            except BudgetExhausted:
                meter.release(attempts=0)
                break
            meter.settle_attempt(prompt_tokens=1, completion_tokens=1, cost_usd=cost)
            meter.commit(_Reply())
            await asyncio.sleep(0.01)
    finally:
        await pool.finished()
    return ledger.usage[name].cost_usd


class _Reply:
    attempts, prompt_tokens, completion_tokens, cost_usd = 1, 1, 1, 0.0


def test_a_finished_node_s_money_goes_to_starved_peers_and_the_total_holds() -> None:
    pools = _pools(3.0)

    async def main() -> list[float]:
        # a makes 2 cheap calls and finishes with $0.8 left; b and c would spend $3 each
        return await asyncio.gather(
            _spend(pools["a"], 0.1, 2), _spend(pools["b"], 0.25, 12), _spend(pools["c"], 0.25, 12)
        )

    spent = asyncio.run(main())
    assert sum(spent) <= 3.0 + 1e-9
    assert spent[0] == pytest.approx(0.2)
    # b and c each got half of a's $0.8 and spent past their own $1
    assert pools["b"].received_usd == {"a": pytest.approx(0.4)}
    assert spent[1] > 1.0 and spent[2] > 1.0
    assert sum(spent) > 2.6  # what no peer could use: less than one call each


def test_a_starved_node_stops_when_every_peer_is_starved_or_finished() -> None:
    pools = _pools(3.0)

    async def main() -> list[float]:
        return await asyncio.gather(*(_spend(pools[n], 0.3, 100) for n in NAMES))

    spent = asyncio.run(asyncio.wait_for(main(), timeout=30))  # none waits out its 120 s
    assert all(s <= 1.0 + 1e-9 for s in spent)


def test_a_lost_word_ends_in_the_starved_wait_s_time_limit(monkeypatch) -> None:
    monkeypatch.setattr("dei_framework.runtime.node.links.MAX_STARVED_SECONDS", 0.5)
    pools = _pools(3.0, lost={"a"})  # a's messages never arrive: the others think it runs

    async def main() -> list[float]:
        return await asyncio.gather(
            _spend(pools["a"], 0.1, 1), _spend(pools["b"], 0.3, 100), _spend(pools["c"], 0.3, 100)
        )

    spent = asyncio.run(asyncio.wait_for(main(), timeout=30))
    assert spent[1] <= 1.0 + 1e-9 and spent[2] <= 1.0 + 1e-9
    assert pools["b"].received_usd == {}


def test_a_forged_or_replayed_hand_over_adds_nothing() -> None:
    pools = _pools(3.0)
    b = pools["b"]
    b.received(
        {"kind": "money", "node": "a", "seq": 1, "state": "finished", "part_usd": 0.5, "to": ["b"]}
    )
    assert b.ledger.caps["b"].cost_usd == pytest.approx(1.5)
    for bad in (
        {"part_usd": 0.5, "seq": 2},
        {"part_usd": 99.0, "seq": 3, "node": "c"},
        {"part_usd": float("nan"), "seq": 4, "node": "c"},
        {"node": "x", "seq": 5},
    ):
        b.received({"kind": "money", "node": "a", "state": "finished", "to": ["b"], **bad})
    assert b.ledger.caps["b"].cost_usd == pytest.approx(1.5)
