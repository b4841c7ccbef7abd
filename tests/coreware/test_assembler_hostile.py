"""Hostile Redcode: every input ends quickly, with a warrior or an AssemblyError, nothing else."""

from __future__ import annotations

import time

import pytest
from dei_coreware.assembler import AssemblyError, assemble
from hypothesis import given, settings
from hypothesis import strategies as st

#: A hang guard, not a speed claim: every input here ends in well under 0.2 s on the project's
#: machine, while the blow-ups it guards against (exponential EQU, unbounded FOR) never end.
LIMIT = 5.0


def rejects(source: str) -> AssemblyError:
    started = time.perf_counter()
    with pytest.raises(AssemblyError) as info:
        assemble(source)
    assert time.perf_counter() - started < LIMIT
    return info.value


def test_huge_for_counts() -> None:
    rejects("for 1000000000\ndat 0\nrof")
    rejects("for 65535\nfor 65535\nrof\nrof\ndat 0")  # empty bodies, 4 billion times
    rejects("for 65535\nfor 65535\nx equ 1\nrof\nrof\ndat 0")


def test_self_referencing_equ() -> None:
    assert "recursive" in str(rejects("a equ a\ndat a"))
    assert "recursive" in str(rejects("a equ b\nb equ a\nmov a, b"))


def test_exponential_equ_chains() -> None:
    lines = ["x0 equ 1"] + [f"x{i} equ x{i - 1}+x{i - 1}" for i in range(1, 61)]
    rejects("\n".join(lines) + "\ndat x60, 0")
    # Multi-line EQUs that double the number of lines at each level and emit nothing.
    lines = ["y0 equ"] + [f"y{i} equ y{i - 1}\n equ y{i - 1}" for i in range(1, 61)]
    rejects("\n".join(lines) + "\ny60\ndat 0")


def test_long_equ_chain_is_fine_but_very_deep_nesting_is_refused() -> None:
    lines = ["z0 equ 1"] + [f"z{i} equ z{i - 1}" for i in range(1, 60)]
    assert assemble("\n".join(lines) + "\ndat z59, 0").instructions[0].a == 1
    lines = ["z0 equ 1"] + [f"z{i} equ z{i - 1}" for i in range(1, 5000)]
    rejects("\n".join(lines) + "\ndat z4999, 0")


def test_deep_parentheses() -> None:
    rejects("dat " + "(" * 10_000 + "1" + ")" * 10_000 + ", 0")
    rejects(";assert " + "(" * 10_000 + "1" + ")" * 10_000 + "\ndat 0")
    rejects("for " + "-" * 10_000 + "(" * 5000 + "1\nrof\ndat 0")


def test_huge_inputs() -> None:
    rejects("dat 0, 0\n" * 600_000)  # 5 MiB
    rejects(";" + "x" * 5_000_000)
    rejects("dat " + "1+" * 100_000 + "1, 0")  # a line longer than pMARS's buffer


def test_many_labels_and_lines() -> None:
    rejects("\n".join(f"l{i}" for i in range(100)) + "\ndat 0")
    rejects("dat 0\n" * 1001)


def test_binary_junk_and_nul_bytes() -> None:
    assert "NUL" in str(rejects("dat 0\n\0\n"))
    rejects(bytes(range(256)).decode("latin-1") * 10)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_random_text_raises_only_assembly_errors(source: str) -> None:
    started = time.perf_counter()
    try:
        assemble(source)
    except AssemblyError:
        pass
    assert time.perf_counter() - started < LIMIT


_WORDS = st.sampled_from(
    [
        "mov",
        "dat",
        "spl",
        "jmp",
        "equ",
        "for",
        "rof",
        "end",
        "org",
        "pin",
        "x",
        "y",
        "lab",
        "CURLINE",
        "CORESIZE",
        "&",
        "#",
        "@",
        "<",
        ">",
        "*",
        "{",
        "}",
        ",",
        ".",
        ".ab",
        "(",
        ")",
        "+",
        "-",
        "/",
        "%",
        "!",
        "==",
        "&&",
        "||",
        "0",
        "1",
        "7",
        "65535",
        ";assert 1",
        "\n",
        " ",
        ":",
        ";redcode",
        "\\\n",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_WORDS, max_size=60))
def test_random_redcode_like_text_raises_only_assembly_errors(words: list[str]) -> None:
    started = time.perf_counter()
    try:
        warrior = assemble(" ".join(words))
    except AssemblyError:
        pass
    else:
        assert all(0 <= i.a < 8000 and 0 <= i.b < 8000 for i in warrior.instructions)
    assert time.perf_counter() - started < LIMIT
