"""Every figure JSON agrees with itself: its means, spreads, differences, intervals and p-values
follow from the per-run values it records.

The statistics are recomputed here by a different road than ``dei_framework.analysis.stats`` takes,
so a bug there (or a JSON edited by hand, or written by an older script) shows up as a mismatch:

* means and sample standard deviations with numpy (the project uses ``statistics``);
* the exact two-sided Mann-Whitney p-value by counting, with a generating function over the
  groups of tied values, how many ways of choosing the first sample give each rank sum (the
  project enumerates every split of the pooled ranks);
* A12 from scipy's U statistic (the project compares every pair);
* the Hodges-Lehmann interval's order statistic from the same counting without ties (the
  project uses a recurrence over sample sizes), Holm's adjustment written out again;
* Student t quantiles from scipy (the project tabulates them to three decimals).

Numbers a script rounded are compared to the precision they are written with: two units in
their last stated decimal (the mean of rounded values and the rounded mean may differ by one);
unrounded ones to one part in 10^9.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

ROOT = Path(__file__).resolve().parents[2]
SET_JSONS = sorted((ROOT / "docs" / "figures").glob("*.json"))
#: Requested level of the Hodges-Lehmann interval (``dei_framework.analysis.stats.CONFIDENCE``;
#: typed again so that a change there is a change here too).
LEVEL = 0.95
#: Monte Carlo permutations behind a p-value whose test is not exact.
MONTE_CARLO_PERMUTATIONS = 50_000


def data_of(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())["data"]


def tolerance(stated: float) -> float:
    """How far a recomputed value may be from ``stated``: two units in its last decimal when
    the script rounded it (a short repr), else one part in 10^9."""
    text = repr(float(stated))
    if "e" not in text and "." in text:
        decimals = len(text.split(".")[1])
        if decimals <= 8:
            return 2 * 10.0**-decimals
    return 1e-9 * max(1.0, abs(stated))


def assert_close(recomputed: float, stated: float, what: str) -> None:
    assert stated is not None, f"{what}: missing in the JSON"
    assert abs(recomputed - stated) <= tolerance(stated), (
        f"{what}: the JSON says {stated!r}, its values give {recomputed!r}"
    )


# --- independent statistics ---------------------------------------------------------------


def rank_sum_counts(groups: Sequence[tuple[int, Fraction]], chosen: int) -> dict[Fraction, int]:
    """For the pooled sample given as (count, mid-rank) per group of tied values: how many ways
    of choosing ``chosen`` members give each rank sum of the chosen ones (a generating function,
    one group at a time)."""
    ways: dict[tuple[int, Fraction], int] = {(0, Fraction(0)): 1}
    for count, rank in groups:
        grown: dict[tuple[int, Fraction], int] = {}
        for (taken, total), number in ways.items():
            for take in range(min(count, chosen - taken) + 1):
                key = (taken + take, total + take * rank)
                grown[key] = grown.get(key, 0) + number * math.comb(count, take)
        ways = grown
    return {total: number for (taken, total), number in ways.items() if taken == chosen}


def tie_groups(pooled: Sequence[float]) -> list[tuple[int, Fraction]]:
    """(count, mid-rank) of each distinct value of ``pooled``, smallest first."""
    groups, below = [], 0
    for value in sorted(set(pooled)):
        count = sum(1 for v in pooled if v == value)
        groups.append((count, Fraction(2 * below + count + 1, 2)))
        below += count
    return groups


def exact_mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided exact p: the share of splits whose U is at least as far from its mean as the
    observed one (ties as mid-ranks)."""
    n_a, n_b = len(a), len(b)
    groups = tie_groups([*a, *b])
    rank_of = {value: rank for value, (_, rank) in zip(sorted(set([*a, *b])), groups, strict=True)}
    observed = sum(rank_of[v] for v in a)
    center = Fraction(n_a * (n_a + n_b + 1), 2)  # the mean rank sum of the first sample
    counts = rank_sum_counts(groups, n_a)
    extreme = sum(n for total, n in counts.items() if abs(total - center) >= abs(observed - center))
    return extreme / math.comb(n_a + n_b, n_a)


