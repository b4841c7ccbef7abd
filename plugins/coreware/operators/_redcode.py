"""Shared helpers of the offline operators: load images to editable lines and back to text."""

from __future__ import annotations

import attrs
from dei_coreware.assembler import AssemblerSettings, AssemblyError, assemble
from dei_coreware.extract import extract
from dei_coreware.redcode import MODES, Warrior

from dei_framework.contract.errors import InvalidProgram

#: Opcodes the operators write (no p-space), with weights of a "sensible" random instruction:
#: what human warriors use most.
OPCODE_WEIGHTS = {
    "MOV": 20,
    "ADD": 10,
    "SUB": 4,
    "JMP": 9,
    "JMZ": 5,
    "JMN": 5,
    "DJN": 7,
    "SPL": 10,
    "DAT": 8,
    "SEQ": 4,
    "SNE": 4,
    "SLT": 2,
    "MUL": 1,
    "DIV": 1,
    "MOD": 1,
    "NOP": 1,
}
MODIFIERS = ("A", "B", "AB", "BA", "F", "X", "I")
MODE_WEIGHTS = {"$": 30, "#": 20, "@": 12, "*": 6, "<": 6, ">": 10, "{": 4, "}": 8}
#: Step sizes warriors use (bomb and scan distances), besides small offsets.
STEPS = (
    4,
    5,
    8,
    10,
    14,
    19,
    95,
    98,
    101,
    157,
    173,
    197,
    233,
    379,
    653,
    1001,
    1471,
    1873,
    2365,
    2667,
    3039,
    3044,
    3045,
    3359,
    3364,
    3607,
    3709,
)

assert set(MODE_WEIGHTS) == set(MODES)


@attrs.frozen
class Line:
    """One editable instruction with signed (readable) fields."""

    opcode: str
    modifier: str
    a_mode: str
    a: int
    b_mode: str
    b: int

    def render(self) -> str:
        op = f"{self.opcode}.{self.modifier}"
        return f"        {op:<7} {self.a_mode}{self.a}, {self.b_mode}{self.b}"


def signed(value: int, coresize: int) -> int:
    """A field in ``[0, coresize)`` as the nearest signed offset (``7999`` -> ``-1``)."""
    value %= coresize
    return value - coresize if value > coresize // 2 else value


def to_lines(warrior: Warrior, coresize: int) -> list[Line]:
    return [
        Line(i.opcode, i.modifier, i.a_mode, signed(i.a, coresize), i.b_mode, signed(i.b, coresize))
        for i in warrior.instructions
    ]


def render(lines: list[Line], start: int, *, name: str, strategy: str) -> str:
    """Redcode source of numeric lines, with a header and ``ORG``/``END``."""
    start = min(max(start, 0), max(len(lines) - 1, 0))
    body = [
        ";redcode-94",
        f";name {name}",
        ";author DEI gp/templates operators",
        f";strategy {strategy}",
        f"        ORG     {start}",
    ]
    body += [line.render() for line in lines]
    body.append("        END")
    return "\n".join(body) + "\n"


def parse_parent(text: str, settings: AssemblerSettings) -> Warrior | None:
    """The parent's load image, or ``None`` if it does not assemble (operators then write anew)."""
    try:
        return extract(text, settings=settings).warrior
    except (InvalidProgram, AssemblyError):
        return None


def assembles(text: str, settings: AssemblerSettings) -> bool:
    try:
        assemble(text, settings=settings)
    except AssemblyError:
        return False
    return True
