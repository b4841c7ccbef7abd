"""Circles on a line: their centres and radii (a look-alike of a packing with artifacts)."""

import numpy as np


# EVOLVE-BLOCK-START
def construct():
    """Centres in [0, 1] and radii, as two arrays."""
    centres = np.array([0.2, 0.4, 0.6, 0.8])
    radii = np.array([0.08, 0.08, 0.08, 0.08])
    return centres, radii


# EVOLVE-BLOCK-END
