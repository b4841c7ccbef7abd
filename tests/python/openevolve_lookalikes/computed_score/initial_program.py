"""Five points in the unit square as far apart as possible (a look-alike of a maths problem
whose grid is the built-in score and complexity)."""

import numpy as np


# EVOLVE-BLOCK-START
def points():
    """An array of shape (5, 2)."""
    return np.array([[0.1, 0.1], [0.9, 0.1], [0.1, 0.9], [0.9, 0.9], [0.4, 0.6]])


# EVOLVE-BLOCK-END
