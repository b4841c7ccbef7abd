"""The tests find their helper modules through pytest's ``pythonpath`` (pyproject.toml), never
by editing ``sys.path`` themselves: an edit at import time makes a test's imports depend on
which other test files were collected first (the same module name found in two folders), and
hides from a reader where a helper comes from."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
#: ``sys.path`` methods that change it.
EDITS = {"insert", "append", "extend", "remove", "pop", "clear"}


def sys_path_edits(source: str) -> list[int]:
    """Lines of ``source`` that change ``sys.path`` (a call of one of :data:`EDITS` on it, an
    assignment to it or to an item of it)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in EDITS and ast.unparse(node.func.value) == "sys.path":
                lines.append(node.lineno)
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                base = target.value if isinstance(target, ast.Subscript) else target
                if ast.unparse(base) == "sys.path":
                    lines.append(node.lineno)
    return sorted(lines)


def test_the_check_sees_each_kind_of_edit() -> None:
    source = (
        "import sys\n"
        "sys.path.insert(0, 'a')\n"
        "sys.path.append('b')\n"
        "sys.path[:0] = ['c']\n"
        "sys.path += ['d']\n"
        "print(sys.path)\n"
    )
    assert sys_path_edits(source) == [2, 3, 4, 5]


def test_no_test_module_edits_sys_path() -> None:
    edits = [
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in sys_path_edits(path.read_text())
    ]
    assert not edits, (
        "these lines edit sys.path; add the helper's folder to pythonpath in pyproject.toml "
        "instead (or monkeypatch.syspath_prepend inside a fixture): " + ", ".join(edits)
    )
