"""Minimise a bumpy function of one variable by random search (a look-alike)."""

import numpy as np


# EVOLVE-BLOCK-START
def search(iterations=200, step=0.5):
    """The best x found."""
    rng = np.random.default_rng(0)
    best = 2.0
    for _ in range(iterations):
        candidate = best + rng.uniform(-step, step)
        if value(candidate) < value(best):
            best = candidate
    return best


# EVOLVE-BLOCK-END


def value(x):
    return (x - 1.0) ** 2 + 0.3 * np.sin(5.0 * x) + 0.3
