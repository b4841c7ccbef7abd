"""How well the fitted law predicts the held-out half of the data."""

import importlib.util

import numpy as np
from data_loader import load_data


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    compute, loss = load_data()
    params = module.fit(compute[::2], loss[::2])
    predicted = np.asarray(module.law(compute[1::2], params), dtype=float)
    error = float(np.mean((predicted - loss[1::2]) ** 2))
    if not np.isfinite(error):
        return {"combined_score": 0.0, "error": "the law's prediction is not finite"}
    return {"nmse": error, "combined_score": 1.0 / (1.0 + 100.0 * error)}
