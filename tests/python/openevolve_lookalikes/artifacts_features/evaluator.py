"""Scores circles on a line, with features of its own and artifacts for the prompt."""

import importlib.util

import numpy as np
from openevolve.evaluation_result import EvaluationResult


def _packing(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    centres, radii = module.construct()
    return np.asarray(centres, dtype=float), np.asarray(radii, dtype=float)


def _check(centres, radii):
    """The first rule broken, or an empty string."""
    if centres.shape != radii.shape:
        return "centres and radii differ in shape"
    if np.any(radii <= 0) or np.any(centres - radii < 0) or np.any(centres + radii > 1):
        return "a circle leaves the unit segment"
    order = np.argsort(centres)
    gaps = np.diff(centres[order]) - radii[order][1:] - radii[order][:-1]
    if np.any(gaps < -1e-9):
        return "two circles overlap"
    return ""


def evaluate_stage1(program_path):
    centres, radii = _packing(program_path)
    broken = _check(centres, radii)
    if broken:
        return EvaluationResult(
            metrics={"combined_score": 0.0, "validity": 0.0},
            artifacts={"stderr": broken, "failure_stage": "stage1"},
        )
    return EvaluationResult(metrics={"combined_score": 1.0, "validity": 1.0})


def evaluate_stage2(program_path):
    centres, radii = _packing(program_path)
    broken = _check(centres, radii)
    total = 0.0 if broken else float(radii.sum())
    return EvaluationResult(
        metrics={
            "combined_score": total / 0.5,
            "radius_variance": min(float(np.var(radii)) * 100.0, 1.0),
            "spatial_spread": min(float(np.std(centres)) * 2.0, 1.0),
        },
        artifacts={"packing_summary": f"{len(radii)} circles, radii sum {total:.4f}"},
    )


def evaluate(program_path):
    return evaluate_stage2(program_path)
