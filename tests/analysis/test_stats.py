"""The statistics behind ``comparisons``: known p-values, ties, interval coverage, A12, Holm."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dei_framework.analysis.stats import (
    TEST_NAME,
    a12,
    compare,
    holm,
    interval_rank,
    mann_whitney,
    shift_interval,
    u_null_cdf,
)


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


#: Replications per setting of the coverage simulation: the standard error of an estimated
#: coverage near 0.96 is then about 0.004, so 0.93 lies some 7 standard errors below it.
REPLICATIONS = 2000


@pytest.mark.parametrize("n", [5, 10])
@pytest.mark.parametrize("distribution", ["normal", "lognormal", "exponential"])
def test_the_shift_interval_covers_the_true_shift_at_small_n(distribution: str, n: int) -> None:
    # Both conditions draw from the same (possibly skewed) distribution; the first is shifted
    # by a known amount. A 95 % interval must contain that shift at least ~95 % of the time;
    # the percentile bootstrap it replaced covered ~88 % at n = 5.
    rng = np.random.default_rng(22 + n)
    draw = {
        "normal": lambda size: rng.normal(0.0, 1.0, size),
        "lognormal": lambda size: rng.lognormal(0.0, 1.0, size),
        "exponential": lambda size: rng.exponential(2.0, size),
    }[distribution]
    true_shift = 1.5
    a = draw((REPLICATIONS, n)) + true_shift
    b = draw((REPLICATIONS, n))
    intervals = [shift_interval(x, y) for x, y in zip(a, b, strict=True)]
    covered = np.mean([i.low <= true_shift <= i.high for i in intervals])
    level = intervals[0].level
    assert level >= 0.95 and all(i.attained and i.level == level for i in intervals)
    assert covered >= 0.93
    # Not trivially wide either: coverage near its exact level (4 standard errors).
    assert abs(covered - level) <= 4 * math.sqrt(level * (1 - level) / REPLICATIONS)


def test_the_achieved_levels_are_the_exact_ones() -> None:
    # n = 5 against 5: P(U <= 2) = 4 / 252, so [d_(3), d_(23)] has 1 - 8/252 = 96.8 %; the next
    # narrower one (P(U <= 3) = 7 / 252) would have only 94.4 %.
    assert interval_rank(5, 5, 0.95) == (3, pytest.approx(1 - 8 / 252))
    assert interval_rank(10, 10, 0.95)[0] == 24  # the textbook critical value 23 at 5 %
    assert u_null_cdf(3, 3) * 20 == pytest.approx([1, 2, 4, 7, 10, 13, 16, 18, 19, 20])
    # Too few repeats for 95 %: the widest interval, at the level it has.
    small = shift_interval([1.0, 2.0, 3.0], [0.0, 0.5, 0.7])
    assert not small.attained and small.level == pytest.approx(0.9)
    assert (small.low, small.high) == (pytest.approx(0.3), pytest.approx(3.0))


def test_the_interval_excludes_zero_exactly_when_the_test_rejects() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        a, b = rng.normal(rng.uniform(0, 2), 1, 5), rng.normal(0, 1, 5)
        interval, test = shift_interval(a, b), mann_whitney(a, b)
        excludes_zero = not interval.low <= 0.0 <= interval.high
        assert excludes_zero == (test.p_value <= 1 - interval.level + 1e-12)


def test_hodges_lehmann_is_the_median_of_pairwise_differences() -> None:
    # Differences of {1, 5} and {0, 2}: 1, -1, 5, 3 -> median 2.
    assert shift_interval([1.0, 5.0], [0.0, 2.0]).estimate == pytest.approx(2.0)


def test_a12_counts_wins_and_half_ties() -> None:
    assert a12([6, 7, 8], [1, 2, 3]) == 1.0 and a12([1, 2, 3], [6, 7, 8]) == 0.0
    assert a12([1, 2, 3], [1, 2, 3]) == pytest.approx(0.5)
    assert a12([2, 4], [1, 3]) == pytest.approx(0.75)  # 2>1, 4>1, 4>3; 2<3


def test_holm_steps_down_within_a_family() -> None:
    # Sorted 0.01, 0.03, 0.04 x 3, 2, 1 -> 0.03, 0.06, 0.04 -> monotone: 0.03, 0.06, 0.06.
    assert holm([0.01, 0.04, None, 0.03]) == [
        pytest.approx(0.03),
        pytest.approx(0.06),
        None,
        pytest.approx(0.06),
    ]
    assert holm([0.5, 0.9]) == [pytest.approx(1.0), pytest.approx(1.0)]
    assert holm([]) == []


def test_compare_entry_shape_and_small_samples() -> None:
    entry = compare("diverse", [5, 6, 7, None], "solo", [1, 2, 3], "merged.common.qd_score")
    assert entry["a"] == "diverse" and entry["b"] == "solo"
    assert entry["diff"] == pytest.approx(4.0)
    assert entry["n_a"] == 3 and entry["n_b"] == 3
    assert entry["p_value"] == pytest.approx(0.1) and entry["test"] == TEST_NAME
    # n = 3 against 3 cannot reach 95 %: the widest interval is given with its 90 %.
    assert entry["ci95"] is None and entry["ci_level"] == pytest.approx(0.9)
    assert entry["ci"] == [pytest.approx(2.0), pytest.approx(6.0)]
    assert entry["shift"] == pytest.approx(4.0) and entry["a12"] == 1.0
    five = compare("diverse", [5, 6, 7, 8, 9], "solo", [1, 2, 3, 4, 4.5], "merged.coverage")
    assert five["ci95"] == five["ci"] and five["ci_level"] == pytest.approx(1 - 8 / 252)
    assert five["ci"][0] <= five["shift"] <= five["ci"][1] and five["ci"][0] > 0
    thin = compare("diverse", [5], "solo", [1, 2], "merged.coverage")
    assert thin["diff"] == pytest.approx(3.5) and thin["ci95"] is None and thin["p_value"] is None
    empty = compare("diverse", [], "solo", [1, 2], "merged.coverage")
    assert empty["diff"] is None


def test_invalid_input_raises() -> None:
    with pytest.raises(ValueError):
        mann_whitney([], [1.0])
    with pytest.raises(ValueError):
        shift_interval([1.0], [2.0], level=1.5)
    with pytest.raises(ValueError):
        shift_interval([], [2.0])
    assert not math.isnan(mann_whitney([1.0], [2.0]).p_value)


def test_t95_is_students_quantile_and_never_the_normal_one_for_small_samples() -> None:
    from dei_framework.analysis.stats import t95

    # Published two-sided 95 % quantiles (df 1, 4, 15, 29 tabulated; 40, 60, 120 expanded).
    for df, quantile in (
        (1, 12.706),
        (4, 2.776),
        (15, 2.131),
        (29, 2.045),
        (40, 2.021),
        (60, 2.000),
        (120, 1.980),
    ):
        assert abs(t95(df) - quantile) < 1e-3, df
    values = [t95(df) for df in range(1, 500)]
    assert all(a > b for a, b in zip(values, values[1:], strict=False))  # narrows with n
    assert values[-1] > 1.959964  # above the normal quantile, however large n
    with pytest.raises(ValueError, match="degree of freedom"):
        t95(0)


def test_mean_interval_is_the_t_interval_of_the_mean() -> None:
    from dei_framework.analysis.stats import mean_interval

    mean, std, half = mean_interval([1.0, 2.0, 3.0, 4.0])
    assert (mean, round(std, 6)) == (2.5, 1.290994)
    assert half == pytest.approx(3.182 * 1.290994 / 2, rel=1e-6)
    assert mean_interval([5.0]) == (5.0, 0.0, None)
