"""docs/architecture.md's Layout names every package of ``dei_framework/`` and every module of
each, with its job, nested as the folders are."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "dei_framework"


def _map_entries() -> dict[str, str]:
    """``path -> job`` of the Layout block's lines under ``dei_framework/``: a name indented
    two spaces per level is inside the package named above it at the level before
    (``runtime/driver.py``); a line with no name continues the job above it."""
    text = (REPO / "docs" / "architecture.md").read_text()
    block = text[text.index("## Layout") :]
    block = block[block.index("```") + 3 :]
    block = block[: block.index("```")]
    entries: dict[str, str] = {}
    parents: list[str] = []
    inside = False
    for line in block.splitlines():
        if line.startswith("dei_framework/"):
            inside = True
            continue
        match = re.match(r"((?:  ){1,3})(\S+)\s{2,}(\S.*)", line)
        if not inside or not line.startswith(" "):
            inside = inside and line.startswith(" ")
            continue
        if match is None:  # a continuation line
            continue
        level = len(match.group(1)) // 2 - 1
        del parents[level:]
        path = "".join(parents) + match.group(2)
        entries[path] = match.group(3)
        if path.endswith("/"):
            parents.append(match.group(2))
    return entries


def _on_disk() -> set[str]:
    """Packages (``runtime/``) and modules (``runtime/driver.py``) of the core, as the map
    names them: every module of a layer package, and each subpackage as one entry."""
    found = {"__init__.py"} | {
        path.name for path in PACKAGE.glob("*.py") if not path.name.startswith("__")
    }
    for layer in PACKAGE.glob("*/__init__.py"):
        folder = layer.parent
        found.add(f"{folder.name}/")
        found.update(
            f"{folder.name}/{path.name}"
            for path in folder.glob("*.py")
            if path.name != "__init__.py"
        )
        found.update(f"{folder.name}/{sub.parent.name}/" for sub in folder.glob("*/__init__.py"))
    return found


def test_the_map_reads_nested_entries() -> None:
    entries = _map_entries()
    assert "runtime/" in entries and "runtime/driver.py" in entries
    assert "search/archives/" in entries and "errors.py" not in entries


def test_every_module_of_the_core_is_in_the_module_map_with_its_job() -> None:
    entries = _map_entries()
    missing = sorted(_on_disk() - set(entries))
    assert not missing, f"docs/architecture.md's Layout does not name: {', '.join(missing)}"
    assert all(entries[name].strip() for name in _on_disk())


def test_the_map_names_no_module_that_is_gone() -> None:
    gone = sorted(set(_map_entries()) - _on_disk())
    assert not gone, f"docs/architecture.md's Layout names modules that do not exist: {gone}"
