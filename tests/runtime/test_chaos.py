"""DEI_CHAOS_STALL stalls every way work enters: single, batched and array evaluations, and
calls."""

from __future__ import annotations

import asyncio

import pytest

from dei_framework.runtime import builders as chaos


class _Recorder:
    """Stands in for an evaluator and an operator: async methods that note their calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def evaluate(self, *args: object) -> str:
        self.calls.append("evaluate")
        return "one"

    async def evaluate_many(self, *args: object) -> str:
        self.calls.append("evaluate_many")
        return "many"

    async def evaluate_genomes(self, *args: object) -> str:
        self.calls.append("evaluate_genomes")
        return "rows"

    async def propose(self, *args: object) -> str:
        self.calls.append("propose")
        return "reply"

    async def propose_batch(self, *args: object) -> str:
        self.calls.append("propose_batch")
        return "replies"


def test_every_entry_point_is_stalled_and_still_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setenv(chaos.STALL_ENV, "0.5")
    monkeypatch.setattr(chaos.asyncio, "sleep", fake_sleep)
    evaluator, operator = _Recorder(), _Recorder()
    chaos.install_chaos(evaluator, {"n": operator})  # type: ignore[arg-type]

    async def use() -> list[str]:
        return [
            await evaluator.evaluate(),
            await evaluator.evaluate_many(),
            await evaluator.evaluate_genomes(),
            await operator.propose(),
            await operator.propose_batch(),
        ]

    assert asyncio.run(use()) == ["one", "many", "rows", "reply", "replies"]
    assert evaluator.calls == ["evaluate", "evaluate_many", "evaluate_genomes"]
    assert operator.calls == ["propose", "propose_batch"]
    assert len(slept) == 5 and all(0.0 <= s <= 0.5 for s in slept)


def test_nothing_is_wrapped_when_the_variable_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(chaos.STALL_ENV, raising=False)
    evaluator, operator = _Recorder(), _Recorder()
    chaos.install_chaos(evaluator, {"n": operator})  # type: ignore[arg-type]
    assert "evaluate_many" not in vars(evaluator) and "propose_batch" not in vars(operator)
