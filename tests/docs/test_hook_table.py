"""docs/architecture.md's hook table is the one scripts/hook_table.py writes from the specs."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from dei_framework.plugin import hookspecs
from dei_framework.plugin._contract import hook_docs

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "hook_table.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("hook_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table_rows(document: str, script) -> dict[str, list[str]]:
    """The table's rows by hook name: the cells after the hook's signature."""
    block = document[document.index(script.BEGIN) : document.index(script.END)]
    rows = {}
    for line in block.splitlines():
        match = re.match(r"\| `(\w+)\(", line)
        if match:
            rows[match.group(1)] = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[2:-1]]
    return rows


def test_the_table_lists_every_hook_with_its_firing_rule_and_nothing_else(script) -> None:
    rows = _table_rows(script.DOCUMENT.read_text(), script)
    docs = hook_docs(hookspecs)
    assert list(rows) == [doc.name for doc in docs]
    for doc in docs:
        kind, _, fires, returns = rows[doc.name]
        assert kind == script.kind(doc)
        assert fires == script.markdown(doc.sections["Fires"])
        assert returns == script.markdown(doc.sections["Returns"])


def test_the_table_is_up_to_date(script) -> None:
    assert script.main(["--check"]) == 0


def test_a_changed_docstring_makes_the_check_fail(script, tmp_path, monkeypatch) -> None:
    stale = script.DOCUMENT.read_text().replace("Once per node and round", "Now and then")
    copy = tmp_path / "architecture.md"
    copy.write_text(stale)
    monkeypatch.setattr(script, "DOCUMENT", copy)
    assert script.main(["--check"]) == 1
    assert script.main([]) == 0  # rewrites it
    assert script.main(["--check"]) == 0
    assert "Once per node and round" in copy.read_text()


def test_markup_becomes_markdown_and_pipes_are_escaped(script) -> None:
    text = (
        ":class:`~dei_framework.contract.domain.DomainSpec` or ``None`` | :func:`dei_framework.run`"
    )
    assert script.markdown(text) == "`DomainSpec` or `None` \\| `dei_framework.run`"
