"""Reports: ``report.md`` and its plots for a run or an experiment, and program export.

May import: every layer below it, up to :mod:`dei_framework.experiment`.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["write_run_report"]


def __getattr__(name: str) -> Any:
    """:func:`~dei_framework.report.write.write_run_report`, imported on first use (PEP 562):
    importing a submodule does not import ``write``."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("dei_framework.report.write"), name)
