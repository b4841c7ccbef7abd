"""How close the smoothed signal comes to the clean one, on a short then a long signal."""

import importlib.util

import numpy as np


def _score(program_path, length):
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(5)
    clean = np.sin(np.linspace(0.0, 6.0, length))
    smoothed = np.asarray(module.run(clean + rng.normal(0.0, 0.3, length)), dtype=float)
    if smoothed.shape != clean.shape or not np.all(np.isfinite(smoothed)):
        return {"combined_score": 0.0, "error": "the output has the wrong shape"}
    error = float(np.mean((smoothed - clean) ** 2))
    return {"accuracy_score": 1.0 / (1.0 + 10.0 * error), "combined_score": 1.0 / (1.0 + error)}


def evaluate_stage1(program_path):
    return _score(program_path, 50)


def evaluate_stage2(program_path):
    result = _score(program_path, 400)
    result["robustness_score"] = result["accuracy_score"]
    return result


def evaluate(program_path):
    return evaluate_stage2(program_path)
