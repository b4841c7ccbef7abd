"""Tests of the Redcode assembler: pMARS reference images, language features, expressions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dei_coreware.assembler import AssemblerSettings, AssemblyError, assemble, assemble_file
from dei_coreware.assembler._expressions import c_div, c_mod, evaluate
from hypothesis import given, settings
from hypothesis import strategies as st

from dei_framework.contract.errors import InvalidProgram


def rows(source: str, **kwargs) -> list[str]:
    """The assembled instructions as ``OP.M aA, bB`` strings."""
    return [str(ins) for ins in assemble(source, **kwargs).instructions]


# -- reference data ---------------------------------------------------------------------------


def test_all_koenigstuhl_load_images_match_pmars(corewar_dir: Path) -> None:
    reference = json.loads(
        (corewar_dir / "reference" / "koenigstuhl-94nop-assembled.json").read_text()
    )
    folder = corewar_dir / "warriors" / "koenigstuhl-94nop"
    mismatches = []
    for name, expected in sorted(reference.items()):
        try:
            warrior = assemble_file(folder / name)
        except AssemblyError as exc:
            mismatches.append(f"{name}: {exc}")
            continue
        got = {"start": warrior.start, "instructions": [i.as_list() for i in warrior.instructions]}
        if got != {"start": expected["start"], "instructions": expected["instructions"]}:
            mismatches.append(name)
    assert len(reference) == 892
    assert mismatches == []


def test_files_missing_from_the_reference_still_assemble(corewar_dir: Path) -> None:
    """mimp, mimp1 and mimp2 have no reference image, yet pMARS 0.9.4 (built from source,
    ``pmars -A``) assembles them; their images here are the ones it prints."""
    reference = json.loads(
        (corewar_dir / "reference" / "koenigstuhl-94nop-assembled.json").read_text()
    )
    folder = corewar_dir / "warriors" / "koenigstuhl-94nop"
    missing = sorted(p.name for p in folder.glob("*.red") if p.name not in reference)
    assert missing == ["mimp.red", "mimp1.red", "mimp2.red"]
    mimp = assemble_file(folder / "mimp.red")
    assert (mimp.name, mimp.author, len(mimp)) == ("Mirrored Imps", "Paul Kline", 12)
    assert str(mimp.instructions[8]) == "JMP.B $5835, $7"


def test_human_warriors_assemble_and_stone_is_rejected(corewar_dir: Path) -> None:
    failures = {}
    for path in sorted((corewar_dir / "warriors" / "human").glob("*.red")):
        try:
            assemble_file(path)
        except AssemblyError as exc:
            failures[path.name] = exc
    assert list(failures) == ["stone.red"]
    assert failures["stone.red"].line is not None


def test_validate_assembles(corewar_dir: Path) -> None:
    warrior = assemble_file(corewar_dir / "warriors" / "validate" / "validate.red")
    assert 0 < len(warrior) <= 100
    assert 0 <= warrior.start < len(warrior)


# -- language features ------------------------------------------------------------------------


def test_defaults_modes_and_single_operands() -> None:
    assert rows("dat 5\njmp 2\nspl -1\nnop 3\nmov 0, 1") == [
        "DAT.F #0, $5",
        "JMP.B $2, $0",
        "SPL.B $7999, $0",
        "NOP.F $3, $0",
        "MOV.I $0, $1",
    ]
    with pytest.raises(AssemblyError, match="line 1: MOV needs two operands"):
        assemble("mov 1")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("mov #1, 2", "MOV.AB #1, $2"),
        ("mov 1, #2", "MOV.B $1, #2"),
        ("mov @1, <2", "MOV.I @1, <2"),
        ("cmp 1, 2", "CMP.I $1, $2"),
        ("seq #1, 2", "SEQ.AB #1, $2"),
        ("sne 1, 2", "SNE.I $1, $2"),
        ("add #1, 2", "ADD.AB #1, $2"),
        ("sub 1, #2", "SUB.B $1, #2"),
        ("mul 1, 2", "MUL.F $1, $2"),
        ("div {1, }2", "DIV.F {1, }2"),
        ("mod *1, >2", "MOD.F *1, >2"),
        ("slt #1, 2", "SLT.AB #1, $2"),
        ("slt 1, #2", "SLT.B $1, #2"),
        ("ldp #1, 2", "LDP.AB #1, $2"),
        ("stp 1, 2", "STP.B $1, $2"),
        ("djn 1, #2", "DJN.B $1, #2"),
        ("jmz.f 1, 2", "JMZ.F $1, $2"),
        ("JmN.bA 1, 2", "JMN.BA $1, $2"),
        ("dat #1, #2", "DAT.F #1, #2"),
    ],
)
def test_default_modifiers(source: str, expected: str) -> None:
    assert rows(source) == [expected]


def test_labels() -> None:
    source = """
    top:  mov 0, bottom     ; colon allowed
    a b   dat top, a
    alone
          jmp alone, b
    bottom dat 0, 0
    """
    assert rows(source) == ["MOV.I $0, $3", "DAT.F $7999, $0", "JMP.B $0, $7999", "DAT.F $0, $0"]


def test_labels_are_case_sensitive_and_opcodes_are_not() -> None:
    assert rows("Lbl MoV lbl, Lbl\nlbl dat 0") == ["MOV.I $1, $0", "DAT.F #0, $0"]
    with pytest.raises(AssemblyError, match="undefined symbol 'LBL'"):
        assemble("lbl mov LBL, 0")


def test_equ_single_and_multi_line() -> None:
    source = """
    step  equ 7*2
    pair  equ mov 0, step
          equ dat 1, 2
    x     pair
          jmp x
    """
    assert rows(source) == ["MOV.I $0, $14", "DAT.F $1, $2", "JMP.B $7998, $0"]


def test_equ_used_before_its_definition() -> None:
    assert rows("dat k, 1\nk equ 5") == ["DAT.F $5, $1"]


def test_recursive_equ_is_an_error() -> None:
    with pytest.raises(AssemblyError, match="recursive"):
        assemble("a equ a\ndat a, 0")
    with pytest.raises(AssemblyError, match="recursive"):
        assemble("a equ b\nb equ a\ndat a, 0")


def test_for_rof_counters_and_concatenation() -> None:
    source = """
    i     for 3
    x&i   dat i, x&i
          rof
          jmp x02
    """
    assert rows(source) == ["DAT.F $1, $0", "DAT.F $2, $0", "DAT.F $3, $0", "JMP.B $7998, $0"]


def test_nested_for_and_zero_count() -> None:
    source = """
    i for 2
    j for 2
      dat i, j
    rof
    rof
    for 0
      dat 9, 9
    rof
    """
    assert rows(source) == ["DAT.F $1, $1", "DAT.F $1, $2", "DAT.F $2, $1", "DAT.F $2, $2"]


def test_for_count_from_expression_and_curline() -> None:
    source = """
    dat 0, 0
    for MAXLENGTH / 50
      dat CURLINE, 0
    rof
    """
    assert rows(source, settings=AssemblerSettings(maxlength=100)) == [
        "DAT.F $0, $0",
        "DAT.F $1, $0",
        "DAT.F $2, $0",
    ]


def test_rof_without_for_is_an_error() -> None:
    with pytest.raises(AssemblyError, match="line 2: ROF without FOR"):
        assemble("dat 0\nrof")


def test_predefined_constants() -> None:
    source = "dat CORESIZE, MAXPROCESSES\ndat MAXCYCLES, MAXLENGTH\ndat MINDISTANCE, WARRIORS\n"
    source += "dat ROUNDS, VERSION\ndat PSPACESIZE, 0"
    custom = AssemblerSettings(
        coresize=100,
        maxprocesses=7,
        maxcycles=1234,
        maxlength=50,
        mindistance=5,
        warriors=3,
        rounds=9,
        pspacesize=0,
    )
    assert rows(source, settings=custom) == [
        "DAT.F $0, $7",
        "DAT.F $34, $50",
        "DAT.F $5, $3",
        "DAT.F $9, $94",
        "DAT.F $10, $0",  # default p-space: 100 / 10, 10 being the largest divisor <= 16
    ]


def test_org_end_and_start() -> None:
    assert assemble("dat 0\nstart mov 0, 1\nend start").start == 1
    assert assemble("org go\ndat 0\ngo jmp 0").start == 1
    assert assemble("org 1\ndat 0\njmp 0\nend 0").start == 1
    # END's operand is ignored when ORG already set a non-zero start.
    assert assemble("org 1\ndat 0\njmp 0\ndat 0\nend 2").start == 1


def test_text_after_end_is_ignored() -> None:
    assert rows("dat 1\nend\nthis is not redcode") == ["DAT.F #0, $1"]


def test_redcode_name_author_and_pin() -> None:
    source = """junk before the redcode line
