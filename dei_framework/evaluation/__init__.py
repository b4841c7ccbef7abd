"""Evaluation: scoring programs in worker processes, on a Dask cluster, or sandboxed.

:mod:`~dei_framework.evaluation.local` (the evaluator and the local process pool, with their
parts in the private ``_*`` modules), ``dask_*`` (the Dask backend, its job paths, options and
version checks, its worker side and its version guard) and ``sandbox/`` (limits and isolation
for programs that run code).

May import: :mod:`dei_framework.contract`, :mod:`dei_framework.search`.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Evaluator", "LocalBackend", "OpponentSet", "Outcome", "WorkersKeepDying",
           "check_evaluation", "evaluate", "make_local_backend", "release_semaphores",
           "remove_orphaned_set_dirs"]


def __getattr__(name: str) -> Any:
    """The evaluator's names, from :mod:`~dei_framework.evaluation.local`, imported on first
    use (PEP 562): importing a submodule does not import ``local``."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("dei_framework.evaluation.local"), name)
