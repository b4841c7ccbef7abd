"""The symbolic-regression domain: data, fitness, descriptors, extraction, prompts, pickling."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from dei_symreg.domain import DEFAULT_OPTIONS, SymRegDomain

from dei_framework import Domain, Program
from dei_framework.contract.errors import ConfigError, InvalidProgram
from dei_framework.contract.records import Candidate


@pytest.fixture(scope="module")
def domain() -> SymRegDomain:
    return SymRegDomain()


def score(domain: SymRegDomain, text: str):
    return domain.evaluate(domain.parse(text), [], seed=0)


def test_is_a_domain_with_its_defaults(domain):
    assert isinstance(domain, Domain)
    assert domain.name == "symreg" and domain.fitness_floor == 0.0
    assert domain.default_axes == ("size", "nonlinearity")
    assert {a.name for a in domain.descriptor_axes()} >= set(domain.default_axes)
    assert domain.options() == {**DEFAULT_OPTIONS}


def test_dataset_is_deterministic_with_a_held_out_split():
    a, b = SymRegDomain(), SymRegDomain()
    np.testing.assert_array_equal(a.dataset.x_train, b.dataset.x_train)
    np.testing.assert_array_equal(a.dataset.y_test, b.dataset.y_test)
    assert len(a.dataset.y_test) == 64 and len(a.dataset.y_train) == 192
    other = SymRegDomain({"data_seed": 1})
    assert not np.array_equal(a.dataset.x_train, other.dataset.x_train)
    assert a.dataset.x_train.min() >= -3 and a.dataset.x_train.max() < 3


def test_fitness_is_one_over_one_plus_nmse(domain):
    perfect = score(domain, "x0^2 * sin(x1) + 0.5*x0")
    assert perfect.fitness == pytest.approx(1.0)
    assert perfect.info["nmse"] == pytest.approx(0.0, abs=1e-12)
    mean = float(np.mean(domain.dataset.y_train))
    assert score(domain, repr(mean)).fitness == pytest.approx(0.5)
    partial = score(domain, "0.5*x0")
    assert 0.0 < partial.fitness < 1.0
    assert domain.generality(domain.parse("x0^2 * sin(x1) + 0.5*x0")) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "text", ["1/(x0 - x0)", "log(x0)", "sqrt(x1)", "exp(exp(exp(x0)))", "x0^1e300", "0/0"]
)
def test_numeric_errors_get_the_floor_quietly(domain, text):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluation = score(domain, text)
    assert evaluation.fitness == domain.fitness_floor == 0.0
    assert evaluation.info["nmse"] is None  # strict JSON in the event log: no Infinity


def test_descriptors_of_every_axis(domain):
    evaluation = score(domain, "x0^2 * sin(x1) + 0.5*x0")
    assert dict(evaluation.descriptor) == {
        "size": 10,
        "nonlinearity": 1,
        "depth": 4,
        "constants": 2,
    }
    from dei_framework import DescriptorSpace

    space = DescriptorSpace([a.axis for a in domain.descriptor_axes()][:2])
    assert space.shape == (8, 6)
    assert space.cell(evaluation.descriptor) == (3, 1)  # size 10 is in [8, 12)


@pytest.mark.parametrize(
    "reply",
    [
        "x0 * sin(x1)",
        "```\nx0 * sin(x1)\n```",
        "Here it is:\n```python\ny = x0 * np.sin(x1)  # fits well\n```\nHope that helps.",
        "```python\ndef f(x0, x1):\n    return x0 * math.sin(x1)\n```",
        "The best expression is `x0 * sin(x1)`.",
        "Final answer: x0 * sin(x1)",
        "f(x0, x1) = x0*sin(x1);",
        "I think\n\nx0 * sin(x1).",
    ],
)
def test_parse_extracts_the_expression(domain, reply):
    assert domain.parse(reply).text == "x0 * sin(x1)"


def test_parse_reports_why_nothing_was_found(domain):
    with pytest.raises(InvalidProgram, match="no expression"):
        domain.parse("   \n")
    with pytest.raises(InvalidProgram, match="unknown name 'z'"):
        domain.parse("```\nz + 1\n```")
    with pytest.raises(InvalidProgram):
        domain.parse("I cannot help with that.")
    with pytest.raises(InvalidProgram):
        domain.parse("x0 +\n" * 100_000)  # a huge reply is cut short, not read forever


def test_programs_and_the_domain_pickle(domain):
    program = domain.parse("x0 + cos(x1)")
    copy = pickle.loads(pickle.dumps((domain, program)))
    assert copy[1] == program
    assert copy[0].evaluate(copy[1], [], seed=0).fitness == score(domain, "x0 + cos(x1)").fitness


def test_evaluate_accepts_a_program_without_data(domain):
    assert domain.evaluate(Program(text="x0"), [], seed=0).fitness == score(domain, "x0").fitness


def test_opponents_do_not_change_fitness(domain):
    program = domain.parse("x0 + x1")
    opponents = [domain.parse(t) for t in domain.initial_opponents()]
    assert domain.evaluate(program, opponents, seed=1) == domain.evaluate(program, [], seed=2)
    assert domain.initial_opponents() == ["x0", "x1", "x0 * x1"]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"colour": "red"}, "unknown domain options"),
        ({"target": "x0 +"}, "target"),
        ({"target": "log(x0)"}, "not finite"),
        ({"samples": 2}, "samples"),
        ({"low": 1, "high": 0}, "high > low"),
        ({"max_nodes": 10_000}, "max_nodes"),
        ({"max_depth": "deep"}, "invalid option"),
        ({"variables": ["x", "x"]}, "distinct"),
    ],
)
def test_bad_options_are_config_errors(options, match):
    with pytest.raises(ConfigError, match=match):
        SymRegDomain(options)


def test_other_variables_and_targets():
    domain = SymRegDomain({"variables": "x,y", "target": "x*y + 1", "noise": 0.1})
    assert domain.variables == ("x", "y")
    assert domain.initial_opponents() == ["x", "y", "x * y"]
    assert 0.9 < score(domain, "x*y + 1").fitness < 1.0  # noise: the truth is not perfect


def test_messages_describe_the_task(domain):
    new = domain.messages("new")
    assert [m["role"] for m in new] == ["system", "user"]
    assert "x0, x1" in new[0]["content"] and "sin" in new[0]["content"]
    assert "fenced code block" in new[1]["content"]
    parent = Candidate(id="p", text="x0 + 1", fitness=0.7, descriptor={"size": 3})
    other = Candidate(id="o", text="sin(x1)", fitness=0.6, descriptor={"size": 2})
    mutate = domain.messages("mutate", parent=parent, others=[other], feedback="column 3: oops")
    text = mutate[1]["content"]
    assert "x0 + 1" in text and "sin(x1)" in text and "column 3: oops" in text
    assert "0.7000" in text
