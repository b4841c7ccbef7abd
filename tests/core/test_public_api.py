"""The package's public names: all importable, loaded on first use, declared once per form;
every other module marked internal; the aliases of ``Candidate`` deprecated.

``dei_framework/__init__.py`` lists each name three times on purpose — ``__all__`` (what
``import *`` and linters see), ``_HOMES`` (what ``__getattr__`` loads at run time) and the
``TYPE_CHECKING`` imports (what type checkers and IDEs read). These tests keep them equal.
"""

from __future__ import annotations

import ast
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


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse(Path(dei_framework.__file__).read_text())
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    return {
        alias.name: node.module.removeprefix("dei_framework.")
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


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


DEPRECATED_PATHS = [
    ("dei_framework", "Elite"),
    ("dei_framework", "Parent"),
    ("dei_framework", "Opponent"),
    ("dei_framework.contract.records", "Elite"),
    ("dei_framework.contract.records", "Parent"),
    ("dei_framework.contract.records", "Opponent"),
    ("dei_framework.contract.operators", "Parent"),
    ("dei_framework.search.opponents", "Opponent"),
    ("dei_framework.search.archive", "Elite"),
]


@pytest.mark.parametrize(("module", "alias"), DEPRECATED_PATHS)
def test_the_aliases_of_candidate_warn_and_still_work(module: str, alias: str) -> None:
    home = importlib.import_module(module)
    with pytest.warns(
        DeprecationWarning,
        match=rf"{module}\.{alias} is deprecated; use "
        r"dei_framework\.Candidate",
    ):
        value = getattr(home, alias)
    assert value is dei_framework.Candidate
    assert alias not in getattr(home, "__all__", ())
    assert alias not in dir(dei_framework)


def test_a_deprecated_alias_warns_at_the_line_that_uses_it() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        from dei_framework.contract.operators import Parent  # noqa: F401
    assert caught[0].filename == __file__


def test_candidate_itself_and_unknown_names_do_not_warn(recwarn) -> None:
    import dei_framework.contract.records as records

    assert dei_framework.Candidate is records.Candidate
    with pytest.raises(AttributeError, match="has no attribute 'Elit'"):
        records.Elit  # noqa: B018
    assert [w for w in recwarn if issubclass(w.category, DeprecationWarning)] == []


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
