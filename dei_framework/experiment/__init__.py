"""Experiments: conditions (Solo, Homo, Diverse and the baselines) run at equal compute over
repeats, their summary and statistics, and the portfolio chooser (``dei plan``).

May import: every layer below it, up to :mod:`dei_framework.runtime`.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Condition", "ExperimentPlan", "run_experiment"]


def __getattr__(name: str) -> Any:
    """The experiment runner's names, from :mod:`~dei_framework.experiment.runner`, imported
    on first use (PEP 562): importing a submodule does not import ``runner``."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("dei_framework.experiment.runner"), name)
