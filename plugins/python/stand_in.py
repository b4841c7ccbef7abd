"""The ``openevolve`` package, as far as evaluators written for OpenEvolve import it, when
OpenEvolve itself is not installed.

OpenEvolve's examples return ``openevolve.evaluation_result.EvaluationResult``; DEI does not
depend on OpenEvolve, so :func:`install` adds a finder at the end of ``sys.meta_path`` that
answers ``openevolve`` (an empty package) and ``openevolve.evaluation_result`` (DEI's own
:mod:`dei_python.evaluation_result`, executed under that name). Installed only where an
evaluator is loaded (the sandbox's process) and only when no real ``openevolve`` is
importable; being last, the finder never shadows one installed later either. Nothing is
written to site-packages.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType

#: The package the stand-in answers for.
PACKAGE = "openevolve"
#: Its modules DEI provides, by full name: the file that implements each.
MODULES = {f"{PACKAGE}.evaluation_result": Path(__file__).with_name("evaluation_result.py")}


class _Package(importlib.abc.Loader):
    """Makes the empty ``openevolve`` package (its modules come from :data:`MODULES`)."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        module.__doc__ = "DEI's stand-in for OpenEvolve (only what evaluators import)."


class StandInFinder(importlib.abc.MetaPathFinder):
    """Finds ``openevolve`` and the modules of :data:`MODULES`, nothing else."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == PACKAGE:
            return importlib.machinery.ModuleSpec(PACKAGE, _Package(), is_package=True)
        if fullname in MODULES:
            return importlib.util.spec_from_file_location(fullname, MODULES[fullname])
        return None


#: Whether a real ``openevolve`` is importable, once asked (it does not change in a run).
_REAL: list[bool] = []


def _real_installed() -> bool:
    if not _REAL:
        try:
            _REAL.append(importlib.util.find_spec(PACKAGE) is not None)
        except (ImportError, ValueError):  # a broken install: the evaluator's import says so
            _REAL.append(True)
    return _REAL[0]


def _ours(module: ModuleType | None) -> bool:
    spec = getattr(module, "__spec__", None)
    return spec is not None and (
        isinstance(spec.loader, _Package) or spec.origin in {str(p) for p in MODULES.values()}
    )


@contextlib.contextmanager
def importable() -> Iterator[None]:
    """Lets the block import ``openevolve`` from the stand-in, when no real one is installed.

    The finder and the modules it made are gone after the block (an evaluator keeps what it
    imported), so nothing else in the process — a check whether OpenEvolve is installed,
    say — ever sees the stand-in.
    """
    if _real_installed():
        yield
        return
    finder = StandInFinder()
    sys.meta_path.append(finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in (PACKAGE, *MODULES):
            if _ours(sys.modules.get(name)):
                del sys.modules[name]
