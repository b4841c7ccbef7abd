"""The package's public names: all importable, loaded on first use, each declared once;
every other module marked internal; the names removed in 0.2 gone.

``dei_framework/__init__.py`` declares each public name once, in ``_NAMES_BY_MODULE`` (the
module that defines it); ``__all__`` and ``__getattr__`` derive from it.
"""

from __future__ import annotations

import ast
import collections
import enum
import importlib
import importlib.metadata
import inspect
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import dei_framework

INIT = Path(dei_framework.__file__)


def test_each_public_name_is_declared_once() -> None:
    declared = [name for names in dei_framework._NAMES_BY_MODULE.values() for name in names]
    assert [name for name, n in collections.Counter(declared).items() if n > 1] == []
    assert dei_framework.__all__ == sorted(declared)
    # Written once in the file: no second list (__all__, TYPE_CHECKING imports) beside the map.
    strings = collections.Counter(
        node.value
        for node in ast.walk(ast.parse(INIT.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    )
    assert {name: strings[name] for name in declared if strings[name] != 1} == {}


def test_the_package_module_imports_nothing_of_the_framework_at_import() -> None:
    tree = ast.parse(INIT.read_text())
    imported = [
        node
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom | ast.If)
        and "dei_framework" in ast.unparse(node)
    ]
    assert imported == []


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
    heavy = "{'numpy', 'click', 'pluggy', 'dei_framework.app.cli'}"
    probe = (
        "import sys, dei_framework, dei_framework.app.console; "
        f"print(sorted({heavy} & set(sys.modules)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"
    probe = "import sys, dei_framework; dei_framework.Scheduler; print('numpy' in sys.modules)"
    used = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert used == "True"  # and the first use loads what the name needs


def test_the_version_is_the_installed_distributions() -> None:
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text())["project"]["version"]
    assert dei_framework.__version__ == importlib.metadata.version("dei-framework") == declared


# --- what is public, what is internal ------------------------------------------------------------

#: The docstring paragraph that marks a module internal.
INTERNAL_MARK = "Internal: not public API"


def _modules() -> list[str]:
    """Every module of the package, relative to it (``watch.tail``), subpackages included."""
    found = pkgutil.walk_packages(dei_framework.__path__, "dei_framework.")
    return sorted(info.name.removeprefix("dei_framework.") for info in found)


def _public_modules() -> set[str]:
    """Modules the package re-exports from, and the modules defining its public classes and
    functions."""
    defining = set()
    for name in dei_framework.__all__:
        value = getattr(dei_framework, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            defining.add(value.__module__.removeprefix("dei_framework."))
    return set(dei_framework._NAMES_BY_MODULE) | defining | {"plugin.hookspecs"}


def test_every_module_is_public_api_private_or_marked_internal() -> None:
    public = _public_modules()
    # The layer packages themselves (``runtime``, ...) define nothing: their docstrings say
    # what lives in them; their modules are held to the rule.
    root = Path(dei_framework.__file__).parent
    layers = {path.parent.name for path in root.glob("*/__init__.py")}
    unmarked = []
    for module in _modules():
        if (
            module in public
            or module in layers
            or any(part.startswith("_") for part in module.split("."))
        ):
            continue
        docstring = importlib.import_module(f"dei_framework.{module}").__doc__ or ""
        if not any(line.startswith(INTERNAL_MARK) for line in docstring.splitlines()):
            unmarked.append(module)
    assert unmarked == [], f"neither public nor marked {INTERNAL_MARK!r}: {unmarked}"


def test_a_public_modules_all_holds_the_names_the_package_takes_from_it() -> None:
    for module, names in dei_framework._NAMES_BY_MODULE.items():
        declared = getattr(importlib.import_module(f"dei_framework.{module}"), "__all__", None)
        if declared is not None:
            assert set(names) <= set(declared), module


def test_the_public_surface_names_the_types_its_contracts_use() -> None:
    # what a plugin author meets in hook signatures and spec fields is importable from the package
    for name in (
        "ChampionEnvelope",
        "EvaluatedEvent",
        "EvaluationBackend",
        "EvaluatorSpec",
        "ExportedProgram",
        "LocalNetwork",
        "PluginRegistry",
        "RoundEvent",
        "RunOption",
        "RunSummary",
    ):
        assert name in dei_framework.__all__


#: Names removed in 0.2 (CHANGELOG.md, "Backwards-incompatible"), where each was importable.
REMOVED_NAMES = [
    ("dei_framework", "Elite"),
    ("dei_framework", "Parent"),
    ("dei_framework", "Opponent"),
    ("dei_framework", "EmitterBase"),
    ("dei_framework", "UniformEmitter"),
    ("dei_framework", "DEIDeprecationWarning"),
    ("dei_framework.contract.records", "Elite"),
    ("dei_framework.contract.operators", "Parent"),
    ("dei_framework.contract.errors", "DEIDeprecationWarning"),
    ("dei_framework.search.opponents", "Opponent"),
    ("dei_framework.search", "SearchDriver"),
    ("dei_framework.search.selectors", "EmitterSpec"),
    ("dei_framework.search.selectors", "BUILTIN_EMITTERS"),
    ("dei_framework.evaluation", "Evaluator"),
    ("dei_framework.experiment", "run_experiment"),
    ("dei_framework.report", "write_run_report"),
]


@pytest.mark.parametrize(("module", "name"), REMOVED_NAMES)
def test_a_name_removed_in_0_2_is_an_attribute_error(module: str, name: str) -> None:
    with pytest.raises(AttributeError, match=rf"has no attribute '{name}'"):
        getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("old", ["ensemble", "sandbox.zygote", "search.emitters", "search.archive"])
def test_a_module_path_removed_in_0_2_does_not_import(old: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"dei_framework.{old}")


#: The string enums of the records, with the strings the run's files and hooks hold.
RECORD_ENUMS = {
    "CandidateSource": {"", "initial", "seed", "own", "peer", "peer-excluded"},
    "WorkKind": {"new", "mutate", "warm", "peer"},
    "EventKind": {
        "evaluated",
        "round",
        "received",
        "received_late",
        "node_stopped",
        "allocation",
        "allocation_report",
        "money_starved",
        "money_handed",
        "money_received",
    },
    "ProgressKind": {"resumed", "evaluated", "round", "stopped", "status"},
}


@pytest.mark.parametrize("name", sorted(RECORD_ENUMS))
def test_the_records_string_enums_are_public_and_hold_the_documented_strings(name: str) -> None:
    from dei_framework.contract import kinds

    value = getattr(dei_framework, name)
    assert name in dei_framework.__all__ and value is getattr(kinds, name)
    assert issubclass(value, enum.StrEnum)
    assert {member.value for member in value} == RECORD_ENUMS[name]
    assert name in (dei_framework.__doc__ or "")
