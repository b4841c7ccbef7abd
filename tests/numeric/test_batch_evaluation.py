"""Batch evaluation: the evaluator sends the evaluations of one loop turn as one batch job per
worker, a domain's evaluate_batch serves them, and results do not depend on the batching."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json

import numpy as np
from dei_numeric.domain import NumericDomain, format_genome

from dei_framework import NodeConfig, RunConfig, run
from dei_framework.evaluation.local import Evaluator, evaluate


class CountingNumeric(NumericDomain):
    """The numeric domain, counting its batch calls and the programs they carried."""

    def __init__(self, options=None) -> None:
        super().__init__(options)
        self.batches: list[int] = []

    def evaluate_batch(self, programs, opponents, *, seeds):
        self.batches.append(len(programs))
        return super().evaluate_batch(programs, opponents, seeds=seeds)


def _texts(count: int, dim: int = 8) -> list[str]:
    rows = np.random.default_rng(2).normal(0, 3, size=(count, dim))
    texts = [format_genome(row) for row in rows]
    texts[5] = "1 2 3"  # does not parse: its own invalid outcome, the batch goes on
    return texts


def test_one_loop_turn_of_evaluations_is_one_batch_call() -> None:
    domain = CountingNumeric({"dim": 8})
    evaluator = Evaluator(domain, workers=0)
    texts = _texts(50)

    async def scenario():
        first = await asyncio.gather(*(evaluator.evaluate(t, [], seed=1) for t in texts))
        second = await evaluator.evaluate(texts[0], [], seed=1)  # alone: a batch of one
        return first, second

    try:
        outcomes, alone = asyncio.run(scenario())
    finally:
        evaluator.close()
    assert domain.batches == [49, 1]  # the unparsable text never reaches the domain
    expected = [evaluate(domain, text, [], seed=1) for text in texts]
    assert [o.evaluation for o in outcomes] == [e.evaluation for e in expected]
    assert outcomes[5].error == "expected 8 numbers, found 3" and outcomes[5].evaluation is None
    assert alone.evaluation == outcomes[0].evaluation


def test_a_batch_crosses_the_process_boundary_once_per_worker(monkeypatch) -> None:
    submitted: list[int] = []
    submit = concurrent.futures.ProcessPoolExecutor.submit

    def counted(self, fn, *args, **kwargs):
        if fn.__name__ == "_parse_and_evaluate_batch":
            submitted.append(len(args[1]))  # args: domain, jobs, opponents, axes, known
        return submit(self, fn, *args, **kwargs)

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", counted)
    domain = NumericDomain({"dim": 8})
    evaluator = Evaluator(domain, workers=2)
    texts = _texts(40)

    async def scenario():
        return await asyncio.gather(*(evaluator.evaluate(t, [], seed=0) for t in texts))

    try:
        outcomes = asyncio.run(scenario())
    finally:
        evaluator.close()
    assert submitted == [20, 20]
    expected = [evaluate(domain, text, [], seed=0) for text in texts]
    assert [o.evaluation for o in outcomes] == [e.evaluation for e in expected]


def test_a_run_with_and_without_a_vectorised_batch_gives_identical_archives(
    tmp_path, monkeypatch
) -> None:
    vectorised = NumericDomain.evaluate_batch

    def one_by_one(self, programs, opponents, *, seeds):
        # What evaluate() gives, program by program (NumericDomain.evaluate is a batch of one).
        return [
            vectorised(self, [program], opponents, seeds=[seed])[0]
            for program, seed in zip(programs, seeds, strict=True)
        ]

    archives = []
    for label in ("vectorised", "one-by-one"):
        if label == "one-by-one":
            monkeypatch.setattr(NumericDomain, "evaluate_batch", one_by_one)
        config = RunConfig(
            domain="numeric",
            budget=600,
            rounds=2,
            seed=4,
            eval_workers=0,
            domain_options={"dim": 6},
            nodes=[
                NodeConfig(name="a", operator="gaussian"),
                NodeConfig(name="b", operator="iso-line"),
            ],
        )
        run(config, tmp_path / label)
        archives.append(json.loads((tmp_path / label / "merged_archive.json").read_text()))
    assert len(archives[0]) > 20
    assert archives[0] == archives[1]


class FailingBatch(NumericDomain):
    """A batch that raises when it holds a genome with a large first coordinate."""

    def evaluate_batch(self, programs, opponents, *, seeds):
        if any(program.data[0] > 2.0 for program in programs):
            raise RuntimeError("first coordinate too large")
        return super().evaluate_batch(programs, opponents, seeds=seeds)


def test_a_failing_batch_is_evaluated_one_by_one_and_the_error_lands_on_its_program() -> None:
    domain = FailingBatch({"dim": 8})
    evaluator = Evaluator(domain, workers=0)
    texts = [format_genome([0.5] * 8), format_genome([3.0] + [0.0] * 7), format_genome([1.0] * 8)]

    async def scenario():
        return await asyncio.gather(*(evaluator.evaluate(t, [], seed=0) for t in texts))

    try:
        outcomes = asyncio.run(scenario())
    finally:
        evaluator.close()
    assert outcomes[1].error == "evaluation failed: RuntimeError: first coordinate too large"
    assert outcomes[0].evaluation == evaluate(domain, texts[0], [], seed=0).evaluation
    assert outcomes[2].evaluation is not None and outcomes[2].error is None