;redcode-94
;name  Tiny
;author Someone
pin 42
dat 1, 2
;redcode
more junk: a second ;redcode line ends the warrior
"""
    warrior = assemble(source)
    assert (warrior.name, warrior.author, warrior.pin) == ("Tiny", "Someone", 42)
    assert [str(i) for i in warrior.instructions] == ["DAT.F $1, $2"]
    plain = assemble("dat 0")
    assert (plain.name, plain.author, plain.pin) == ("Unknown", "Anonymous", None)


def test_assert() -> None:
    assert rows(";assert CORESIZE == 8000\ndat 0") == ["DAT.F #0, $0"]
    with pytest.raises(AssemblyError, match="line 1: assertion failed"):
        assemble(";assert CORESIZE == 8001\ndat 0")


def test_fields_are_reduced_into_the_core() -> None:
    assert rows("dat -1, 16001", settings=AssemblerSettings(coresize=8000)) == ["DAT.F $7999, $1"]


def test_maxlength_is_enforced() -> None:
    assert len(assemble("for 100\ndat 0\nrof")) == 100
    with pytest.raises(AssemblyError, match="too many instructions"):
        assemble("for 101\ndat 0\nrof")
    with pytest.raises(AssemblyError, match="too many instructions"):
        assemble("dat 0\ndat 0", settings=AssemblerSettings(maxlength=1))


def test_syntax_errors_carry_their_line() -> None:
    cases = {
        "dat 0\ndat #0 #0": 2,  # the missing comma of stone.red
        "mov 0,": 1,
        "dat 0\n\nmov.q 0, 1": 3,
        "dat 1/0, 0": 1,
        "dat (1, 0": 1,
        "jmp 0, 1, 2": 1,
    }
    for source, line in cases.items():
        with pytest.raises(AssemblyError) as info:
            assemble(source)
        assert info.value.line == line, source
        assert str(info.value).startswith(f"line {line}: ")
        assert isinstance(info.value, InvalidProgram)


def test_no_instructions_is_an_error() -> None:
    with pytest.raises(AssemblyError, match="no instructions"):
        assemble(";redcode\n; nothing here\n")


def test_blank_separated_numbers_are_joined_like_pmars() -> None:
    # pMARS drops blanks after numbers before parsing operands: "1 2" reads as 12.
    assert rows("dat 1 2, 3") == ["DAT.F $12, $3"]


def test_registers() -> None:
    # A single letter that is not a label is a register of pMARS's evaluator.
    assert rows("dat x=3, x+1") == ["DAT.F $3, $4"]


def test_cr_lf_and_continuation_lines() -> None:
    assert rows("dat 1,\\\r\n 2\r\nmov 0, 1\r\n") == ["DAT.F $1, $2", "MOV.I $0, $1"]


# -- expressions ------------------------------------------------------------------------------

_LEVELS = [("||",), ("&&",), ("==", "!=", "<", ">", "<=", ">="), ("+", "-"), ("*", "/", "%")]


class _Ast:
    """A random expression tree, rendered with minimal parentheses."""

    @staticmethod
    def value(tree) -> int:
        if isinstance(tree, int):
            return tree
        if tree[0] == "neg":
            return -_Ast.value(tree[1])
        if tree[0] == "not":
            return int(not _Ast.value(tree[1]))
        op, left, right = tree
        x, y = _Ast.value(left), _Ast.value(right)
        if op in ("/", "%"):
            if y == 0:
                raise ZeroDivisionError
            return c_div(x, y) if op == "/" else c_mod(x, y)
        return {
            "+": lambda: x + y,
            "-": lambda: x - y,
            "*": lambda: x * y,
            "==": lambda: int(x == y),
            "!=": lambda: int(x != y),
            "<": lambda: int(x < y),
            ">": lambda: int(x > y),
            "<=": lambda: int(x <= y),
            ">=": lambda: int(x >= y),
            "&&": lambda: int(bool(x) and bool(y)),
            "||": lambda: int(bool(x) or bool(y)),
        }[op]()

    @staticmethod
    def render(tree) -> str:
        if isinstance(tree, int):
            return str(tree)
        if tree[0] in ("neg", "not"):
            return ("-" if tree[0] == "neg" else "!") + "(" + _Ast.render(tree[1]) + ")"
        op, left, right = tree
        return "(" + _Ast.render(left) + " " + op + " " + _Ast.render(right) + ")"


_OPS = [op for level in _LEVELS for op in level]
_trees = st.recursive(
    st.integers(min_value=0, max_value=10_000),
    lambda sub: st.one_of(
        st.tuples(st.sampled_from(["neg", "not"]), sub), st.tuples(st.sampled_from(_OPS), sub, sub)
    ),
    max_leaves=12,
)


@given(_trees)
def test_expressions_match_c_semantics(tree) -> None:
    text = _Ast.render(tree)
    try:
        expected = _Ast.value(tree)
    except ZeroDivisionError:
        with pytest.raises(Exception, match="division by zero"):
            evaluate(text)
        return
    assert evaluate(text) == expected  # small operands: no 64-bit wrap-around


_chains = st.lists(st.tuples(st.sampled_from(_OPS), st.integers(0, 50)), max_size=8)


@given(_chains, st.integers(0, 50))
def test_precedence_and_left_associativity(chain, first) -> None:
    """Unparenthesized chains follow pMARS's five levels, each left-associative."""
    text = str(first) + "".join(f" {op} {n}" for op, n in chain)
    # Reference: reduce the tightest level first, left to right.
    items: list = [first]
    for op, n in chain:
        items += [op, n]
    try:
        for level in reversed(_LEVELS):
            i = 1
            while i < len(items):
                if items[i] in level:
                    items[i - 1 : i + 2] = [_Ast.value((items[i], items[i - 1], items[i + 1]))]
                else:
                    i += 2
        expected = items[0]
    except ZeroDivisionError:
        with pytest.raises(Exception, match="division by zero"):
            evaluate(text)
        return
    assert evaluate(text) == expected


def test_expression_details() -> None:
    assert evaluate("-7 / 2") == -3
    assert evaluate("-7 % 2") == -1
    assert evaluate("3--2") == 5
    assert evaluate("!0+!5") == 1
    assert evaluate("0==1<2") == 1  # one comparison level, left to right (C would say 0)
    assert evaluate(str(1 << 63)) == (1 << 63) - 1  # saturates like sscanf
    assert evaluate(f"{(1 << 62)} * 4") == 0  # wraps like a 64-bit long
    for bad in ["", "1 +", "(1", "1)", "1 = 2", "1 & 2", "()", "1 2"]:
        with pytest.raises(Exception):  # noqa: B017 - ExpressionError, private
            evaluate(bad)


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(list("0123456789 +-*/%()!=<>&|abx")), max_size=40))
def test_random_expression_text_never_crashes(text) -> None:
    try:
        evaluate(text)
    except Exception as exc:
        assert type(exc).__name__ == "ExpressionError"
