"""The module map lives in the code: each package's ``__init__.py`` docstring says what the
package may import and lists its modules and subpackages under ``Modules:``, each with its job;
docs/architecture.md's Layout names every package, nested as the folders are.

Both are read from the files (``ast``, no imports) and held to the disk, so a module added,
renamed or removed fails here, naming it, until the package's docstring says so.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "dei_framework"

#: A ``Modules:`` entry: the name indented four spaces, then its job after two or more spaces.
ENTRY = re.compile(r" {4}(\S+)(?: {2,}(\S.*))?$")


def _packages() -> dict[str, Path]:
    """``path -> folder`` of every package of the core, the core itself (``""``) included:
    ``runtime/``, ``search/archives/``."""
    found = {"": PACKAGE}
    for init in sorted(PACKAGE.rglob("__init__.py")):
        if init.parent != PACKAGE:
            found[f"{init.parent.relative_to(PACKAGE).as_posix()}/"] = init.parent
    return found


def _parts(folder: Path) -> set[str]:
    """What a package's ``Modules:`` list must name: its module files, ``__init__.py`` aside
    (``driver.py``, ``__main__.py``), and its subpackages (``archives/``)."""
    modules = {path.name for path in folder.glob("*.py") if path.name != "__init__.py"}
    return modules | {f"{init.parent.name}/" for init in folder.glob("*/__init__.py")}


def _docstring(folder: Path) -> str:
    init = folder / "__init__.py"
    return ast.get_docstring(ast.parse(init.read_text(), filename=str(init))) or ""


def _module_list(docstring: str) -> dict[str, str] | None:
    """``name -> job`` of a docstring's ``Modules:`` section (``None``: it has none). An entry
    is a name indented four spaces, then its job; a line indented deeper continues the job
    above it; a blank line or a line indented less ends the section."""
    lines = docstring.splitlines()
    if "Modules:" not in lines:
        return None
    entries: dict[str, str] = {}
    name = None
    for line in lines[lines.index("Modules:") + 1 :]:
        match = ENTRY.match(line)
        if match:
            name = match.group(1)
            entries[name] = match.group(2) or ""
        elif line.startswith(" " * 5) and name is not None:
            entries[name] += " " + line.strip()
        else:
            break
    return entries


def _where(path: str) -> str:
    return f"dei_framework/{path}__init__.py"


def _layout() -> dict[str, str]:
    """``path -> job`` of the Layout block's lines under ``dei_framework/``: a name indented
    two spaces per level is inside the package named above it at the level before
    (``search/archives/``); a line with no name continues the one above it."""
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
        if not line.startswith(" "):
            inside = False
        match = re.match(r"((?:  ){1,3})(\S+)\s{2,}(\S.*)", line)
        if not inside or match is None:  # outside the core, or a continuation line
            continue
        level = len(match.group(1)) // 2 - 1
        del parents[level:]
        path = "".join(parents) + match.group(2)
        entries[path] = match.group(3)
        if path.endswith("/"):
            parents.append(match.group(2))
    return entries


def test_the_readers_see_nested_entries_and_continued_jobs() -> None:
    layout = _layout()
    assert "runtime/" in layout and "search/archives/" in layout and "plugins/" not in layout
    runtime = _module_list(_docstring(PACKAGE / "runtime"))
    assert runtime is not None and "error ladder" in runtime["operator_calls.py"]
    search = _module_list(_docstring(PACKAGE / "search"))
    assert search is not None and "archives/" in search and "driver.py" not in search
    assert _module_list("Job.\n\nModules:\n    a.py  one\n    b.py\nExample:\n    c.py  x") == {
        "a.py": "one",
        "b.py": "",
    }


def test_every_package_says_what_it_may_import() -> None:
    # The core's own __init__ is no layer: it hands on every layer's public names.
    # tests/core/test_layers.py checks the imports themselves.
    silent = [
        _where(path)
        for path, folder in _packages().items()
        if path and not re.search(r"^May import:", _docstring(folder), re.MULTILINE)
    ]
    assert not silent, f"no 'May import:' paragraph in the docstring of: {', '.join(silent)}"


def test_every_package_lists_every_module_with_its_job() -> None:
    problems = []
    for path, folder in _packages().items():
        listed = _module_list(_docstring(folder))
        if listed is None:
            problems.append(f"{_where(path)}: its docstring has no 'Modules:' list")
            continue
        missing = sorted(_parts(folder) - set(listed))
        if missing:
            problems.append(f"{_where(path)}: 'Modules:' does not name {', '.join(missing)}")
        jobless = sorted(name for name, job in listed.items() if not job.strip())
        if jobless:
            problems.append(f"{_where(path)}: 'Modules:' gives no job for {', '.join(jobless)}")
    assert not problems, "\n".join(problems)


def test_no_package_lists_a_module_that_is_gone() -> None:
    problems = []
    for path, folder in _packages().items():
        gone = sorted(set(_module_list(_docstring(folder)) or ()) - _parts(folder))
        if gone:
            problems.append(f"{_where(path)}: 'Modules:' names what does not exist: {gone}")
    assert not problems, "\n".join(problems)


def test_the_layout_names_every_package_with_its_job() -> None:
    layout = _layout()
    missing = sorted(set(_packages()) - {""} - set(layout))
    assert not missing, f"docs/architecture.md's Layout does not name: {', '.join(missing)}"
    assert all(job.strip() for job in layout.values())


def test_the_layout_names_no_package_that_is_gone() -> None:
    gone = sorted(set(_layout()) - set(_packages()))
    assert not gone, f"docs/architecture.md's Layout names packages that do not exist: {gone}"
