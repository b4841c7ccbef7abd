"""Circle packing: 26 circles in the unit square, as large as possible in total (the sum of
their radii), none overlapping another or the square's edge.

The evolved part is construct_packing(): it places the centres and returns them with their
radii. It starts from a 5 x 5 grid with one more circle in a gap; compute_max_radii() gives
the largest radii that fit around fixed centres.
"""

import numpy as np

N_CIRCLES = 26


# EVOLVE-BLOCK-START
def construct_packing():
    """Returns (centres, radii): arrays of shape (26, 2) and (26,)."""
    spacing = 0.2
    offset = 0.1
    centres = [[offset + spacing * i, offset + spacing * j] for i in range(5) for j in range(5)]
    # The 26th circle goes into the gap between four circles of the grid.
    centres.append([offset + spacing * 0.5, offset + spacing * 0.5])
    centres = np.array(centres)
    return centres, compute_max_radii(centres)
# EVOLVE-BLOCK-END


def compute_max_radii(centres: np.ndarray) -> np.ndarray:
    """The largest radii for fixed centres: each first bounded by the square's edges, then
    every overlapping pair shrunk in proportion until it only touches."""
    radii = np.min(np.concatenate([centres, 1.0 - centres], axis=1), axis=1)
    for i in range(len(centres)):
        for j in range(i + 1, len(centres)):
            distance = float(np.linalg.norm(centres[i] - centres[j]))
            if radii[i] + radii[j] > distance:
                scale = distance / (radii[i] + radii[j])
                radii[i] *= scale
                radii[j] *= scale
    return radii


def run_packing():
    """What the evaluator calls."""
    return construct_packing()
