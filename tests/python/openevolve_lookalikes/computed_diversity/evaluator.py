"""The share of modules set to their right option (no feature of its own: the task's
config names DEI's computed complexity and diversity)."""

import importlib.util

RIGHT = [2, 1, 0, 3]


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    chosen = list(module.configure())
    right = sum(1 for got, want in zip(chosen, RIGHT, strict=False) if got == want)
    return {"combined_score": right / len(RIGHT), "modules_right": float(right)}
