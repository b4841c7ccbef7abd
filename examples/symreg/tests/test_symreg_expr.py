"""Parser and evaluator of the symbolic-regression example: grammar, printing, safety."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from dei_symreg.domain import SymRegDomain
from dei_symreg.expr import (
    Bin,
    Call,
    Limits,
    Neg,
    Num,
    Var,
    depth,
    evaluate,
    nonlinearity,
    parse_expression,
    size,
    to_text,
    tokenize,
)
from dei_symreg.operator import GPOperator

from dei_framework.contract.errors import InvalidProgram

VARS = ("x0", "x1")
BIG = Limits(max_chars=10**6, max_nodes=100, max_depth=24)


def parse(text: str, limits: Limits | None = None):
    return parse_expression(text, variables=VARS, limits=limits)


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("x0", Var("x0")),
        ("2.5", Num(2.5)),
        (".5e1", Num(5.0)),
        ("-x0^2", Neg(Bin("^", Var("x0"), Num(2.0)))),
        ("2^3^2", Bin("^", Num(2.0), Bin("^", Num(3.0), Num(2.0)))),
        ("2**-1", Bin("^", Num(2.0), Neg(Num(1.0)))),
        ("x0 - x1 - 1", Bin("-", Bin("-", Var("x0"), Var("x1")), Num(1.0))),
        ("x0 / x1 * 2", Bin("*", Bin("/", Var("x0"), Var("x1")), Num(2.0))),
        ("x0 + x1 * 2", Bin("+", Var("x0"), Bin("*", Var("x1"), Num(2.0)))),
        ("+x0", Var("x0")),
        ("sin(x0 + 1)", Call("sin", Bin("+", Var("x0"), Num(1.0)))),
        ("((x1))", Var("x1")),
    ],
)
def test_grammar_and_precedence(text, tree):
    assert parse(text) == tree


def test_pi_is_a_constant():
    assert parse("pi") == Num(np.pi)


@pytest.mark.parametrize(
    ("text", "column"),
    [("x0 +", 5), ("x0 $ 1", 4), ("sin x0", 5), ("x0 x1", 4), ("(x0", 4), ("x0)", 3)],
)
def test_errors_name_the_column(text, column):
    with pytest.raises(InvalidProgram, match=f"column {column}"):
        parse(text)


@pytest.mark.parametrize("name", ["x2", "y", "eval", "__import__", "os", "lambda"])
def test_unknown_names_are_rejected_with_the_allowed_ones(name):
    with pytest.raises(InvalidProgram, match="unknown name") as info:
        parse(f"{name}(x0)")
    assert "x0, x1" in str(info.value)


def test_printing_round_trips_on_random_trees():
    domain = SymRegDomain({"max_nodes": 100, "max_depth": 24})
    gp = GPOperator(domain)
    for seed in range(300):
        rng = random.Random(seed)
        tree = gp.random_tree(rng, rng.randint(1, 6), full=rng.random() < 0.5)
        text = to_text(tree)
        assert parse(text, BIG) == tree, text
        assert to_text(parse(text, BIG)) == text


def test_descriptors():
    tree = parse("x0^2 * sin(x1) + 0.5*x0")
    assert (size(tree), nonlinearity(tree), depth(tree)) == (10, 1, 4)
    assert nonlinearity(parse("x0^3 + x1 / 2 - 4 * x0 * x1")) == 0  # a polynomial
    assert nonlinearity(parse("x0 / x1")) == 1  # division by a variable
    assert nonlinearity(parse("x0^0.5 + x0^x1")) == 2  # non-integer, non-constant exponents
    assert nonlinearity(parse("exp(log(abs(x0)))")) == 3


def test_evaluation_is_vectorised():
    x0, x1 = np.linspace(-1, 1, 7), np.linspace(0, 2, 7)
    got = evaluate(parse("x0^2 * sin(x1) + 0.5*x0"), {"x0": x0, "x1": x1})
    np.testing.assert_allclose(got, x0**2 * np.sin(x1) + 0.5 * x0)
    assert evaluate(parse("3"), {"x0": x0, "x1": x1}).shape == (7,)


# --- hostile input ---------------------------------------------------------------------------


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(
    "text",
    [
        "(" * 10_000 + "x0" + ")" * 10_000,
        "-" * 10_000 + "x0",
        "sin(" * 5_000 + "x0" + ")" * 5_000,
        "2^" * 5_000 + "2",
        " + ".join(["x0"] * 5_000),
        "1" * 10_000,
        "x0 + " + "9" * 400,
        "1e999 * x0",
    ],
)
def test_hostile_input_fails_fast_with_a_message(text):
    for limits in (None, BIG):  # the character limit, then the depth and node limits
        with pytest.raises(InvalidProgram):
            parse(text, limits)


def test_nesting_within_the_limit_is_fine():
    assert parse("(" * 20 + "x0" + ")" * 20) == Var("x0")


def test_odd_characters_are_rejected():
    for text in [
        "x0\x00",
        "x0 ≤ 1",
        "x0; import os",
        "x0[0]",
        "'x0'",
        "x0 == 1",
        "x0, x1",
        "lambda: 1",
        "x0.real",
    ]:
        with pytest.raises(InvalidProgram):
            parse(text)
    assert [t.kind for t in tokenize("x0**2")] == ["name", "op", "num", "end"]


def test_numeric_accidents_become_non_finite_values_without_warnings():
    inputs = {"x0": np.array([0.0, -1.0, 1e3]), "x1": np.array([0.0, 2.0, 1e300])}
    hostile = [
        "1/0",
        "x0/x0",
        "log(x0)",
        "sqrt(x0)",
        "exp(exp(exp(x1)))",
        "x1^1e300",
        "10^400",
        "0^-1",
        "(-8)^(1/3)",
        "x1 * x1 * x1",
        "exp(1000) - exp(1000)",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for text in hostile:
            values = evaluate(parse(text), inputs)
            assert values.shape == (3,)
            assert not np.all(np.isfinite(values)), text
