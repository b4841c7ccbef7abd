"""Redcode value types shared by the assembler and the simulator: opcodes, modifiers, modes.

A :class:`Warrior` is a load image: what the assembler produces and the MARS loads. Its
instructions use the same ``(OP, MOD, AMODE, A, BMODE, B)`` shape as pMARS's load files and the
reference data in ``shared/corewar/reference/*-assembled.json``; fields are already reduced to
``[0, coresize)``.
"""

from __future__ import annotations

import attrs

#: Opcodes in the order the simulator numbers them (index = numeric code).
OPCODES: tuple[str, ...] = (
    "DAT",
    "MOV",
    "ADD",
    "SUB",
    "MUL",
    "DIV",
    "MOD",
    "JMP",
    "JMZ",
    "JMN",
    "DJN",
    "SPL",
    "SLT",
    "CMP",
    "SEQ",
    "SNE",
    "NOP",
    "LDP",
    "STP",
)
#: Modifiers in simulator order.
MODIFIERS: tuple[str, ...] = ("A", "B", "AB", "BA", "F", "X", "I")
#: Addressing modes in simulator order.
MODES: tuple[str, ...] = ("#", "$", "*", "@", "{", "<", "}", ">")

OPCODE_CODE = {name: code for code, name in enumerate(OPCODES)}
MODIFIER_CODE = {name: code for code, name in enumerate(MODIFIERS)}
MODE_CODE = {name: code for code, name in enumerate(MODES)}


@attrs.frozen
class Instruction:
    """One assembled instruction, fields reduced to ``[0, coresize)``.

    ``CMP`` is stored as ``SEQ`` (they are the same instruction in ICWS'94 and pMARS prints
    ``SEQ`` in load files).
    """

    opcode: str
    modifier: str
    a_mode: str
    a: int
    b_mode: str
    b: int

    def as_list(self) -> list:
        """The instruction as ``[OP, MOD, AMODE, A, BMODE, B]`` (the reference JSON shape)."""
        return [self.opcode, self.modifier, self.a_mode, self.a, self.b_mode, self.b]

    def __str__(self) -> str:
        return f"{self.opcode}.{self.modifier} {self.a_mode}{self.a}, {self.b_mode}{self.b}"


@attrs.frozen
class Warrior:
    """A load image: what one warrior puts into the core.

    Attributes:
        instructions: The instructions, loaded at consecutive addresses.
        start: Offset of the first instruction to execute (``ORG`` / ``END start``).
        name: ``;name`` of the source, or ``"Unknown"`` as pMARS prints it.
        author: ``;author`` of the source, or ``"Anonymous"`` as pMARS prints it.
        pin: The ``PIN`` value (p-space sharing id), or ``None``.
    """

    instructions: tuple[Instruction, ...]
    start: int = 0
    name: str = "Unknown"
    author: str = "Anonymous"
    pin: int | None = None

    def __len__(self) -> int:
        return len(self.instructions)

    def to_json(self) -> dict:
        """The shape of ``dei coreware assemble --json`` and the reference data."""
        return {
            "name": self.name,
            "author": self.author,
            "start": self.start,
            "instructions": [ins.as_list() for ins in self.instructions],
        }

    @classmethod
    def from_json(cls, data: dict) -> Warrior:
        """Builds a load image from the reference JSON shape (``name``/``author`` optional)."""
        return cls(
            instructions=tuple(Instruction(*row) for row in data["instructions"]),
            start=int(data.get("start", 0)),
            name=data.get("name", "Unknown"),
            author=data.get("author", "Anonymous"),
            pin=data.get("pin"),
        )
