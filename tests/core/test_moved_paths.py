"""The flat layout's import paths (before the layer packages) keep working for one release:
the same module objects, each with a DeprecationWarning naming the new path."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from dei_framework import _moved


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_every_old_path_is_the_module_at_its_new_one(old: str) -> None:
    # A fresh interpreter: here the old path may be imported already (then it does not warn).
    probe = (
        "import importlib, warnings\n"
        "warnings.simplefilter('error')\n"
        f"new = importlib.import_module('dei_framework.{_moved.MOVED[old]}')\n"
        "try:\n"
        f"    importlib.import_module('dei_framework.{old}')\n"
        "except DeprecationWarning as warning:\n"
        "    print(warning)\n"
        "warnings.simplefilter('ignore')\n"
        f"print(importlib.import_module('dei_framework.{old}') is new)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.splitlines()  # fmt: skip
    assert out == [f"dei_framework.{old} moved to dei_framework.{_moved.MOVED[old]}; the old "
                   "path goes in the next release", "True"]  # fmt: skip


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
    probe = ("import warnings; warnings.simplefilter('error'); import dei_framework; "
             "from dei_framework.runtime.ensemble import Ensemble; "
             "from dei_framework.evaluation import Evaluator; dei_framework.run")  # fmt: skip
    subprocess.run([sys.executable, "-c", probe], check=True)
