"""The code's shape, checked: ruff clean and formatted, and the size limits of the core.

The limits are the ones ``docs/architecture.md`` states: no function in ``dei_framework/`` over
80 lines, no module over 500 lines outside ``app/`` and ``report/`` (the command line and the
report writers are allowed to be long lists of options and sections).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "dei_framework"
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 500
LONG_MODULES_ALLOWED_IN = ("app", "report")


def _ruff() -> list[str]:
    found = shutil.which("ruff")
    if found is None:  # installed with the test extras, so a missing one is a broken install
        pytest.fail("ruff is not installed: pip install -e '.[test]'")
    return [found]


@pytest.mark.parametrize(
    "arguments", [["check", "--no-cache", "."], ["format", "--check", "--no-cache", "."]]
)
def test_ruff_is_clean(arguments: list[str]) -> None:
    done = subprocess.run(
        [*_ruff(), *arguments], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
    ]


def test_no_core_function_is_over_80_lines() -> None:
    long = [
        f"{path.relative_to(ROOT)}:{name} ({lines} lines)"
        for path in sorted(CORE.rglob("*.py"))
        for name, lines in _functions(path)
        if lines > MAX_FUNCTION_LINES
    ]
    assert not long, "functions over 80 lines: " + ", ".join(long)


def test_no_core_module_outside_app_and_report_is_over_500_lines() -> None:
    long = []
    for path in sorted(CORE.rglob("*.py")):
        package = path.relative_to(CORE).parts[0]
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if package not in LONG_MODULES_ALLOWED_IN and lines > MAX_MODULE_LINES:
            long.append(f"{path.relative_to(ROOT)} ({lines} lines)")
    assert not long, "modules over 500 lines: " + ", ".join(long)


def test_the_limits_are_the_documented_ones() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"{MAX_FUNCTION_LINES} lines" in text and f"{MAX_MODULE_LINES} lines" in text
    assert sys.version_info >= (3, 11)  # ast's end_lineno and X | Y in isinstance
