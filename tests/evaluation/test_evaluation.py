"""The evaluation workers: a round's opponents are installed once, not sent with every job, and
generality runs on its own low-priority lane that never holds up candidate evaluations."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import pickle

import pytest

from dei_framework.evaluation.local import GENERALITY_NICENESS, Evaluator, Parsed, evaluate


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
            outcomes.append(
                await evaluator.evaluate("50 60 70", opponents, seed=1, axes=("length", "peak"))
            )
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
        outcomes = [
            await evaluator.evaluate(f"{i} 40", opponents, seed=0, axes=("length", "peak"))
            for i in range(5)
        ]
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


def test_a_batch_of_dear_evaluations_is_cut_finer_than_one_job_per_worker(toy):
    """Evaluations that take long go in more, smaller jobs than workers (a worker that finishes
    early takes the next); cheap ones stay one job per worker; the outcomes do not change."""
    import time

    from dei_framework.evaluation.local import JOBS_PER_WORKER, LocalBackend

    class Dear(toy.ToyDomain):
        def evaluate(self, program, opponents, *, seed):
            time.sleep(0.03)
            return super().evaluate(program, opponents, seed=seed)

    class TwoWorkers(LocalBackend):
        """Threads of this process that say they are two workers; notes each job's size."""

        def __init__(self, domain, sizes: list[int]) -> None:
            super().__init__(domain, workers=0)
            self.sizes = sizes

        @property
        def workers(self) -> int:
            return 2

        async def run(self, function, *args, lane="candidates"):
            if function.__name__ == "_parse_and_evaluate_batch":
                self.sizes.append(len(args[0]))
            return await super().run(function, *args, lane=lane)

    def batches(domain) -> tuple[list[list[int]], list[list]]:
        sizes: list[int] = []
        evaluator = Evaluator(domain, backend=TwoWorkers(domain, sizes))
        opponents = [domain.parse("10 10")]
        jobs = [(f"{i} {i * 3 % 100}", i) for i in range(40)]

        async def scenario():
            results = []
            for _ in range(2):
                before = len(sizes)
                outcomes = await evaluator.evaluate_many(jobs, opponents)
                results.append((sorted(sizes[before:]), [o.evaluation for o in outcomes]))
            return results

        try:
            results = asyncio.run(scenario())
        finally:
            evaluator.close()
        return [cut for cut, _ in results], [evaluations for _, evaluations in results]

    dear_cuts, dear_evaluations = batches(Dear())
    cheap_cuts, cheap_evaluations = batches(toy.ToyDomain())
    # Nothing measured before the first batch: one job per worker.
    assert dear_cuts[0] == cheap_cuts[0] == [20, 20]
    # 30 ms each: jobs of about 0.1 s (4 evaluations), at most JOBS_PER_WORKER per worker.
    assert JOBS_PER_WORKER == 4 and dear_cuts[1] == [5] * 8
    assert cheap_cuts[1] == [20, 20]
    assert dear_evaluations[0] == dear_evaluations[1] == cheap_evaluations[0]


@pytest.mark.parametrize("workers", [0, 1])
def test_parse_gives_the_program_or_why_not_in_one_record(toy, workers):
    domain = toy.ToyDomain()
    evaluator = Evaluator(domain, workers=workers)

    async def scenario():
        return [await evaluator.parse(text) for text in ("PROGRAM: 07 12", "x y")]

    try:
        good, bad = asyncio.run(scenario())
    finally:
        evaluator.close()
    assert good == Parsed(program=domain.parse("7 12")) and good.valid
    assert good.program.text == "7 12" and good.error is None
    assert bad.program is None and not bad.valid
    assert bad.error == "line 1: expected 1-8 integers in [0, 99], got 'x y'"


def test_a_parser_that_breaks_gives_a_parse_failed_record(toy, monkeypatch):
    domain = toy.ToyDomain()

    def broken(reply: str):
        raise KeyError("oops")

    monkeypatch.setattr(domain, "parse", broken)
    evaluator = Evaluator(domain, workers=0)
    try:
        parsed = asyncio.run(evaluator.parse("1 2"))
    finally:
        evaluator.close()
    assert parsed == Parsed(error="parse failed: KeyError: 'oops'")
