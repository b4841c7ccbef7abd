"""Reading warriors out of realistic model replies."""

from __future__ import annotations

import pytest
from dei_coreware.extract import clean, extract, is_code_line

from dei_framework.contract.errors import InvalidProgram

DWARF = "add #4, 3\nmov 2, @2\njmp -2\ndat #0, #0\n"


def ops(reply: str) -> list[str]:
    return [ins.opcode for ins in extract(reply).warrior.instructions]


def test_fenced_block_with_prose_around_it() -> None:
    reply = (
        "Here's a classic bomber for you:\n\n```redcode\n;redcode-94\n;name Dwarf\n"
        f"{DWARF}end\n```\n\nIt drops a DAT every 4 cells. Let me know if you want changes!"
    )
    found = extract(reply)
    assert found.source == f";redcode-94\n;name Dwarf\n{DWARF}end\n"
    assert found.warrior.name == "Dwarf"
    assert ops(reply) == ["ADD", "MOV", "JMP", "DAT"]


@pytest.mark.parametrize("tag", ["redcode", "asm", "", "Redcode", "text"])
def test_fence_tags(tag: str) -> None:
    assert ops(f"```{tag}\n{DWARF}```") == ["ADD", "MOV", "JMP", "DAT"]


def test_missing_end_header_and_closing_fence() -> None:
    assert ops(f"Sure.\n```redcode\n{DWARF}") == ["ADD", "MOV", "JMP", "DAT"]


def test_windows_newlines_and_tabs() -> None:
    reply = (
        "```redcode\r\nloop\tadd #4, bomb\r\n\tmov bomb, @bomb\r\n\tjmp loop\r\n"
        "bomb\tdat 0, 0\r\n```"
    )
    found = extract(reply)
    assert "\r" not in found.source and "\t" not in found.source
    assert len(found.warrior) == 4


def test_two_blocks_pick_the_warrior_not_the_snippet_or_the_shell_command() -> None:
    reply = (
        "An imp is just:\n```redcode\nmov 0, 1\n```\nHere is the full warrior:\n"
        f"```redcode\n;name Full\n{DWARF}```\nRun it with\n```bash\npmars -r 100 full.red\n```\n"
    )
    assert extract(reply).warrior.name == "Full"


def test_a_broken_block_loses_to_one_that_assembles() -> None:
    reply = f"First try:\n```redcode\nmov 0 1 2\n```\nFixed:\n```redcode\n{DWARF}```"
    assert len(extract(reply).warrior) == 4


def test_unfenced_code_loses_its_prose() -> None:
    reply = f"Here is my warrior:\n\n{DWARF}\nThis is a dwarf. It bombs every fourth cell."
    found = extract(reply)
    assert found.source == DWARF
    assert extract(found.source).source == found.source


def test_text_after_end_is_dropped() -> None:
    found = extract(f"```redcode\n{DWARF}end\nThe END of my answer: bombs away.\n```")
    assert found.source.endswith("end\n")


def test_garbage_is_invalid_with_a_clear_message() -> None:
    with pytest.raises(InvalidProgram, match="no Redcode found"):
        extract("I'm sorry, I can't help with writing that program.")
    with pytest.raises(InvalidProgram, match="no Redcode found"):
        extract("")


def test_assembler_errors_keep_line_numbers_and_quote_the_line() -> None:
    with pytest.raises(InvalidProgram) as info:
        extract("```redcode\n;name Bad\nmov 0, 1\nadd.q #1, 2\n```")
    message = str(info.value)
    assert message.startswith("line 3: ") and "`add.q #1, 2`" in message


def test_canonical_text_reassembles_to_the_same_load_image() -> None:
    replies = [
        f"```redcode\n{DWARF}```",
        "text\n```asm\nstart: spl 1\n  jmp start\nend start\n```\nmore",
        "x equ 7\nloop mov.i #x, @loop\n jmp loop",
        "Note:\n\n;redcode-94\n;name T\nstep equ 4\nfor 3\ndat step, 0\nrof\nmov 0, 1\n",
    ]
    for reply in replies:
        first = extract(reply)
        again = extract(first.source)
        assert again.source == first.source
        assert again.warrior == first.warrior


def test_code_line_heuristic() -> None:
    assert is_code_line("loop  add.ab #4, bomb ; comment")
    assert is_code_line("start: spl 1")
    assert is_code_line("; just a comment")
    assert is_code_line("END")
    assert not is_code_line("Here is the code:")
    assert not is_code_line("Add a bomb to the core every few cells.")
    assert not is_code_line("Jmp back to the start of the loop")
    assert clean("intro\nmov 0, 1\noutro\n") == "mov 0, 1\n"
