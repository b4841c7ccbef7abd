"""The import paths of the flat layout (before 0.2), kept working for one release.

``dei_framework`` used to be one folder of modules; they now live in the layer packages
(``contract``, ``search``, ``evaluation``, ``net``, ``plugin``, ``analysis``, ``runtime``,
``experiment``, ``report``, ``app``; docs/architecture.md, "Layout"). Importing an old path
(``dei_framework.ensemble``, ``dei_framework.sandbox.zygote``) gives the module at its new
path — the same module object, so a ``monkeypatch`` through either path patches both — with a
:class:`DeprecationWarning` naming the new one. Modules renamed since (:data:`RENAMED`: the
parent selectors, once "emitters") are found the same way, under either old path, and their
old class names still resolve (:func:`renamed_names`), each with a warning.

Four old modules share their name with a new package (``search``, ``evaluation``,
``experiment``, ``report``): the last three export the old module's names as their own;
``search``, whose old module was the node driver (now ``run.driver``), forwards them
(:func:`forward_driver`) with the same warning.

This module imports nothing of the framework (it names modules by string) but the leaf
:mod:`dei_framework._deprecation`, so every layer may use it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from dei_framework._deprecation import DEIDeprecationWarning

#: Old module (or package) under ``dei_framework`` -> its new dotted path under it (as of 0.2:
#: :data:`RENAMED` may have renamed it since).
MOVED: dict[str, str] = {
    "errors": "contract.errors",
    "records": "contract.records",
    "descriptors": "contract.descriptors",
    "domain": "contract.domain",
    "operators": "contract.operators",
    "transport": "contract.transport",
    "backend": "contract.backend",
    "cli_options": "contract.cli_options",
    "context": "contract.context",
    "registry": "contract.registry",
    "scheduler": "search.scheduler",
    "opponents": "search.opponents",
    "slot_random": "search.slot_random",
    "sharing": "search.sharing",
    "allocation": "search.allocation",
    "archives": "search.archives",
    "emitters": "search.emitters",
    "archive": "search.archive",
    "dask_backend": "evaluation.dask_backend",
    "dask_calls": "evaluation.dask_calls",
    "dask_guard": "evaluation.dask_guard",
    "dask_worker": "evaluation.dask_worker",
    "sandbox": "evaluation.sandbox",
    "envelope": "net.envelope",
    "node": "net.node",
    "timeline": "net.timeline",
    "hookspecs": "plugin.hookspecs",
    "plugins": "plugin.manager",
    "_contract": "plugin._contract",
    "_builtin": "plugin._builtin",
    "common": "analysis.common_ground",
    "stats": "analysis.stats",
    "metrics": "analysis.metrics",
    "formatting": "analysis.formatting",
    "ensemble": "runtime.ensemble",
    "builders": "runtime.builders",
    "budget": "runtime.budget",
    "money_pool": "runtime.money_pool",
    "checkpoints": "runtime.checkpoints",
    "replay": "runtime.replay",
    "runlog": "runtime.run_dir",
    "run_files": "runtime.run_files",
    "run_lock": "runtime.run_lock",
    "chaos": "runtime.chaos",
    "launcher": "runtime.launcher",
    "merge": "runtime.merge",
    "run_summary": "runtime.summary",
    "config": "runtime.config",
    "presets": "runtime.presets",
    "progress": "runtime.progress",
    "endpoints": "runtime.endpoints",
    "experiment_plan": "experiment.plan",
    "experiment_summary": "experiment.summary",
    "portfolio": "experiment.portfolio",
    "plots": "report.plots",
    "run_report": "report.run_report",
    "experiment_report": "report.experiment_report",
    "export": "report.export",
    "cli": "app.cli",
    "cli_experiment": "app.cli_experiment",
    "console": "app.console",
    "watch": "app.watch",
}

#: Modules renamed in their package after the move (old dotted path under ``dei_framework`` ->
#: new). The parent-choice strategies were "emitters", which in pyribs are what generate
#: solutions; they are parent selectors. A flat path reaches these through :data:`MOVED` first
#: (``dei_framework.emitters._emitter_base`` -> ``search.emitters._emitter_base`` -> here).
RENAMED: dict[str, str] = {
    "search.emitters": "search.selectors",
    "search.emitters._emitter_base": "search.selectors._parent_selector",
    "search.emitters._emitter_spec": "search.selectors._selector_spec",
    "search.emitters._improvement_emitter": "search.selectors._improvement_selector",
    "search.emitters._tournament_emitter": "search.selectors._tournament_selector",
    "search.emitters._uniform_emitter": "search.selectors._uniform_selector",
}

#: The old ``dei_framework.search`` module's names, now in ``run.driver`` (the package
#: ``search`` is the search algorithm's layer; ``derive_seed`` it exports itself).
DRIVER_NAMES = ("MAX_FAILURES_PER_SLOT", "RecordedCall", "SearchDriver", "derive_seed")

_ROOT = "dei_framework."


def new_path(old: str) -> str | None:
    """The new dotted path of an old one (``dei_framework.sandbox.zygote`` ->
    ``dei_framework.evaluation.sandbox.zygote``), or ``None`` when it did not move."""
    if not old.startswith(_ROOT):
        return None
    path = old[len(_ROOT) :]
    head, _, tail = path.partition(".")
    moved = MOVED.get(head)
    if moved is not None:
        path = moved + (f".{tail}" if tail else "")
    path = _renamed(path)
    return None if _ROOT + path == old else _ROOT + path


def _renamed(path: str) -> str:
    """``path`` (under ``dei_framework``) after :data:`RENAMED`: a renamed module's new path,
    a module under a renamed package under the new one, anything else as it is."""
    if path in RENAMED:
        return RENAMED[path]
    for old, new in RENAMED.items():
        if path.startswith(f"{old}."):
            return new + path[len(old) :]
    return path


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"{old} moved to {new}; the old path goes in the next release",
        DEIDeprecationWarning,
        stacklevel=3,
    )


class _AliasLoader(importlib.abc.Loader):
    """Loads an old path as the module at its new path (the same object)."""

    def __init__(self, new: str) -> None:
        self.new = new
        self._spec: Any = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.new)
        # The import system sets ``__spec__`` on what this returns: the real one is put back.
        self._spec = module.__spec__
        _warn(spec.name, self.new)
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds old paths (before the path finder could find a second copy of a moved module's
    submodule through its package's ``__path__``)."""

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = new_path(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    """Makes the old paths importable (once per process)."""
    if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())


def renamed_names(module: str, renames: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) for ``module`` whose names were renamed: each old
    name in ``renames`` (old -> new) gives the object of the new one, with a
    :class:`DeprecationWarning`, for one release.

    The returned function raises :class:`AttributeError` for any other name, as a module's
    ``__getattr__`` must.
    """

    def __getattr__(name: str) -> Any:
        new = renames.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} is deprecated; use {module}.{new} (the same object); "
            "the old name goes in the next release",
            DEIDeprecationWarning,
            stacklevel=2,
        )
        return getattr(sys.modules[module], new)

    return __getattr__


def forward_driver(name: str) -> Any:
    """``dei_framework.search``'s module ``__getattr__``: the old module's driver names, from
    ``run.driver``, with a :class:`DeprecationWarning` (imported when asked for: the driver is
    in a layer above the search package)."""
    if name not in DRIVER_NAMES:
        raise AttributeError(f"module 'dei_framework.search' has no attribute {name!r}")
    value = getattr(importlib.import_module(_ROOT + "runtime.driver"), name)
    _warn(f"dei_framework.search.{name}", f"dei_framework.runtime.driver.{name}")
    return value
