"""A small OpenEvolve task folder, written as an OpenEvolve user would (nothing of DEI in it),
for the python domain's tests."""

from __future__ import annotations

from pathlib import Path

INITIAL = '''"""Find x maximising f(x) = -(x - 3)^2, as an OpenEvolve example would."""


# EVOLVE-BLOCK-START
def guess():
    """The current guess."""
    return 1.0
# EVOLVE-BLOCK-END


if __name__ == "__main__":
    print(guess())
'''

EVALUATOR = """import importlib.util
import sys


def _load(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def evaluate(program_path):
    x = float(_load(program_path).guess())
    print(f"evaluating guess {x}")
    print("a warning on stderr", file=sys.stderr)
    return {"combined_score": -(x - 3.0) ** 2, "distance": min(abs(x - 3.0), 10.0) / 10.0,
            "magnitude": min(abs(x), 10.0) / 10.0, "note": "scored on f(x) = -(x - 3)^2"}
"""

CONFIG = """max_iterations: 100
checkpoint_interval: 10
llm:
  models:
    - name: gpt-4o
      weight: 1.0
  temperature: 0.5
prompt:
  system_message: "You are finding the maximum of a function."
  num_top_programs: 3
database:
  feature_dimensions: ["distance", "magnitude"]
  feature_bins: 5
  num_islands: 2
evaluator:
  timeout: 12
"""


def write_task(
    folder: Path, *, initial: str = INITIAL, evaluator: str = EVALUATOR, config: str | None = CONFIG
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "initial_program.py").write_text(initial)
    (folder / "evaluator.py").write_text(evaluator)
    if config is not None:
        (folder / "config.yaml").write_text(config)
    return folder
