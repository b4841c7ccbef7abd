"""Four circles side by side in a unit-length strip, radii as large as fit (a look-alike)."""

import numpy as np


# EVOLVE-BLOCK-START
def construct():
    """The radii, left to right (the circles touch in turn)."""
    return np.array([0.1, 0.1, 0.1, 0.1])


# EVOLVE-BLOCK-END


def run():
    return construct()
