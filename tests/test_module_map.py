"""docs/architecture.md's module map names every module of ``dei_framework/`` with its job."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "dei_framework"


def _map_entries() -> dict[str, str]:
    """``name -> job`` of the Layout block's ``dei_framework/`` lines (``a.py, b.py`` lines
    give both names the same job)."""
    text = (REPO / "docs" / "architecture.md").read_text()
    block = text[text.index("## Layout") :]
    block = block[block.index("```") + 3 :]
    block = block[: block.index("```")]
    entries: dict[str, str] = {}
    for line in block.splitlines():
        match = re.match(r"  (\S+(?:, \S+)*)\s{2,}(\S.*)", line)
        if match:
            for name in match.group(1).split(", "):
                entries[name] = match.group(2)
    return entries


def test_every_module_of_the_core_is_in_the_module_map_with_its_job() -> None:
    modules = {path.name for path in PACKAGE.glob("*.py") if not path.name.startswith("__")}
    packages = {
        f"{path.name}/"
        for path in PACKAGE.iterdir()
        if path.is_dir() and (path / "__init__.py").exists()
    }
    entries = _map_entries()
    missing = sorted((modules | packages) - set(entries))
    assert not missing, f"docs/architecture.md's Layout does not name: {', '.join(missing)}"
    assert all(entries[name].strip() for name in modules | packages)


def test_the_map_names_no_module_that_is_gone() -> None:
    gone = [
        name
        for name in _map_entries()
        if name.endswith((".py", "/")) and not (PACKAGE / name.rstrip("/")).exists()
    ]
    assert not gone, f"docs/architecture.md's Layout names modules that do not exist: {gone}"
