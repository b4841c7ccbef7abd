"""Every path into a run directory is built in one module (``runtime/files/run_layout.py``): no
other module of the core or of the bundled plugins spells out a run-directory file name or
joins one of its folders (``nodes/``, ``processes/``, round files) onto a path by hand, so
renaming or moving a file is a one-line change."""

from __future__ import annotations

import ast
from pathlib import Path

from dei_framework.runtime.files import run_layout

ROOT = Path(run_layout.__file__).resolve().parents[3]
SCANNED = (ROOT / "dei_framework", ROOT / "plugins")
#: File names: wrong anywhere outside the layout (a docstring may name one).
NAMES = {
    value
    for name, value in vars(run_layout).items()
    if name.endswith("_FILE") and isinstance(value, str)
}
#: Folder names: wrong where a path is built from them (``run / "nodes"``, a glob pattern);
#: elsewhere they are ordinary words (the ``nodes`` key of a summary).
FOLDERS = {run_layout.NODES_DIR, run_layout.PROCESSES_DIR}
#: A name that is a run directory's by coincidence, in a folder the run hands to a plugin: the
#: AXL node's own log in its home (``processes/<node>/axl/``), beside its config, is the
#: transport's file, laid out by the transport.
OWN_FILES = {("plugins/transports/axlnode.py", "node.log")}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of ``tree`` (prose may name a file)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _path_parts(tree: ast.AST) -> set[int]:
    """The ids of the string constants a path is built from: an operand of ``/`` (an f-string's
    parts included) or the pattern of a ``glob``/``rglob``/``joinpath`` call."""
    found = set()
    for node in ast.walk(tree):
        operands: list[ast.AST] = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            operands = [node.left, node.right]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"glob", "rglob", "joinpath"}
        ):
            operands = list(node.args)
        for operand in operands:
            found.update(id(part) for part in ast.walk(operand) if isinstance(part, ast.Constant))
    return found


def _by_hand(value: str, in_path: bool) -> bool:
    if value in NAMES or value.startswith("round-"):
        return True
    first = value.strip("*/").split("/")[0] if in_path else None
    return in_path and (value in FOLDERS or first in FOLDERS or "/nodes/" in value)


def built_by_hand(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of each string literal in ``source`` that names a run-directory file,
    or a run-directory folder a path is built from (docstrings aside)."""
    tree = ast.parse(source)
    docs, paths = _docstrings(tree), _path_parts(tree)
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and _by_hand(node.value, id(node) in paths)
    )


def test_the_check_finds_a_path_built_by_hand() -> None:
    source = (
        '"""Reads summary.json and nodes/."""\n'
        'path = run / "summary.json"\n'
        "say(f\"{run / 'config.json'}\")\n"
        'rounds = run / "nodes" / name / f"round-{index:03d}.json"\n'
        'found = run.glob("nodes/*/round-*.json")\n'
        'children = run / "processes"\n'
        'count = summary["nodes"]\n'
    )
    assert built_by_hand(source) == [
        (2, "summary.json"),
        (3, "config.json"),
        (4, "nodes"),
        (4, "round-"),
        (5, "nodes/*/round-*.json"),
        (6, "processes"),
    ]


def test_no_module_but_the_layout_builds_a_run_directory_path() -> None:
    assert {"config.json", "events.jsonl", "summary.json", "checkpoint.json"} <= NAMES
    assert {".dei.lock", "calls-unlogged.jsonl", "identity.pem"} <= NAMES
    scanned = [path for folder in SCANNED for path in sorted(folder.rglob("*.py"))]
    assert len(scanned) > 100 and ROOT / "plugins/transports/axlnode.py" in scanned
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path in scanned
        if path.name != "run_layout.py"
        for line, text in built_by_hand(path.read_text(encoding="utf-8"))
        if (path.relative_to(ROOT).as_posix(), text) not in OWN_FILES
    ]
    assert not found, "build it with dei_framework.runtime.files.run_layout: " + "; ".join(found)


def test_the_layout_builds_the_paths_the_docs_name(tmp_path: Path) -> None:
    assert run_layout.round_path(tmp_path, "node-0", 7) == tmp_path / "nodes/node-0/round-007.json"
    assert run_layout.process_dir(tmp_path, "a") == tmp_path / "processes/a"
    assert run_layout.identity_path(tmp_path, "a") == tmp_path / "nodes/a/identity.pem"
    for node, index in (("a", 1), ("a", 0), ("b", 0)):
        path = run_layout.round_path(tmp_path, node, index)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    assert run_layout.round_paths(tmp_path, "a") == [
        run_layout.round_path(tmp_path, "a", 0),
        run_layout.round_path(tmp_path, "a", 1),
    ]
    assert len(run_layout.round_paths(tmp_path)) == 3
    assert run_layout.ROUND_NAME.fullmatch("round-012.json").group(1) == "012"
