"""The numeric reference domain and its operators: parsing, objective, descriptor, batch."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from dei_numeric.domain import NumericDomain, format_genome
from dei_numeric.operators import create_gaussian, create_iso_line

from dei_framework import ConfigError, InvalidProgram, OperatorRequest, OperatorSettings, Scheduler
from dei_framework import evaluate as evaluate_text
from dei_framework.contract.records import Candidate


def test_parse_round_trips_and_refuses_bad_genomes() -> None:
    domain = NumericDomain({"dim": 4})
    program = domain.parse("Here: [0.1, -2, 3e-1, 4.5]")
    assert program.text == "0.1 -2.0 0.3 4.5"
    assert domain.parse(program.text).text == program.text
    with pytest.raises(InvalidProgram, match="expected 4 numbers, found 3"):
        domain.parse("1 2 3")
    with pytest.raises(InvalidProgram, match="finite"):
        domain.parse("1 2 nan 4")


def test_bad_options_name_the_cause() -> None:
    with pytest.raises(ConfigError, match="unknown options"):
        NumericDomain({"dims": 3})
    with pytest.raises(ConfigError, match="function must be one of"):
        NumericDomain({"function": "ackley"})
    with pytest.raises(ConfigError, match="dim must be at least 2"):
        NumericDomain({"dim": 1})


@pytest.mark.parametrize("function", ["sphere", "rastrigin"])
def test_objective_is_100_at_the_optimum_and_near_0_at_the_far_corner(function: str) -> None:
    domain = NumericDomain({"dim": 6, "function": function})
    optimum = np.full((1, 6), 0.4 * 5.12)
    corner = np.full((1, 6), -5.12)
    assert domain.objective(optimum)[0] == pytest.approx(100.0)
    # Sphere: the far corner is the worst point (0); Rastrigin's 0 is a bound on its worst.
    assert 0.0 <= domain.objective(corner)[0] < (1e-9 if function == "sphere" else 25.0)
    inside = np.random.default_rng(0).uniform(-5.12, 5.12, size=(500, 6))
    values = domain.objective(inside)
    assert np.all((values >= 0) & (values <= 100))


def test_descriptor_is_the_clipped_linear_projection() -> None:
    domain = NumericDomain({"dim": 4})
    # 10 is outside the bounds: it counts as 5.12 / 10; -6 as 5.12 / -6.
    evaluation = domain.evaluate(domain.parse("1 10 -6 2"), (), seed=0)
    assert evaluation.descriptor["sum_first_half"] == pytest.approx(1 + 0.512)
    assert evaluation.descriptor["sum_second_half"] == pytest.approx(5.12 / -6 + 2)
    assert domain.initial_opponents() == []
    axes = {spec.name: spec.axis for spec in domain.descriptor_axes()}
    assert axes["sum_first_half"].bins == 100 and axes["sum_first_half"].high == 2 * 5.12


def test_batch_and_single_evaluation_agree_to_the_bit() -> None:
    domain = NumericDomain({"dim": 20, "function": "rastrigin"})
    rng = np.random.default_rng(5)
    programs = [domain.parse(format_genome(row)) for row in rng.normal(0, 4, size=(64, 20))]
    batch = domain.evaluate_batch(programs, (), seeds=[0] * 64)
    single = [domain.evaluate(program, (), seed=0) for program in programs]
    assert batch == single
    assert len({evaluation.fitness for evaluation in batch}) == 64


def _settings(**options) -> OperatorSettings:
    return OperatorSettings(spec="x", node="n0", options=options)


def _propose(operator, **request) -> str:
    reply = asyncio.run(operator.propose(OperatorRequest(key="k", messages=(), **request)))
    return reply.text


def test_operators_are_seeded_and_move_as_documented() -> None:
    domain = NumericDomain({"dim": 6})
    parent = Candidate(text=format_genome([1.0] * 6))
    other = Candidate(text=format_genome([3.0] * 6))
    gaussian = create_gaussian(_settings(sigma=0.1), domain)
    child = domain.genome(_propose(gaussian, kind="mutate", parent=parent, seed=4))
    assert (
        child.tolist()
        == domain.genome(_propose(gaussian, kind="mutate", parent=parent, seed=4)).tolist()
    )
    assert 0 < np.abs(child - 1.0).max() < 1.0
    iso_line = create_iso_line(_settings(iso_sigma=1e-9, line_sigma=1.0), domain)
    moved = domain.genome(_propose(iso_line, kind="mutate", parent=parent, others=(other,), seed=2))
    # Tiny isotropic noise: the child lies on the line through parent and other.
    steps = (moved - 1.0) / 2.0
    assert np.ptp(steps) < 1e-6 and abs(steps[0]) > 1e-3
    new = domain.genome(_propose(gaussian, kind="new", seed=1))
    assert new.shape == (6,)
    with pytest.raises(ConfigError, match="must be > 0"):
        create_gaussian(_settings(sigma=0), domain)


def test_an_ask_tell_search_fills_the_grid() -> None:
    domain = NumericDomain({"dim": 10})
    operator = create_gaussian(_settings(), domain)
    scheduler = Scheduler.for_domain(domain, name="n", calls=400, rounds=1, seed=3)
    while not scheduler.finished:
        items = scheduler.ask(8)
        results = []
        for item in items:
            text = _propose(operator, kind=item.kind, parent=item.parent, seed=item.seed)
            outcome = evaluate_text(
                domain, text, (), seed=item.eval_seed, axes=scheduler.space.names
            )
            results.append(outcome.result(item, operator=operator.label))
        scheduler.tell(results)
    stats = scheduler.history[-1].stats
    assert stats.num_elites > 20 and 50 < stats.obj_max <= 100


def test_a_text_the_operators_wrote_parses_as_any_text_does() -> None:
    from dei_numeric import domain as numeric_domain

    domain = NumericDomain({"dim": 6})
    values = [0.1, -2.5, 3.0, 1e-300, -0.0, 5.12]
    text = numeric_domain.written_genome(values)
    assert text == format_genome(values)
    remembered = domain.parse(text)
    numeric_domain._WRITTEN.clear()  # the same text, read number by number
    read = domain.parse(text)
    assert remembered.text == read.text == text
    assert np.array_equal(remembered.data, read.data)
    # Remembered or not, a text of another length or with a non-finite number is refused.
    numeric_domain.written_genome(values)
    with pytest.raises(InvalidProgram):
        NumericDomain({"dim": 5}).parse(text)
    with pytest.raises(InvalidProgram):
        domain.parse(numeric_domain.written_genome([0.0, 1.0, float("nan"), 0.0, 0.0, 0.0]))


def test_the_operators_texts_are_remembered_in_bounded_number() -> None:
    from dei_numeric import domain as numeric_domain

    for index in range(numeric_domain.WRITTEN_KEPT + 50):
        numeric_domain.written_genome([float(index), 0.0])
    assert len(numeric_domain._WRITTEN) == numeric_domain.WRITTEN_KEPT
    assert format_genome([0.0, 0.0]) not in numeric_domain._WRITTEN  # the oldest went first