def u_null_cdf_without_ties(n_a: int, n_b: int) -> list[float]:
    """``P(U <= u)``, u = 0 .. n_a n_b, for distinct values: rank sums of ranks 1..N, shifted."""
    groups = [(1, Fraction(rank)) for rank in range(1, n_a + n_b + 1)]
    counts = rank_sum_counts(groups, n_a)
    smallest = Fraction(n_a * (n_a + 1), 2)
    by_u = [0] * (n_a * n_b + 1)
    for total, number in counts.items():
        by_u[int(total - smallest)] += number
    splits = math.comb(n_a + n_b, n_a)
    running, cdf = 0, []
    for number in by_u:
        running += number
        cdf.append(running / splits)
    return cdf


def hodges_lehmann(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float, float]:
    """(shift, low, high, level): the median pairwise difference and the narrowest interval of
    order statistics whose exact level reaches :data:`LEVEL` (the widest when none does)."""
    differences = sorted(x - y for x in a for y in b)
    cdf = u_null_cdf_without_ties(len(a), len(b))
    levels = {k: 1 - 2 * cdf[k - 1] for k in range(1, (len(differences) + 1) // 2 + 1)}
    reaching = [k for k, level in levels.items() if level >= LEVEL - 1e-12]
    k = max(reaching) if reaching else 1
    return (statistics.median(differences), differences[k - 1], differences[-k], levels[k])


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: sorted p times the number of hypotheses left, running max."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    highest = 0.0
    for position, index in enumerate(order):
        highest = max(highest, (len(p_values) - position) * p_values[index])
        adjusted[index] = min(1.0, highest)
    return adjusted


# --- what the JSON files hold ------------------------------------------------------------


def comparison_sets(block: Any, where: str = "data") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every part of a figure JSON that has per-condition values and comparisons of them."""
    if isinstance(block, Mapping):
        if "conditions" in block and "comparisons" in block:
            yield where, block
        for key, value in block.items():
            yield from comparison_sets(value, f"{where}.{key}")


def statistic_blocks(block: Any, where: str = "data") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every ``{"values": [...], "mean": ...}`` block of a figure JSON."""
    if isinstance(block, Mapping):
        if isinstance(block.get("values"), list) and "mean" in block:
            yield where, block
        for key, value in block.items():
            yield from statistic_blocks(value, f"{where}.{key}")
    elif isinstance(block, list):
        for index, value in enumerate(block):
            yield from statistic_blocks(value, f"{where}[{index}]")


def values_of(data: Mapping[str, Any], condition: str, metric: str, where: str) -> list[float]:
    block = data["conditions"][condition].get(metric)
    assert block and block.get("values") is not None, (
        f"{where}: {condition} has no per-run values of {metric}, so its comparison cannot be "
        "checked (the figure script must keep them)"
    )
    return [float(v) for v in block["values"] if v is not None and math.isfinite(v)]


COMPARISON_SETS = [
    (f"{path.stem}:{where}", block)
    for path in SET_JSONS
    for where, block in comparison_sets(data_of(path))
]
STATISTIC_BLOCKS = [
    (f"{path.stem}:{where}", block)
    for path in SET_JSONS
    for where, block in statistic_blocks(data_of(path))
]


def test_the_experiment_figures_are_all_checked():
    # The check must not pass by finding nothing: these sets compare conditions.
    checked = {name.split(":")[0] for name, _ in COMPARISON_SETS}
    assert {"families", "adaptive", "adaptive_numeric", "plan", "static_domains"} <= checked
    assert all(block["comparisons"] for _, block in COMPARISON_SETS)


@pytest.mark.parametrize("name, block", STATISTIC_BLOCKS, ids=[n for n, _ in STATISTIC_BLOCKS])
def test_means_and_spreads_follow_from_the_values(name, block):
    values = np.array([v for v in block["values"] if v is not None], dtype=float)
    assert block.get("n", len(values)) == len(values), f"{name}: n is not the number of values"
    if not len(values):
        assert block["mean"] is None, f"{name}: a mean without values"
        return
    assert_close(float(np.mean(values)), block["mean"], f"{name} mean")
    if block.get("std") is not None and len(values) >= 2:
        assert_close(float(np.std(values, ddof=1)), block["std"], f"{name} std")
    if isinstance(block.get("ci95"), list) and len(values) >= 2:
        half = scipy_stats.t.ppf(0.975, len(values) - 1) * np.std(values, ddof=1)
        half /= math.sqrt(len(values))
        low, high = block["ci95"]
        # The project's t quantile has three decimals: allow for that too.
        slack = 0.0005 * np.std(values, ddof=1) / math.sqrt(len(values))
        for recomputed, stated, side in (
            (np.mean(values) - half, low, "low"),
            (np.mean(values) + half, high, "high"),
        ):
            assert abs(recomputed - stated) <= tolerance(stated) + slack, (
                f"{name} ci95 {side}: the JSON says {stated!r}, its values give {recomputed!r}"
            )


@pytest.mark.parametrize("name, data", COMPARISON_SETS, ids=[n for n, _ in COMPARISON_SETS])
def test_comparisons_follow_from_the_per_run_values(name, data):
    for entry in data["comparisons"]:
        what = f"{name} {entry['a']} − {entry['b']} on {entry['metric']}"
        a = values_of(data, entry["a"], entry["metric"], what)
        b = values_of(data, entry["b"], entry["metric"], what)
        assert (entry["n_a"], entry["n_b"]) == (len(a), len(b)), f"{what}: n_a, n_b"
        assert_close(float(np.mean(a) - np.mean(b)), entry["diff"], f"{what}: difference")
        shift, low, high, level = hodges_lehmann(a, b)
        assert_close(shift, entry["shift"], f"{what}: Hodges-Lehmann shift")
        if len(a) < 2 or len(b) < 2:
            assert entry["p"] is None and entry["interval"] is None, f"{what}: n < 2 but a p"
            continue
        assert_close(level, entry["ci_level"], f"{what}: interval level")
        assert entry["interval"] is not None, f"{what}: no interval"
        assert_close(low, entry["interval"][0], f"{what}: interval low")
        assert_close(high, entry["interval"][1], f"{what}: interval high")
        u = scipy_stats.mannwhitneyu(a, b, alternative="two-sided").statistic
        assert_close(float(u) / (len(a) * len(b)), entry["a12"], f"{what}: A12")
        exact = exact_mann_whitney_p(a, b)
        if "exact" in (entry.get("test") or ""):
            assert_close(exact, entry["p"], f"{what}: p")
        else:  # a Monte Carlo estimate: within five of its standard errors of the exact p
            error = math.sqrt(max(exact * (1 - exact), 1e-6) / MONTE_CARLO_PERMUTATIONS)
            assert abs(entry["p"] - exact) <= 5 * error + 2 / MONTE_CARLO_PERMUTATIONS, what


@pytest.mark.parametrize("name, data", COMPARISON_SETS, ids=[n for n, _ in COMPARISON_SETS])
def test_holm_adjustment_follows_from_the_p_values(name, data):
    # The family is every comparison of one condition on one metric (experiment_summary's and
    # plan.py's rule), unless an entry names its family (migration.py: every setting against one
    # baseline on one metric); entries without a p are not tests.
    families: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for entry in data["comparisons"]:
        if entry.get("p") is not None:
            key = (entry.get("family") or entry["a"], entry["metric"])
            families.setdefault(key, []).append(entry)
    for (a, metric), family in families.items():
        if all(entry.get("p_holm") is None for entry in family):
            continue  # a set without Holm-adjusted p-values
        adjusted = holm_adjusted([entry["p"] for entry in family])
        for entry, p_holm in zip(family, adjusted, strict=True):
            assert_close(p_holm, entry["p_holm"], f"{name} {a} − {entry['b']} on {metric}: Holm p")


def test_the_re_measure_totals_follow_from_its_runs():
    data = data_of(ROOT / "docs" / "figures" / "common_remeasure.json")
    runs = data["runs"]
    for run in runs:
        combined = math.hypot(run["reported_sem"], run["fresh_sem"])
        assert_close(run["fresh_qd"] - run["reported_qd"], run["difference"], f"{run['run']}")
        assert_close(run["difference"] / combined, run["z"], f"{run['run']} z")
        assert run["within_reported_sem"] == (abs(run["difference"]) < run["reported_sem"])
    z = np.array([run["z"] for run in runs])
    differences = np.array([run["difference"] for run in runs])
    assert data["n_runs"] == len(runs)
    assert data["within_2_standard_errors"] == int(np.sum(np.abs(z) <= 2))
    assert data["within_reported_sem"] == sum(run["within_reported_sem"] for run in runs)
    assert data["negative_differences"] == int(np.sum(differences < 0))
    assert_close(float(differences.mean()), data["mean_difference"], "mean difference")
    assert_close(float(z.sum() / math.sqrt(len(z))), data["pooled_z"], "pooled z")
    variances = [run["reported_sem"] ** 2 + run["fresh_sem"] ** 2 for run in runs]
    assert_close(math.sqrt(sum(variances)) / len(runs), data["mean_difference_sem"], "its sem")
    expected = sum(
        scipy_stats.norm.cdf(r["reported_sem"] / math.hypot(r["reported_sem"], r["fresh_sem"])) * 2
        - 1
        for r in runs
    )
    assert_close(expected, data["expected_within_reported_sem"], "expected within reported sem")


# --- the checks themselves can fail --------------------------------------------------------


def test_the_independent_p_value_matches_known_exact_values():
    # Separated samples of 5: 2 of C(10, 5) = 252 splits are as extreme.
    assert exact_mann_whitney_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    # Identical samples: every split is at least as extreme.
    assert exact_mann_whitney_p([1, 1, 1], [1, 1, 1]) == 1.0
    # scipy's exact test agrees where it is exact (no ties).
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=6), rng.normal(0.8, size=7)
    expected = scipy_stats.mannwhitneyu(a, b, method="exact").pvalue
    assert exact_mann_whitney_p(list(a), list(b)) == pytest.approx(expected, rel=1e-9)


def test_a_p_value_that_does_not_follow_from_the_values_is_caught():
    data = json.loads(json.dumps(data_of(ROOT / "docs" / "figures" / "families.json")))
    data["comparisons"][0]["p"] *= 1.001
    with pytest.raises(AssertionError, match=": p"):
        test_comparisons_follow_from_the_per_run_values("families", data)
    data = data_of(ROOT / "docs" / "figures" / "families.json")
    condition = data["comparisons"][0]["b"]
    data["conditions"][condition]["merged.common.coverage"]["values"][0] += 0.01
    with pytest.raises(AssertionError):
        test_comparisons_follow_from_the_per_run_values("families", data)


def test_a_rounded_mean_off_by_more_than_its_precision_is_caught():
    block = {"mean": 2.0, "std": 1.0, "n": 3, "values": [1.0, 2.0, 3.0], "ci95": [-0.484, 4.484]}
    test_means_and_spreads_follow_from_the_values("ok", block)
    with pytest.raises(AssertionError, match="mean"):
        test_means_and_spreads_follow_from_the_values("off", {**block, "mean": 2.03})
    with pytest.raises(AssertionError, match="ci95"):
        test_means_and_spreads_follow_from_the_values("off", {**block, "ci95": [-0.584, 4.484]})
