"""Evaluation: scoring programs in worker processes, on a Dask cluster, or sandboxed.

:mod:`~dei_framework.evaluation.local` (the evaluator and the local process pool, with their
parts in the private ``_*`` modules), ``dask_*`` (the Dask backend, its job paths, options and
version checks, its worker side and its version guard) and ``sandbox/`` (limits and isolation
for programs that run code).

May import: :mod:`dei_framework.contract`, :mod:`dei_framework.search`.
"""

from __future__ import annotations

from dei_framework._lazy import lazy_names

__all__ = [
    "Evaluator",
    "LocalBackend",
    "OpponentSet",
    "Outcome",
    "WorkersKeepDying",
    "check_evaluation",
    "evaluate",
    "make_local_backend",
    "release_semaphores",
    "remove_orphaned_set_dirs",
]


# The evaluator's names come from dei_framework.evaluation.local on first use. Importing a submodule
# does not import it (PEP 562).
__getattr__ = lazy_names(__name__, "dei_framework.evaluation.local", __all__)
