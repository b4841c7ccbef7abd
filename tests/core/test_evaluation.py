"""The evaluation workers: a round's opponents are installed once, not sent with every job, and
generality runs on its own low-priority lane that never holds up candidate evaluations."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import pickle

import pytest

from dei_framework.evaluation import GENERALITY_NICENESS, Evaluator, evaluate


@pytest.fixture
def toy(toy_env):
    import toy_domain

    return toy_domain


def test_jobs_carry_an_opponent_set_id_and_workers_evaluate_as_in_process(toy, monkeypatch):
    domain = toy.ToyDomain()
    sent: list[int] = []
    submit = concurrent.futures.ProcessPoolExecutor.submit

    def measured(self, fn, *args, **kwargs):
        sent.append(len(pickle.dumps((fn, args, kwargs))))
        return submit(self, fn, *args, **kwargs)

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", measured)
    few = [domain.parse("10 10")]
    many = [domain.parse(" ".join(str((i * 7 + j) % 100) for j in range(8))) for i in range(200)]
    evaluator = Evaluator(domain, workers=1)

    async def scenario():
        small, large = evaluator.install(few), evaluator.install(many)
        assert evaluator.install(list(many)) is large  # same programs, same set
        assert large.size > 20 * small.size
        outcomes = []
        for opponents in (small, large, large, small):
            outcomes.append(await evaluator.evaluate("50 60 70", opponents, seed=1,
                                                     axes=("length", "peak")))  # fmt: skip
        return small, large, outcomes

    try:
        small, large, outcomes = asyncio.run(scenario())
    finally:
        evaluator.close()
    expected = [evaluate(domain, "50 60 70", opponents, seed=1) for opponents in (few, many)]
    assert [o.evaluation for o in outcomes] == [e.evaluation for e in (*expected, *expected[::-1])]
    assert outcomes[0].evaluation.fitness != outcomes[1].evaluation.fitness
    assert len(sent) == 4
    assert max(sent) - min(sent) < 8  # the job's size does not grow with the opponents
    assert max(sent) < large.size / 10
    assert not os.path.exists(large.path)  # close() removes the installed sets


def test_generality_never_holds_up_candidate_evaluations(toy, tmp_path):
    gate = tmp_path / "gate"
    domain = toy.ToyDomain({"generality_gate": str(gate)})
    evaluator = Evaluator(domain, workers=1)

    async def scenario():
        slow = asyncio.create_task(evaluator.generality(domain.parse("10 20 30")))
        started = tmp_path / "gate.started"
        for _ in range(6000):  # until the generality job runs in its lane
            if started.exists() and started.read_text():
                break
            await asyncio.sleep(0.01)
        opponents = evaluator.install([domain.parse("1 1")])
        outcomes = [await evaluator.evaluate(f"{i} 40", opponents, seed=0, axes=("length", "peak"))
                    for i in range(5)]  # fmt: skip
        assert not slow.done()  # every candidate finished while generality was still running
        lane = evaluator.backend._pools["generality"]
        niceness = [os.getpriority(os.PRIO_PROCESS, pid) for pid in lane._processes]
        candidate_pids = set(evaluator.backend._pools["candidates"]._processes)
        gate.write_text("go")
        generality_pid = int(started.read_text())
        return outcomes, await slow, niceness, candidate_pids, {generality_pid}

    try:
        outcomes, value, niceness, candidates, lane = asyncio.run(scenario())
    finally:
        evaluator.close()
    assert all(o.evaluation is not None for o in outcomes)
    assert value == 60 / 800
    assert candidates.isdisjoint(lane)
    lowest = min(19, os.getpriority(os.PRIO_PROCESS, 0) + GENERALITY_NICENESS)
    assert niceness and all(n >= lowest for n in niceness)
