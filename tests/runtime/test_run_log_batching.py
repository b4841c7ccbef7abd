"""The per-evaluation costs a run pays beside its search: log lines written once per turn of
the event loop (same content, same order), files read whole, evaluations of a cheap domain kept
on the event loop, and call records built without generic walks — each giving exactly what the
plain way gives."""

from __future__ import annotations

import asyncio
import json

import attrs
import pytest

from dei_framework.contract.errors import ConfigError
from dei_framework.contract.operators import OperatorReply
from dei_framework.evaluation.local import Evaluator, LocalBackend, evaluate
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.budget.usage import NodeUsage
from dei_framework.runtime.files.run_dir import RunDir, dumps, read_jsonl
from dei_framework.runtime.operator_calls import reply_json


def test_lines_of_one_loop_turn_reach_the_file_together_in_order(tmp_path) -> None:
    run_dir = RunDir(tmp_path)
    events = tmp_path / "events.jsonl"

    async def scenario() -> tuple[int, list[dict], int]:
        for index in range(5):
            run_dir.log_events([{"event": "evaluated", "index": index}])
            run_dir.log_calls([{"key": f"k{index}"}])
        during = events.stat().st_size if events.exists() else 0
        read = list(read_jsonl(run_dir.events_path))  # a reader sees the pending lines
        run_dir.log_events([{"event": "evaluated", "index": 5}])
        await asyncio.sleep(0)  # the turn ends: the line logged since is written
        return during, read, events.stat().st_size

    during, read, after = asyncio.run(scenario())
    assert during == 0  # nothing written while the turn went on
    assert [e["index"] for e in read] == [0, 1, 2, 3, 4]
    expected = "".join(dumps({"event": "evaluated", "index": i}) + "\n" for i in range(6))
    assert after == len(expected)
    run_dir.close()
    assert events.read_text() == expected
    assert (tmp_path / "calls.jsonl").read_text() == "".join(
        dumps({"key": f"k{i}"}) + "\n" for i in range(5)
    )


def test_offsets_and_close_write_pending_lines_first(tmp_path) -> None:
    run_dir = RunDir(tmp_path)

    async def scenario() -> dict[str, int]:
        run_dir.log_events([{"event": "round", "round": 0}])
        run_dir.log_calls([{"key": "a"}, {"key": "b"}])
        return run_dir.offsets()  # a checkpoint's offsets cover every line logged so far

    offsets = asyncio.run(scenario())
    assert offsets == {
        "events.jsonl": len(dumps({"event": "round", "round": 0})) + 1,
        "calls.jsonl": len(dumps({"key": "a"})) + len(dumps({"key": "b"})) + 2,
    }
    run_dir.log_events([{"event": "node_stopped"}])  # no loop: written at once
    assert list(read_jsonl(tmp_path / "events.jsonl"))[-1] == {"event": "node_stopped"}
    run_dir.close()


def test_read_jsonl_skips_a_torn_last_line_and_refuses_any_other_damage(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    records = [{"a": 1}, {"b": [1, 2]}, {"c": "é"}]
    whole = "".join(json.dumps(r) + "\n" for r in records)
    path.write_text(whole + '{"torn": ', encoding="utf-8")
    assert list(read_jsonl(path)) == records
    path.write_text(whole, encoding="utf-8")
    assert list(read_jsonl(path)) == records
    assert list(read_jsonl(path, limit=len(json.dumps(records[0])) + 3)) == records[:1]
    # A whole line that is not an object (blank, a list, not JSON) is no torn line: damage.
    for damaged, offset in (
        ('{"a": 1}\n\n{"b": 2}\n', 9),
        ('{"a": 1}\n[1, 2]\n', 9),
        ('{"a": 1}\n{"b": 2}\n[1\n', 18),
    ):
        path.write_text(damaged, encoding="utf-8")
        with pytest.raises(
            ConfigError,
            match=f"events.jsonl is damaged at byte {offset}: the line is not a JSON object",
        ):
            list(read_jsonl(path))


def test_a_cheap_domain_is_evaluated_on_the_loop_after_one_measured_batch(toy_env, monkeypatch):
    import toy_domain

    domain = toy_domain.ToyDomain()
    hops: list[str] = []
    run = LocalBackend.run

    async def counted(self, function, *args, lane="candidates"):
        hops.append(function.__name__)
        return await run(self, function, *args, lane=lane)

    monkeypatch.setattr(LocalBackend, "run", counted)
    evaluator = Evaluator(domain, workers=0)
    texts = ["50 60 70", "10 10", "not a program", "1 2 3 4"]
    opponents = [domain.parse("10 10")]

    async def scenario():
        batches = []
        for _ in range(3):
            batches.append(
                await evaluator.evaluate_many(
                    [(t, 5) for t in texts], opponents, axes=("length", "peak")
                )
            )
        single = await evaluator.evaluate(texts[0], opponents, seed=5, axes=("length", "peak"))
        return batches, single

    try:
        batches, single = asyncio.run(scenario())
    finally:
        evaluator.close()
    expected = [evaluate(domain, t, opponents, seed=5, axes=("length", "peak")) for t in texts]
    for batch in batches:
        assert [(o.evaluation, o.error) for o in batch] == [
            (e.evaluation, e.error) for e in expected
        ]
    assert (single.evaluation, single.error) == (expected[0].evaluation, expected[0].error)
    assert hops == ["_timed_batch"]  # measured once in a thread, then evaluated in place


def test_call_records_equal_the_generic_serialisation() -> None:
    for reply in (
        OperatorReply(text="MOV 0, 1"),
        OperatorReply(
            text="x", prompt_tokens=7, completion_tokens=3, cost_usd=None, attempts=2, model="m"
        ),
    ):
        assert reply_json(reply) == attrs.asdict(reply)
        assert list(reply_json(reply)) == list(attrs.asdict(reply))
    ledger = BudgetLedger(quotas={"n": 5})
    cases = [
        dict(attempts=1, prompt_tokens=None, completion_tokens=None, cost_usd=0.0),
        dict(attempts=2, prompt_tokens=10, completion_tokens=5, cost_usd=None),
        dict(attempts=1, prompt_tokens=0, completion_tokens=0, cost_usd=0.125),
    ]
    for case in cases:
        meter = ledger.reserve("n")
        meter.record(**case)
        meter.commit(OperatorReply(text="x"))
        generic = NodeUsage(
            attempts=case["attempts"],
            prompt_tokens=case["prompt_tokens"] or 0,
            completion_tokens=case["completion_tokens"] or 0,
            cost_usd=case["cost_usd"] or 0.0,
            unreported_attempts=case["attempts"] if case["prompt_tokens"] is None else 0,
            unpriced_attempts=case["attempts"] if case["cost_usd"] is None else 0,
        ).to_json()
        assert meter.to_json() == {
            key: generic[key]
            for key in ("attempts", "prompt_tokens", "completion_tokens", "cost_usd")
        }
    totals = ledger.usage["n"]
    assert (
        totals.calls,
        totals.attempts,
        totals.prompt_tokens,
        totals.completion_tokens,
        totals.unreported_attempts,
        totals.unpriced_attempts,
    ) == (3, 4, 10, 5, 1, 2)
    assert totals.cost_usd == 0.125
