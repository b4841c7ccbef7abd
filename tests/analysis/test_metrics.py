"""Run metrics against hand computations (:mod:`dei_framework.analysis.metrics`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dei_framework.analysis.metrics import js_divergence, mean_or_none, operator_divergence


def test_the_divergence_matches_a_hand_computation() -> None:
    # p = (1/2, 1/2), q = (1, 0); their mean m = (3/4, 1/4).
    kl_p = 0.5 * math.log2(0.5 / 0.75) + 0.5 * math.log2(0.5 / 0.25)
    kl_q = 1.0 * math.log2(1.0 / 0.75)
    assert js_divergence(np.array([3, 3]), np.array([7, 0])) == pytest.approx((kl_p + kl_q) / 2)
    assert (kl_p + kl_q) / 2 == pytest.approx(0.311278, abs=1e-6)


def test_the_divergence_runs_from_zero_for_the_same_proportions_to_one_for_no_shared_cell() -> None:
    assert js_divergence(np.array([1, 2, 3]), np.array([10, 20, 30])) == pytest.approx(0.0)
    assert js_divergence(np.array([4, 0, 0]), np.array([0, 1, 5])) == pytest.approx(1.0)


def test_the_divergence_is_symmetric() -> None:
    p, q = np.array([5, 1, 0, 2]), np.array([1, 1, 6, 0])
    assert js_divergence(p, q) == pytest.approx(js_divergence(q, p))


def test_the_divergence_of_an_empty_histogram_is_undefined() -> None:
    assert math.isnan(js_divergence(np.array([0, 0]), np.array([1, 0])))


def test_operator_divergence_names_each_pair_once_and_averages_the_defined_ones() -> None:
    divergence = operator_divergence(
        {
            "node-b": np.array([0, 2]),
            "node-a": np.array([2, 0]),
            "node-c": np.array([1, 1]),
            "node-d": np.array([0, 0]),  # nothing placed: its pairs are undefined
        }
    )

    pairs = divergence["pairs"]
    assert list(pairs) == [
        "node-a|node-b",
        "node-a|node-c",
        "node-a|node-d",
        "node-b|node-c",
        "node-b|node-d",
        "node-c|node-d",
    ]
    assert pairs["node-a|node-b"] == pytest.approx(1.0)
    half = js_divergence(np.array([2, 0]), np.array([1, 1]))
    assert pairs["node-a|node-c"] == pytest.approx(half)
    assert pairs["node-b|node-c"] == pytest.approx(half)
    assert math.isnan(pairs["node-a|node-d"])
    assert divergence["mean"] == pytest.approx((1.0 + 2 * half) / 3)


def test_one_node_has_no_pairs() -> None:
    assert operator_divergence({"node-0": np.array([1, 2])}) == {"mean": None, "pairs": {}}


def test_the_mean_leaves_out_missing_values() -> None:
    assert mean_or_none([1.0, None, 2.0, 6.0]) == pytest.approx(3.0)
    assert mean_or_none([None, None]) is None
    assert mean_or_none([]) is None
