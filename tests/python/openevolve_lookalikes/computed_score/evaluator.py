"""The smallest distance between two points, normalised; 0 for points outside the square."""

import importlib.util
import time

import numpy as np


def evaluate(program_path):
    started = time.perf_counter()
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = np.asarray(module.points(), dtype=float)
    if found.shape != (5, 2) or np.any(found < 0) or np.any(found > 1):
        return {"combined_score": 0.0, "error": "points must be 5 in the unit square"}
    gaps = [np.linalg.norm(a - b) for i, a in enumerate(found) for b in found[i + 1 :]]
    smallest = float(min(gaps))
    return {
        "min_distance": smallest,
        "combined_score": smallest / 0.7071,
        "eval_time": time.perf_counter() - started,
    }
