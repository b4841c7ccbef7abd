"""The run directory's file names live in one module (``runtime/files/run_layout.py``): no other
module of the core spells one out, so renaming a file is a one-line change."""

from __future__ import annotations

import ast
from pathlib import Path

from dei_framework.runtime.files import run_layout

CORE = Path(run_layout.__file__).resolve().parents[1]
NAMES = {
    value
    for name, value in vars(run_layout).items()
    if name.endswith("_FILE") and isinstance(value, str)
}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of ``tree`` (prose may name a file)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def spelt_out(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of each string literal in ``source`` that is a run-directory file name
    (f-string parts included, docstrings not)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in NAMES and id(node) not in docs
    )


def test_the_check_finds_a_spelt_out_name() -> None:
    source = (
        '"""Reads summary.json."""\npath = run / "summary.json"\nsay(f"{run / \'config.json\'}")\n'
    )
    assert spelt_out(source) == [(2, "summary.json"), (3, "config.json")]


def test_no_core_module_but_the_layout_spells_out_a_run_directory_file() -> None:
    assert {"config.json", "events.jsonl", "summary.json", "checkpoint.json"} <= NAMES
    found = [
        f"{path.relative_to(CORE.parent)}:{line}: {name!r}"
        for path in sorted(CORE.rglob("*.py"))
        if path.name != "run_layout.py"
        for line, name in spelt_out(path.read_text(encoding="utf-8"))
    ]
    assert not found, "use dei_framework.runtime.files.run_layout's constants: " + "; ".join(found)
