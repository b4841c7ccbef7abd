"""Runs the symbolic-regression example's own tests (examples/symreg/tests) in the main suite.

The example is a separate distribution, installed like any third-party plugin; CI installs it
with ``pip install -e examples/symreg``. Its test modules are imported here so that every one
of its tests is collected, reported and selectable (``-k``) in the top-level run.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

#: On the tests' ``pythonpath`` (pyproject.toml), so its modules import by name.
EXAMPLE_TESTS = Path(__file__).resolve().parents[2] / "examples" / "symreg" / "tests"

try:
    import dei_symreg  # noqa: F401
except ImportError:
    pytest.fail(
        "the symreg example plugin is not installed; run: pip install -e examples/symreg",
        pytrace=False,
    )

_seen: dict[str, str] = {}
for _path in sorted(EXAMPLE_TESTS.glob("test_*.py")):
    _module = importlib.import_module(_path.stem)
    for _name, _value in vars(_module).items():
        if _name.startswith("_") or _name in ("annotations",):
            continue
        if _name.startswith("test_") and _name in _seen:
            raise RuntimeError(f"{_name} is defined in both {_seen[_name]} and {_path.name}")
        _seen.setdefault(_name, _path.name)
        globals()[_name] = _value
