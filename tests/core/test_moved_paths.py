"""The flat layout's import paths (before the layer packages) keep working for one release:
the same module objects, each with a DeprecationWarning naming the new path."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import dei_framework
from dei_framework import _moved
from dei_framework.search import selectors

#: Every old path: the flat layout's, the modules renamed since, and a flat path to one of those.
OLD_PATHS = sorted({*_moved.MOVED, *_moved.RENAMED, "emitters._emitter_base"})


@pytest.mark.parametrize("old", OLD_PATHS)
def test_every_old_path_is_the_module_at_its_new_one(old: str) -> None:
    new = _moved.new_path(f"dei_framework.{old}")
    package = f"dei_framework.{old}".rpartition(".")[0]  # imported first, and warns on its own
    # A fresh interpreter: here the old path may be imported already (then it does not warn).
    probe = (
        "import importlib, warnings\n"
        f"importlib.import_module('{package}')\n"
        "warnings.simplefilter('error')\n"
        f"new = importlib.import_module('{new}')\n"
        "try:\n"
        f"    importlib.import_module('dei_framework.{old}')\n"
        "except DeprecationWarning as warning:\n"
        "    print(warning)\n"
        "warnings.simplefilter('ignore')\n"
        f"print(importlib.import_module('dei_framework.{old}') is new)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == [
        f"dei_framework.{old} moved to {new}; the old path goes in the next release",
        "True",
    ]


def test_the_emitters_paths_lead_to_the_parent_selectors() -> None:
    assert _moved.new_path("dei_framework.emitters") == "dei_framework.search.selectors"
    assert (
        _moved.new_path("dei_framework.emitters._uniform_emitter")
        == _moved.new_path("dei_framework.search.emitters._uniform_emitter")
        == "dei_framework.search.selectors._uniform_selector"
    )
    assert _moved.new_path("dei_framework.search.selectors") is None
    assert _moved.new_path("dei_framework.search.scheduler") is None


def test_a_submodule_of_a_moved_package_is_not_loaded_twice() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = importlib.import_module("dei_framework.sandbox.zygote")
    assert old is importlib.import_module("dei_framework.evaluation.sandbox.zygote")
    assert old.__spec__.name == "dei_framework.evaluation.sandbox.zygote"


def test_patching_through_an_old_path_patches_the_module(monkeypatch) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = importlib.import_module("dei_framework.ensemble")
    monkeypatch.setattr(old, "MARKER_FOR_TEST", 1, raising=False)
    assert importlib.import_module("dei_framework.runtime.ensemble").MARKER_FOR_TEST == 1


def test_the_old_driver_names_resolve_from_the_search_package_with_a_warning() -> None:
    from dei_framework.runtime.driver import SearchDriver

    with pytest.warns(DeprecationWarning, match="dei_framework.runtime.driver.SearchDriver"):
        from dei_framework.search import SearchDriver as old
    assert old is SearchDriver
    with pytest.raises(ImportError):
        from dei_framework.search import NoSuchName  # noqa: F401


def test_a_new_path_never_warns() -> None:
    probe = (
        "import warnings; warnings.simplefilter('error'); import dei_framework; "
        "from dei_framework.runtime.ensemble import Ensemble; "
        "from dei_framework.evaluation import Evaluator; dei_framework.run"
    )
    subprocess.run([sys.executable, "-c", probe], check=True)


#: The parent selectors' old names (they were "emitters"), where each was importable, -> new.
OLD_SELECTOR_NAMES = [
    ("dei_framework", "EmitterBase", "ParentSelector"),
    ("dei_framework", "EmitterSpec", "SelectorSpec"),
    ("dei_framework", "UniformEmitter", "UniformSelector"),
    ("dei_framework", "ImprovementEmitter", "ImprovementSelector"),
    ("dei_framework", "TournamentEmitter", "TournamentSelector"),
    *(("dei_framework.search.selectors", old, new) for old, new in selectors.OLD_NAMES.items()),
    ("dei_framework.search.selectors._parent_selector", "EmitterBase", "ParentSelector"),
    ("dei_framework.search.selectors._selector_spec", "EmitterSpec", "SelectorSpec"),
    ("dei_framework.search.selectors._uniform_selector", "UniformEmitter", "UniformSelector"),
    (
        "dei_framework.search.selectors._improvement_selector",
        "ImprovementEmitter",
        "ImprovementSelector",
    ),
    (
        "dei_framework.search.selectors._tournament_selector",
        "TournamentEmitter",
        "TournamentSelector",
    ),
]


@pytest.mark.parametrize(("module", "old", "new"), OLD_SELECTOR_NAMES)
def test_an_old_selector_name_is_the_new_object_with_a_warning(module, old, new) -> None:
    home = importlib.import_module(module)
    with pytest.warns(
        DeprecationWarning,
        match=rf"{module}\.{old} is deprecated; use "
        rf"{module}\.{new}",
    ):
        value = getattr(home, old)
    assert value is getattr(home, new) is getattr(selectors, new)
    assert old not in getattr(home, "__all__", ()) and old not in dir(dei_framework)


def test_the_old_emitter_imports_still_work() -> None:
    # What a plugin written against 0.2 imports: the old package path and the old names.
    with pytest.warns(DeprecationWarning) as caught:
        from dei_framework.search.emitters import BUILTIN_EMITTERS, EmitterBase, UniformEmitter
        from dei_framework.search.emitters._tournament_emitter import TournamentEmitter
    assert caught[0].filename == __file__  # reported at the import, not inside the framework
    assert EmitterBase is selectors.ParentSelector and UniformEmitter is selectors.UniformSelector
    assert TournamentEmitter is selectors.TournamentSelector
    assert BUILTIN_EMITTERS is selectors.BUILTIN_SELECTORS

    class Mine(EmitterBase):  # a subclass of the old name is a parent selector
        name = "mine"

    assert issubclass(Mine, selectors.ParentSelector) and Mine.capabilities == frozenset()


def test_an_unknown_name_in_a_selector_module_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'EmitterBas'"):
        selectors.EmitterBas  # noqa: B018
    with pytest.raises(ImportError):
        from dei_framework.search.selectors import NoSuchSelector  # noqa: F401
