"""Scores the search on its best value, returning OpenEvolve's EvaluationResult."""

import importlib.util

from openevolve.evaluation_result import EvaluationResult


def _best(program_path, iterations):
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = float(module.search(iterations=iterations))
    return x, float(module.value(x))


def evaluate_stage1(program_path):
    x, found = _best(program_path, 20)
    score = 1.0 / (1.0 + found)
    return EvaluationResult(
        metrics={"runs_successfully": 1.0, "value_score": score, "combined_score": score},
        artifacts={"stage": "quick check, 20 iterations", "best_x": f"{x:.4f}"},
    )


def evaluate_stage2(program_path):
    x, found = _best(program_path, 200)
    score = 1.0 / (1.0 + found)
    return EvaluationResult(
        metrics={
            "value_score": score,
            "distance_score": 1.0 / (1.0 + abs(x - 1.0)),
            "combined_score": score,
        },
        artifacts={"stage": "full run, 200 iterations"},
    )


def evaluate(program_path):
    return evaluate_stage2(program_path)
