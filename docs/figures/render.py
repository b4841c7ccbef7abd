"""Rewrites the figure regions of README.md and docs/*.md from the figure JSON files.

A block figure (a table, an output listing) sits between two comment lines::

    <!-- figure: families/all-conditions -->
    ...generated; do not edit...
    <!-- /figure -->

and a value inside a sentence between two inline comments::

    Diverse − Solo: <!-- fig: families/diverse-solo.common-qd -->+4.20<!-- /fig --> QD-score

``families`` names the figure set: ``docs/figures/families.json`` (data and provenance, written
by running ``docs/figures/families.py``) laid out by that script's ``figures(data)``. Every block
figure ends with a one-line source note (data file, commit, date; a warning for a quick run).
The name ``provenance`` is reserved in every set: the commands, n, spread and machine.

Usage::

    python docs/figures/render.py           # rewrite every page in place
    python docs/figures/render.py --check   # exit 1, naming the regions, if any page differs
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs

sys.path.append(str(Path(__file__).resolve().parent))  # the scripts import figurelib

from figurelib import FIGURES_DIR, ROOT  # noqa: E402

# A marker quoted in inline code (`<!-- fig: ... -->`) is text, not a marker; a block marker
# stands at the start of its line.
BLOCK = re.compile(
    r"^(<!-- figure: (?P<id>[^ ]+) -->\n)(?P<body>.*?)(<!-- /figure -->)", re.DOTALL | re.MULTILINE
)
INLINE = re.compile(r"(?<!`)(<!-- fig: (?P<id>[^ ]+) -->)(?P<body>.*?)(<!-- /fig -->)")
OPENERS = re.compile(r"(?<!`)<!-- (figure|fig): ")
#: The figure name every set has: where its numbers came from.
PROVENANCE = "provenance"


class FigureError(Exception):
    """A marker names a figure set or figure that does not exist, or markers do not pair."""


@attrs.frozen
class FigureSet:
    """One figure JSON file and the figures its script lays out from it."""

    #: The set's name (``families`` for ``docs/figures/families.json``).
    name: str
    #: The whole JSON record: ``data`` plus provenance (``git``, ``commands``, ``n`` ...).
    record: Mapping[str, Any]
    #: Figure name → Markdown, from the script's ``figures(data)`` and the provenance.
    figures: Mapping[str, str]

    @property
    def json_path(self) -> Path:
        return FIGURES_DIR / f"{self.name}.json"


def load_script(path: Path) -> ModuleType:
    """Imports a figure script by path without running its main."""
    spec = importlib.util.spec_from_file_location(f"dei_figure_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise FigureError(f"cannot import figure script {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def provenance(record: Mapping[str, Any]) -> str:
    """The reserved ``provenance`` figure: commands, n, spread, commit, date and machine."""
    git = record.get("git") or {}
    commit = (git.get("commit") or "unknown")[:10] + (
        " (with uncommitted changes)" if git.get("dirty") else ""
    )
    host = record.get("machine") or {}
    load = host.get("load_average")
    lines = [
        f"- script: `{record['script']}`"
        + (
            " — **quick run** (a reduced version that "
            "tests the pipeline; not the documented experiment)"
            if record.get("quick")
            else ""
        ),
        f"- commit `{commit}`, {record.get('date', 'unknown date')}; {host.get('cores')} "
        f"cores, load average {load[0] if load else 'unknown'} at the end",
        f"- n: {record.get('n')}; spread: {record.get('spread')}",
    ]
    lines += [f"- `{command}`" for command in record.get("commands", [])]
    totals = record.get("totals")
    if totals:
        lines.append(
            f"- took {totals['wall_s']:.0f} s of wall time and {totals['cpu_s']:.0f} s "
            "of CPU time (all processes)"
        )
    return "\n".join(lines)


def load_set(name: str, cache: dict[str, FigureSet] | None = None) -> FigureSet:
    """Reads ``docs/figures/<name>.json`` and lays it out with the script it names.

    Raises:
        FigureError: no such JSON file, or it names a script that does not exist.
    """
    if cache is not None and name in cache:
        return cache[name]
    path = FIGURES_DIR / f"{name}.json"
    if not path.is_file():
        raise FigureError(
            f"figure set '{name}': {shown(path)} does not exist (run python docs/figures/{name}.py)"
        )
    record = json.loads(path.read_text())
    script = ROOT / record.get("script", "")
    if not record.get("script") or not script.is_file():
        raise FigureError(
            f"{shown(path)} names script {record.get('script')!r}, which does not exist"
        )
    figures = dict(load_script(script).figures(record["data"]))
    figures[PROVENANCE] = provenance(record)
    figure_set = FigureSet(name=name, record=record, figures=figures)
    if cache is not None:
        cache[name] = figure_set
    return figure_set


def source_note(figure_set: FigureSet, page: Path) -> str:
    """The line under a block figure: its data file (linked), commit and date."""
    record = figure_set.record
    link = os.path.relpath(figure_set.json_path, page.parent).replace(os.sep, "/")
    commit = ((record.get("git") or {}).get("commit") or "unknown")[:7]
    date = str(record.get("date", ""))[:10]
    quick = (
        (
            " · **quick pipeline run, not the documented experiment: regenerate with "
            f"`python {record['script']}`**"
        )
        if record.get("quick")
        else ""
    )
    return f"<sub>Generated: [`{figure_set.name}.json`]({link}) · commit `{commit}` · {date}{quick}</sub>"  # noqa: E501


def lookup(figure_id: str, cache: dict[str, FigureSet]) -> tuple[FigureSet, str]:
    """The set and the Markdown of ``set/name``."""
    set_name, _, figure = figure_id.partition("/")
    figure_set = load_set(set_name, cache)
    if figure not in figure_set.figures:
        known = ", ".join(sorted(figure_set.figures))
        raise FigureError(f"figure '{figure_id}': the set has no '{figure}' (it has: {known})")
    return figure_set, figure_set.figures[figure]


def render_page(text: str, page: Path, cache: dict[str, FigureSet]) -> str:
    """``text`` with every figure region rewritten from its JSON.

    Raises:
        FigureError: an unknown figure, an inline figure over several lines, or a marker
            without its closing partner.
    """
    opened = len(OPENERS.findall(text))
    closed = len(BLOCK.findall(text)) + len(INLINE.findall(text))
    if opened != closed:
        raise FigureError(
            f"{page}: {opened - closed} figure marker(s) without a matching "
            "<!-- /figure --> or <!-- /fig -->"
        )

    def block(match: re.Match[str]) -> str:
        figure_set, body = lookup(match["id"], cache)
        note = (
            "" if match["id"].endswith("/" + PROVENANCE) else "\n\n" + source_note(figure_set, page)
        )
        return f"{match[1]}{body}{note}\n{match[4]}"

    def inline(match: re.Match[str]) -> str:
        _, body = lookup(match["id"], cache)
        if "\n" in body:
            raise FigureError(
                f"{page}: inline figure '{match['id']}' spans several lines; "
                "use a <!-- figure: --> block"
            )
        return f"{match[1]}{body}{match[4]}"

    return INLINE.sub(inline, BLOCK.sub(block, text))


def shown(path: Path) -> str:
    """``path`` as a message names it: relative to the repository when inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def pages() -> list[Path]:
    """The pages that may hold figures: README.md and docs/*.md (not generated reports)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def figure_ids(text: str) -> list[str]:
    """Every figure a page refers to, blocks then inline values."""
    return [m["id"] for m in BLOCK.finditer(text)] + [m["id"] for m in INLINE.finditer(text)]


def stale(paths: Iterable[Path], cache: dict[str, FigureSet]) -> dict[Path, str]:
    """Pages whose figure regions differ from their JSON: page → unified diff."""
    differing = {}
    for path in paths:
        text = path.read_text()
        rendered = render_page(text, path, cache)
        if rendered != text:
            name = shown(path)
            differing[path] = "".join(
                difflib.unified_diff(
                    text.splitlines(keepends=True),
                    rendered.splitlines(keepends=True),
                    f"{name} (as written)",
                    f"{name} (rendered from docs/figures/*.json)",
                )
            )
    return differing


def main(argv: list[str] | None = None, write: Callable[[str], Any] = print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 if a page differs from its JSON",
    )
    args = parser.parse_args(argv)
    cache: dict[str, FigureSet] = {}
    try:
        differing = stale(pages(), cache)
    except FigureError as error:
        write(f"error: {error}")
        return 1
    if args.check:
        for diff in differing.values():
            write(diff)
        return 1 if differing else 0
    for path in differing:
        path.write_text(render_page(path.read_text(), path, cache))
        write(f"rendered {shown(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
