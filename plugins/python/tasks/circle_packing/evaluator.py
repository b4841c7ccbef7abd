"""Scores a packing of 26 circles in the unit square.

evaluate(program_path) runs the program's run_packing() and checks the packing: 26 centres
and radii, every number finite, no negative radius, every circle inside the square and no two
overlapping (to a tolerance of 1e-9). A packing that breaks a rule raises ValueError naming
it. It returns:

* combined_score: the sum of the radii;
* radius_spread: (largest - smallest radius) / 0.5, how unequal the circles are (0 to 1);
* edge_share: the share of circles touching the square's edge.
"""

import importlib.util

import numpy as np

N_CIRCLES = 26
TOLERANCE = 1e-9


def _load(program_path: str):
    spec = importlib.util.spec_from_file_location("candidate_program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(centres: np.ndarray, radii: np.ndarray) -> None:
    if centres.shape != (N_CIRCLES, 2) or radii.shape != (N_CIRCLES,):
        raise ValueError(f"expected centres of shape ({N_CIRCLES}, 2) and radii of shape "
                         f"({N_CIRCLES},), got {centres.shape} and {radii.shape}")
    if not (np.all(np.isfinite(centres)) and np.all(np.isfinite(radii))):
        raise ValueError("a centre or a radius is not a finite number")
    if np.any(radii < 0):
        raise ValueError(f"circle {int(np.argmin(radii))} has a negative radius")
    low = np.min(centres - radii[:, None], axis=1)
    high = np.max(centres + radii[:, None], axis=1)
    outside = np.nonzero((low < -TOLERANCE) | (high > 1 + TOLERANCE))[0]
    if len(outside):
        raise ValueError(f"circle {int(outside[0])} leaves the unit square")
    for i in range(N_CIRCLES):
        gaps = np.linalg.norm(centres[i + 1:] - centres[i], axis=1) - radii[i + 1:] - radii[i]
        if len(gaps) and gaps.min() < -TOLERANCE:
            raise ValueError(f"circles {i} and {i + 1 + int(np.argmin(gaps))} overlap")


def evaluate(program_path: str) -> dict:
    centres, radii = _load(program_path).run_packing()
    centres = np.asarray(centres, dtype=float)
    radii = np.asarray(radii, dtype=float)
    check(centres, radii)
    edge = np.min(np.concatenate([centres, 1.0 - centres], axis=1), axis=1) - radii
    return {"combined_score": float(radii.sum()),
            "radius_spread": float(min((radii.max() - radii.min()) / 0.5, 1.0)),
            "edge_share": float(np.mean(edge < 1e-6))}
