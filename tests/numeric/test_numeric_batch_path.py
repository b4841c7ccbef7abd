"""The numeric operators' array path: per-request noise whatever the grouping, and a library loop
over ``propose_genomes`` and ``tell_batch`` that builds the archive the text path builds."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from dei_numeric.domain import NumericDomain, format_genome
from dei_numeric.operators import create_gaussian, create_iso_line, seeded_normals

from dei_framework import OperatorRequest, OperatorSettings, Scheduler
from dei_framework import evaluate as evaluate_text
from dei_framework.contract.records import Candidate


def _settings(**options) -> OperatorSettings:
    return OperatorSettings(spec="x", node="n", options=options)


def test_seeded_normals_depend_on_the_seed_alone_and_look_standard_normal() -> None:
    seeds = list(range(0, 4000, 3))
    together = seeded_normals(seeds, 5)
    assert together.shape == (len(seeds), 5)
    for index in (0, 7, len(seeds) - 1):
        assert together[index].tolist() == seeded_normals([seeds[index]], 5)[0].tolist()
    assert seeded_normals([1], 5).tolist() != seeded_normals([2], 5).tolist()
    values = seeded_normals(range(20_000), 10).ravel()
    n = len(values)
    # 200 000 draws: the mean is within 5 standard errors of 0, the variance of 1; the tails
    # are present (P(|z| > 3) = 0.27 %) in about the right share.
    assert abs(values.mean()) < 5 / math.sqrt(n)
    assert abs(values.var() - 1) < 5 * math.sqrt(2 / n)
    assert 0.0022 < np.mean(np.abs(values) > 3) < 0.0032
    assert np.all(np.isfinite(values))


@pytest.mark.parametrize("factory", [create_gaussian, create_iso_line])
def test_a_request_gets_the_same_child_alone_in_a_batch_or_as_an_array(factory) -> None:
    domain = NumericDomain({"dim": 6})
    operator = factory(_settings(), domain)
    parent = Candidate(text=format_genome([1.0, -2.0, 0.5, 0.0, 3.0, -1.5]))
    other = Candidate(text=format_genome([0.0] * 6))
    requests = [
        OperatorRequest(key=f"k{seed}", kind=kind, messages=(), parent=p, others=o, seed=seed)
        for seed, (kind, p, o) in enumerate(
            [("new", None, ()), ("mutate", parent, ()), ("mutate", parent, (other,))] * 3
        )
    ]
    alone = [asyncio.run(operator.propose(request)).text for request in requests]
    batch = [reply.text for reply in asyncio.run(operator.propose_batch(requests))]
    genomes = operator.propose_genomes(requests)
    assert batch == alone
    assert [format_genome(row) for row in genomes.tolist()] == alone
    assert len(set(alone)) == len(alone)  # every seed moves differently


def test_a_parents_cached_genome_and_its_text_give_the_same_child() -> None:
    domain = NumericDomain({"dim": 4})
    operator = create_gaussian(_settings(sigma=0.3), domain)
    genome = np.array([0.1, 0.2, -0.3, 4.0])
    with_data = Candidate(text=format_genome(genome.tolist()), data=genome)
    text_only = Candidate(text=format_genome(genome.tolist()))
    requests = [
        OperatorRequest(key="k", kind="mutate", messages=(), parent=parent, seed=9)
        for parent in (with_data, text_only)
    ]
    first, second = operator.propose_genomes(requests).tolist()
    assert first == second


def _array_loop(domain: NumericDomain, operator, **settings) -> Scheduler:
    scheduler = Scheduler.for_domain(domain, name="n", **settings)
    while not scheduler.finished:
        items = scheduler.ask(32)
        genomes = operator.propose_genomes(items)
        scheduler.tell_batch(
            items,
            texts=domain.genome_texts(genomes),
            fitness=domain.objective(genomes),
            descriptors=domain.descriptors(genomes),
            data=genomes,
            operator=operator.label,
        )
    return scheduler


def _text_loop(domain: NumericDomain, operator, **settings) -> Scheduler:
    scheduler = Scheduler.for_domain(domain, name="n", **settings)
    while not scheduler.finished:
        results = []
        for item in scheduler.ask(5):
            reply = asyncio.run(operator.propose(item.request(domain)))
            outcome = evaluate_text(
                domain, reply.text, (), seed=item.eval_seed, axes=scheduler.space.names
            )
            results.append(outcome.result(item, operator=operator.label))
        scheduler.tell(results)
    return scheduler


@pytest.mark.parametrize(
    ("factory", "options"), [(create_gaussian, {}), (create_iso_line, {"iso_sigma": 0.3})]
)
def test_the_array_loop_builds_the_archive_the_text_loop_builds(factory, options) -> None:
    domain = NumericDomain({"dim": 8, "bins": 20})
    operator = factory(_settings(**options), domain)
    settings = {"calls": 600, "rounds": 2, "seed": 5, "lag": 32}
    array = _array_loop(domain, operator, **settings)
    text = _text_loop(domain, operator, **settings)
    assert array.archive.to_json() == text.archive.to_json()
    assert array.history == text.history
    assert array.history[-1].stats.num_elites > 30
    # Elites keep their genomes: operators need not parse their texts.
    elite = array.archive.occupied[0]
    assert elite.data.tolist() == domain.genome(elite.text).tolist()


def test_concurrent_proposals_are_drawn_in_one_pass_with_the_same_replies() -> None:
    domain = NumericDomain({"dim": 5})
    operator = create_gaussian(_settings(), domain)
    parent = Candidate(text=format_genome([0.5] * 5))
    requests = [
        OperatorRequest(
            key=f"k{seed}",
            kind="mutate" if seed % 2 else "new",
            messages=(),
            parent=parent if seed % 2 else None,
            seed=seed,
        )
        for seed in range(8)
    ]
    alone = [asyncio.run(operator.propose(request)).text for request in requests]
    passes = []
    draw = operator.propose_genomes
    operator.propose_genomes = lambda batch: passes.append(len(batch)) or draw(batch)

    async def together() -> list[str]:
        replies = await asyncio.gather(*(operator.propose(request) for request in requests))
        return [reply.text for reply in replies]

    assert asyncio.run(together()) == alone
    assert passes == [8]
    assert asyncio.run(operator.propose(requests[3])).text == alone[3] and passes == [8, 1]


def test_a_failing_pass_raises_in_every_caller() -> None:
    domain = NumericDomain({"dim": 3})
    operator = create_gaussian(_settings(), domain)
    bad = Candidate(text="not numbers")
    requests = [
        OperatorRequest(key=f"k{i}", kind="mutate", messages=(), parent=bad, seed=i)
        for i in range(3)
    ]

    async def together() -> list:
        return await asyncio.gather(
            *(operator.propose(r) for r in requests), return_exceptions=True
        )

    outcomes = asyncio.run(together())
    assert len(outcomes) == 3 and all("expected 3 numbers" in str(o) for o in outcomes)
