"""Two-sample statistics for comparing conditions: bootstrap confidence intervals and a rank test.

An experiment has a handful of repeats per condition, so the tools are the ones that hold at
small n without assuming normality:

* :func:`bootstrap_ci` — a percentile bootstrap interval for the difference of means
  (each sample resampled with replacement on its own, a fixed seed, so a summary is
  reproducible);
* :func:`mann_whitney` — the Mann–Whitney U rank test, two-sided, with its **exact**
  permutation distribution (every way of splitting the pooled ranks, ties as mid-ranks)
  while there are at most :data:`EXACT_LIMIT` splits, a seeded Monte Carlo permutation
  distribution beyond;
* :func:`compare` — both, as the ``{"a", "b", "metric", "diff", "ci95", "p_value", "test"}``
  entries of an experiment's ``comparisons``.

Example:
    >>> mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]).p_value  # 2 of C(10, 5) = 252 splits
    0.007936507936507936
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

#: Resamples of :func:`bootstrap_ci`.
BOOTSTRAP_RESAMPLES = 10_000
#: Largest number of splits :func:`mann_whitney` enumerates exactly.
EXACT_LIMIT = 200_000
#: Random permutations of :func:`mann_whitney` beyond :data:`EXACT_LIMIT`.
MONTE_CARLO_PERMUTATIONS = 50_000
#: Name of the test in ``comparisons`` entries.
TEST_NAME = "Mann-Whitney U, two-sided, exact permutation p-value"


@attrs.frozen
class RankTest:
    """Outcome of :func:`mann_whitney`.

    Attributes:
        u: The U statistic of the first sample (pairs where it is larger; ties count 1/2).
        p_value: Two-sided p-value: the share of splits of the pooled ranks whose U lies at
            least as far from its mean ``n_a * n_b / 2`` as the observed one.
        exact: Whether every split was enumerated (else a seeded Monte Carlo estimate).
    """

    u: float
    p_value: float
    exact: bool


def _clean(values: Sequence[float | None]) -> np.ndarray:
    array = np.array([float(v) for v in values if v is not None], dtype=float)
    return array[np.isfinite(array)]


def mann_whitney(a: Sequence[float], b: Sequence[float], *, seed: int = 0) -> RankTest:
    """The two-sided Mann–Whitney U test of ``a`` against ``b``.

    Args:
        a: First sample (missing and non-finite values are left out).
        b: Second sample.
        seed: Seed of the Monte Carlo permutations (used only beyond :data:`EXACT_LIMIT`).

    Raises:
        ValueError: a sample is empty.
    """
    x, y = _clean(a), _clean(b)
    if not len(x) or not len(y):
        raise ValueError("the Mann-Whitney test needs at least one value in each sample")
    pooled = np.concatenate([x, y])
    ranks = _midranks(pooled)
    n_a, n_b = len(x), len(y)
    offset = n_a * (n_a + 1) / 2
    u = float(ranks[:n_a].sum() - offset)
    center = n_a * n_b / 2
    observed = abs(u - center) - 1e-9  # rank sums are multiples of 1/2: a safe tolerance
    splits = math.comb(n_a + n_b, n_a)
    if splits <= EXACT_LIMIT:
        extreme = sum(
            abs(ranks[list(chosen)].sum() - offset - center) >= observed
            for chosen in itertools.combinations(range(n_a + n_b), n_a)
        )
        return RankTest(u=u, p_value=extreme / splits, exact=True)
    rng = np.random.default_rng(seed)
    sums = np.array([rng.permutation(ranks)[:n_a].sum() for _ in range(MONTE_CARLO_PERMUTATIONS)])
    extreme = int(np.sum(np.abs(sums - offset - center) >= observed))
    # (extreme + 1) / (N + 1): the observed split counts as one draw, so p is never 0.
    return RankTest(u=u, p_value=(extreme + 1) / (MONTE_CARLO_PERMUTATIONS + 1), exact=False)


def _midranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, tied values sharing the mean of their ranks."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=float)
    sorted_values = values[order]
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def bootstrap_ci(
    a: Sequence[float],
    b: Sequence[float],
    *,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``mean(a) - mean(b)``.

    Each sample is resampled with replacement on its own (the conditions are independent),
    ``resamples`` times from a generator seeded with ``seed``.

    Raises:
        ValueError: a sample is empty or ``level`` is not within (0, 1).
    """
    x, y = _clean(a), _clean(b)
    if not len(x) or not len(y):
        raise ValueError("a bootstrap interval needs at least one value in each sample")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be within (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    means_a = x[rng.integers(len(x), size=(resamples, len(x)))].mean(axis=1)
    means_b = y[rng.integers(len(y), size=(resamples, len(y)))].mean(axis=1)
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(means_a - means_b, [tail, 100 - tail])
    return float(low), float(high)


def compare(
    a_name: str,
    a: Sequence[float | None],
    b_name: str,
    b: Sequence[float | None],
    metric: str,
    *,
    seed: int = 0,
) -> dict[str, Any]:
    """One ``comparisons`` entry: difference of means, its 95 % bootstrap CI and the U test.

    ``ci95`` and ``p_value`` are ``None`` while a sample has fewer than two values (neither
    says anything then); ``diff`` is ``None`` without values.
    """
    x, y = _clean(a), _clean(b)
    entry: dict[str, Any] = {
        "a": a_name, "b": b_name, "metric": metric,
        "diff": float(x.mean() - y.mean()) if len(x) and len(y) else None,
        "ci95": None, "p_value": None, "test": TEST_NAME, "n_a": len(x), "n_b": len(y),
    }  # fmt: skip
    if len(x) >= 2 and len(y) >= 2:
        entry["ci95"] = list(bootstrap_ci(x, y, seed=seed))
        result = mann_whitney(x, y, seed=seed)
        entry["p_value"] = result.p_value
        if not result.exact:
            entry["test"] = TEST_NAME.replace("exact", "Monte Carlo")
    return entry
