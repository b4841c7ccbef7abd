"""Online bin packing (the problem of FunSearch, Romera-Paredes et al., Nature 2024).

Items arrive one at a time and must go into a bin at once; every bin holds CAPACITY. The
heuristic scores the bins an item fits in, and the item goes to the bin with the highest
score (a new, empty bin is always among them). Fewer bins used is better.

The evolved part is priority(); it starts as best fit: the tighter the fit, the better.
"""

import numpy as np


# EVOLVE-BLOCK-START
def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """Scores each bin the item fits in: bins[i] is the room left in bin i."""
    room_after = bins - item
    # Best fit: the less room is left after the item goes in, the higher the score.
    score = -1.0 * room_after
    # An exact fit is best of all (best fit ranks it first already: room for variations).
    score[room_after < 0.5] += 1.0
    return score
# EVOLVE-BLOCK-END


def pack(items, capacity: float) -> np.ndarray:
    """Packs items online with priority(); returns the room left in every bin opened."""
    bins = np.full(len(items), float(capacity))  # one (possibly unused) bin per item
    for item in items:
        fits = np.nonzero(bins - item >= 0)[0]
        best = fits[int(np.argmax(priority(item, bins[fits])))]
        bins[best] -= item
    return bins[bins != capacity]
