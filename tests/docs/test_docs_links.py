"""Every relative link in the user docs points at a file that exists, and the index maps them.

Checked pages: the guides and references written with the code they describe (the pages
maintained with their plugins — llm, transports, wire-format, coreware, experiments — are
linked from here and checked by the index test).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDES = (
    "index",
    "quickstart",
    "concepts",
    "cli",
    "configuration",
    "architecture",
    "writing-a-domain",
    "writing-an-operator",
    "writing-a-transport",
    "multi-machine",
    "paper-protocol",
    "library",
)
PAGES = [ROOT / "docs" / f"{name}.md" for name in GUIDES] + [ROOT / "README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def relative_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)  # code is not links
    return [
        target
        for target in LINK.findall(text)
        if not re.match(r"[a-z]+:", target) and not target.startswith("#")
    ]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_relative_links_resolve(page):
    broken = [
        target
        for target in relative_links(page)
        if not (page.parent / target.split("#")[0]).exists()
    ]
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_index_maps_every_page():
    index = (ROOT / "docs" / "index.md").read_text()
    unlisted = [
        p.name
        for p in sorted((ROOT / "docs").glob("*.md"))
        if p.name != "index.md" and f"({p.name})" not in index
    ]
    assert not unlisted, f"docs/index.md does not link {unlisted}"
