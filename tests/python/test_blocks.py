"""Evolve blocks: cutting a program at its markers, and the block a reply gives."""

from __future__ import annotations

import pytest
from dei_python.blocks import END, START, check_syntax, reply_block, reply_code, split

from dei_framework.contract.errors import InvalidProgram

PROGRAM = f"""import math

class Model:
    {START}
    def score(self, x):
        return x * 2
    {END}

def run():
    return Model().score(3)
"""


def test_a_program_is_cut_at_its_markers_and_joined_back() -> None:
    scaffold = split(PROGRAM)
    assert scaffold.head.endswith(f"{START}\n")
    assert scaffold.block == "    def score(self, x):\n        return x * 2\n"
    assert scaffold.tail.startswith(f"    {END}")
    assert scaffold.indent == "    "
    assert scaffold.join(scaffold.block) == PROGRAM


def test_a_reply_written_flush_left_takes_the_blocks_indentation() -> None:
    scaffold = split(PROGRAM)
    reply = "Here:\n```python\ndef score(self, x):\n    return x + 1\n```\nDone."
    block = reply_block(reply, scaffold)
    assert block == "    def score(self, x):\n        return x + 1\n"
    check_syntax(scaffold.join(block), scaffold)


def test_a_reply_with_the_whole_program_gives_only_its_marked_part() -> None:
    scaffold = split(PROGRAM)
    rewritten = PROGRAM.replace("x * 2", "x * 5").replace("import math", "import os")
    block = reply_block(f"```python\n{rewritten}```", scaffold)
    assert scaffold.join(block) == PROGRAM.replace("x * 2", "x * 5")  # the scaffold is kept


def test_the_python_fence_is_preferred_and_bare_code_is_code() -> None:
    assert reply_code("```text\nno\n```\n```python\nyes = 1\n```") == "yes = 1\n"
    assert reply_code("x = 1\n") == "x = 1\n"


def test_a_syntax_error_names_the_program_line_and_the_block_line() -> None:
    scaffold = split(PROGRAM)
    block = reply_block("```python\ndef score(self, x):\n    return (x *\n```", scaffold)
    with pytest.raises(InvalidProgram, match=r"^line \d+ \(line \d of the evolve block\): "):
        check_syntax(scaffold.join(block), split(scaffold.join(block)))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"{START}\nx = 1\n", "EVOLVE-BLOCK-END is missing"),
        (f"{END}\nx = 1\n{START}\n", "comes before"),
        (f"{START}\n{END}\n{START}\n{END}\n", "more than one evolve block"),
    ],
)
def test_broken_markers_are_refused_with_a_line(text: str, message: str) -> None:
    with pytest.raises(InvalidProgram, match=rf"^line \d+: .*{message}"):
        split(text)


@pytest.mark.parametrize("reply", ["", "```python\n\n```", "x" * 300_000])
def test_empty_and_runaway_replies_are_invalid(reply: str) -> None:
    with pytest.raises(InvalidProgram, match="^line 1: "):
        reply_block(reply, split(PROGRAM))


@pytest.mark.parametrize("code", ["x = '\0'\n", "(" * 5000 + ")" * 5000 + "\n"])
def test_hostile_text_is_invalid_not_a_crash(code: str) -> None:
    scaffold = split(PROGRAM)
    with pytest.raises(InvalidProgram, match="^line "):
        check_syntax(scaffold.join(reply_block(code, scaffold)), scaffold)


def test_a_whole_program_with_a_fence_in_its_docstring_gives_its_marked_part() -> None:
    program = '"""Usage:\n```python\nrun()\n```\n"""\n' + PROGRAM
    scaffold = split(program)
    assert reply_block(program, scaffold) == scaffold.block
