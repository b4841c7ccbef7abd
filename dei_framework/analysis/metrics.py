"""Run metrics: merged archives, niche novelty, generality and operator divergence.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np


def js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen–Shannon divergence (base 2, so within ``[0, 1]``) of two count vectors."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if p.sum() == 0 or q.sum() == 0:
        return float("nan")
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2

    def kl(a: np.ndarray, b: np.ndarray) -> float:
        mask = a > 0
        return float(np.sum(a[mask] * np.log2(a[mask] / b[mask])))

    return (kl(p, m) + kl(q, m)) / 2


def operator_divergence(histograms: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Pairwise Jensen–Shannon divergence between nodes' cell distributions, and its mean.

    This is the population-diversity lens applied to operators: 0 means two nodes' operators
    land in the same cells in the same proportions, 1 that they never share a cell.
    """
    pairs = {
        f"{a}|{b}": js_divergence(histograms[a], histograms[b])
        for a, b in itertools.combinations(sorted(histograms), 2)
    }
    values = [v for v in pairs.values() if v == v]
    return {"mean": float(np.mean(values)) if values else None, "pairs": pairs}


def mean_or_none(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are not ``None`` (``None`` if there are none)."""
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None
