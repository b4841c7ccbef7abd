"""The statistics behind ``comparisons``: known p-values, ties, and interval coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dei_framework.stats import TEST_NAME, bootstrap_ci, compare, mann_whitney


def test_complete_separation_gives_the_textbook_exact_p_value() -> None:
    # Of the C(10, 5) = 252 ways to split ranks 1..10, only the two extreme ones are as far
    # from the mean U as the observed split: p = 2 / 252.
    result = mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert result.exact and result.u == 0.0
    assert result.p_value == pytest.approx(2 / 252)
    assert mann_whitney([6, 7, 8, 9, 10], [1, 2, 3, 4, 5]).u == 25.0


def test_a_hand_counted_p_value() -> None:
    # a = {1, 2, 4}, b = {3, 5, 6}: U = 1 (only 4 > 3). Splits of 6 ranks into 3: 20; U counts
    # 0, 1, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 7, 7, 8, 9; |U - 4.5| >= 3.5 for
    # U in {0, 1, 8, 9}: 4 splits, p = 0.2.
    assert mann_whitney([1, 2, 4], [3, 5, 6]).p_value == pytest.approx(0.2)


def test_identical_samples_give_p_one_and_ties_use_midranks() -> None:
    assert mann_whitney([2, 2, 2], [2, 2, 2]).p_value == pytest.approx(1.0)
    result = mann_whitney([1, 2, 2], [2, 3, 3])
    assert result.u == 1.0  # 1 < all (0), the 2s tie the 2 (0.5 each), lose to the 3s


def test_large_samples_fall_back_to_a_seeded_monte_carlo() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(0, 1, 30), rng.normal(0, 1, 30)
    first, second = mann_whitney(a, b, seed=3), mann_whitney(a, b, seed=3)
    assert not first.exact and first.p_value == second.p_value
    shifted = mann_whitney(a + 3, b, seed=3)
    assert shifted.p_value < 0.001 < first.p_value


def test_bootstrap_interval_covers_the_true_difference_at_about_its_level() -> None:
    rng = np.random.default_rng(7)
    covered = 0
    trials = 200
    for trial in range(trials):
        a, b = rng.normal(2.0, 1.0, 40), rng.normal(0.5, 2.0, 40)
        low, high = bootstrap_ci(a, b, resamples=2000, seed=trial)
        covered += low <= 1.5 <= high
    assert 0.88 <= covered / trials <= 0.99


def test_bootstrap_is_reproducible_and_ordered() -> None:
    a, b = [3.0, 4.0, 5.0, 6.0], [1.0, 1.5, 2.0, 2.5]
    assert bootstrap_ci(a, b, seed=1) == bootstrap_ci(a, b, seed=1)
    low, high = bootstrap_ci(a, b)
    assert low < 2.75 < high and low > 0


def test_compare_entry_shape_and_small_samples() -> None:
    entry = compare("diverse", [5, 6, 7, None], "solo", [1, 2, 3], "merged.common.qd_score")
    assert entry["a"] == "diverse" and entry["b"] == "solo"
    assert entry["diff"] == pytest.approx(4.0)
    assert entry["n_a"] == 3 and entry["n_b"] == 3
    assert entry["p_value"] == pytest.approx(0.1) and entry["test"] == TEST_NAME
    assert entry["ci95"][0] <= 4.0 <= entry["ci95"][1]
    thin = compare("diverse", [5], "solo", [1, 2], "merged.coverage")
    assert thin["diff"] == pytest.approx(3.5) and thin["ci95"] is None and thin["p_value"] is None
    empty = compare("diverse", [], "solo", [1, 2], "merged.coverage")
    assert empty["diff"] is None


def test_invalid_input_raises() -> None:
    with pytest.raises(ValueError):
        mann_whitney([], [1.0])
    with pytest.raises(ValueError):
        bootstrap_ci([1.0], [2.0], level=1.5)
    assert not math.isnan(mann_whitney([1.0], [2.0]).p_value)
