"""Scores a bin-packing heuristic on Weibull instances (FunSearch's benchmark distribution).

evaluate(program_path) loads the program, packs each instance online with its priority()
and returns:

* combined_score: minus the mean excess over the L1 lower bound (ceil(sum of sizes /
  capacity)), as a fraction: 0 would be optimal, best fit scores a little below;
* best_fit_agreement: the share of placements that go where best fit would put the item;
* first_fit_agreement: the share that go to the first bin the item fits in.

Instances come from a fixed seed, so the score of a program never changes. evaluate_stage1
is the cascade's quick check, one small instance; evaluate_stage2, run when stage 1 passes
its threshold, is the full evaluation (a cascade does not call evaluate).
"""

import importlib.util
import math

import numpy as np

CAPACITY = 100
SEED = 20240101
#: Instances (items each) of the full evaluation, and of stage 1.
INSTANCES, ITEMS = 5, 500
STAGE1_ITEMS = 100


def weibull_instances(count: int, items: int, seed: int = SEED) -> list[np.ndarray]:
    """Integer item sizes from Weibull(shape 3, scale 45), clipped to [1, CAPACITY]."""
    rng = np.random.default_rng(seed)
    return [np.clip(np.round(45.0 * rng.weibull(3.0, items)), 1, CAPACITY)
            for _ in range(count)]


def load_priority(program_path: str):
    spec = importlib.util.spec_from_file_location("candidate_program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.priority


def pack(priority, items: np.ndarray) -> tuple[int, int, int]:
    """Bins used, placements agreeing with best fit, placements agreeing with first fit."""
    bins = np.full(len(items), float(CAPACITY))
    best_fit = first_fit = 0
    for item in items:
        fits = np.nonzero(bins - item >= 0)[0]
        scores = np.asarray(priority(float(item), bins[fits]), dtype=float)
        if scores.shape != fits.shape:
            raise ValueError(f"priority() returned shape {scores.shape} for {len(fits)} bins")
        if not np.all(np.isfinite(scores)):
            raise ValueError("priority() returned a score that is not finite")
        chosen = fits[int(np.argmax(scores))]
        room = bins[fits] - item
        best_fit += bool(bins[chosen] - item == room.min())
        first_fit += bool(chosen == fits[0])
        bins[chosen] -= item
    return int(np.count_nonzero(bins != CAPACITY)), best_fit, first_fit


def score(program_path: str, instances: list[np.ndarray]) -> dict:
    priority = load_priority(program_path)
    excess, best_fit, first_fit, placed = [], 0, 0, 0
    for items in instances:
        used, best, first = pack(priority, items)
        bound = math.ceil(items.sum() / CAPACITY)
        excess.append(used / bound - 1.0)
        best_fit, first_fit, placed = best_fit + best, first_fit + first, placed + len(items)
    return {"combined_score": -float(np.mean(excess)),
            "best_fit_agreement": best_fit / placed,
            "first_fit_agreement": first_fit / placed,
            "bins_over_bound": float(np.mean(excess))}


def evaluate_stage1(program_path: str) -> dict:
    return score(program_path, weibull_instances(1, STAGE1_ITEMS, SEED + 1))


def evaluate(program_path: str) -> dict:
    return score(program_path, weibull_instances(INSTANCES, ITEMS))


def evaluate_stage2(program_path: str) -> dict:
    return evaluate(program_path)
