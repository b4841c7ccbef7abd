"""``scripts/code_lines.py``: what counts as a code line (the measure issue 49 names)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "code_lines.py"


@pytest.fixture(scope="module")
def code_lines_script():
    spec = importlib.util.spec_from_file_location("code_lines_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_blank_comment_and_docstring_lines_do_not_count(code_lines_script) -> None:
    source = (
        '"""A module docstring\n'
        'over two lines."""\n'
        "\n"
        "# a comment\n"
        "def f(x):\n"
        '    """Its docstring."""\n'
        "    return (x +  # a trailing comment: the line counts\n"
        "            1)\n"
        "\n"
        'TEXT = """a string that is a value\n'
        'counts"""\n'
    )
    # def f, return (x +, 1), and the two lines of TEXT.
    assert code_lines_script.code_lines(source) == 5


def test_the_script_prints_per_part_counts(code_lines_script, capsys) -> None:
    assert code_lines_script.main(["dei_framework"]) == 0
    result = json.loads(capsys.readouterr().out)["dei_framework"]
    assert result["code_lines"] == sum(result["by_part"].values())
    assert {"contract", "search", "runtime"} <= set(result["by_part"])
