"""The package's public names: all importable, loaded on first use, declared once per form.

``dei_framework/__init__.py`` lists each name three times on purpose — ``__all__`` (what
``import *`` and linters see), ``_HOMES`` (what ``__getattr__`` loads at run time) and the
``TYPE_CHECKING`` imports (what type checkers and IDEs read). These tests keep them equal.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import dei_framework


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse(Path(dei_framework.__file__).read_text())
    block = next(node for node in tree.body
                 if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    return {alias.name: node.module.removeprefix("dei_framework.")
            for node in block.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}  # fmt: skip


def test_the_three_lists_of_public_names_agree() -> None:
    assert sorted(dei_framework.__all__) == sorted(set(dei_framework.__all__))
    assert set(dei_framework.__all__) == set(dei_framework._HOMES)
    assert _type_checking_imports() == dei_framework._HOMES


@pytest.mark.parametrize("name", sorted(dei_framework.__all__))
def test_every_public_name_is_the_object_its_module_defines(name: str) -> None:
    home = importlib.import_module(f"dei_framework.{dei_framework._HOMES[name]}")
    assert getattr(dei_framework, name) is getattr(home, name)
    assert name in dir(dei_framework)


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="'dei_framework' has no attribute 'Schedular'"):
        dei_framework.Schedular  # noqa: B018
    with pytest.raises(ImportError):
        from dei_framework import Schedular  # noqa: F401


def test_importing_the_package_loads_no_heavy_module() -> None:
    heavy = "{'numpy', 'click', 'pluggy', 'dei_framework.cli'}"
    probe = ("import sys, dei_framework, dei_framework.console; "
             f"print(sorted({heavy} & set(sys.modules)))")  # fmt: skip
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True).stdout.strip()  # fmt: skip
    assert loaded == "[]"
    probe = "import sys, dei_framework; dei_framework.Scheduler; print('numpy' in sys.modules)"
    used = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip
    assert used == "True"  # and the first use loads what the name needs


def test_the_version_is_the_installed_distributions() -> None:
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text())["project"]["version"]
    assert dei_framework.__version__ == importlib.metadata.version("dei-framework") == declared
