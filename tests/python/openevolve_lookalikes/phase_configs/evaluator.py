"""The sum of the radii when the circles fit in the strip; 0 when they do not."""

import importlib.util

import numpy as np


def _radii(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return np.asarray(module.run(), dtype=float)


def _score(radii):
    valid = radii.shape == (4,) and bool(np.all(radii > 0)) and 2.0 * radii.sum() <= 1.0
    total = float(radii.sum()) if valid else 0.0
    return {"validity": float(valid), "sum_radii": total, "combined_score": total / 0.5}


def evaluate_stage1(program_path):
    return _score(_radii(program_path))


def evaluate_stage2(program_path):
    result = _score(_radii(program_path))
    result["balance"] = 1.0 - float(np.std(_radii(program_path)))
    return result


def evaluate(program_path):
    return evaluate_stage2(program_path)
