"""Pass 2 of the assembler (instruction lines to a load image) and the public entry points.

Each instruction line from pass 1 is parsed by pMARS's state machine: opcode, optional
``.modifier``, optional mode and A expression, ``,``, optional mode and B expression. Names
still present (forward references, EQUs used before their definition) are substituted here.
Missing parts get pMARS's defaults (one-operand ``DAT`` moves its operand to B, ``JMP``/``SPL``/
``NOP`` get ``$0`` as B, modes default to ``$``, modifiers follow the ICWS'88-to-'94 table), then
the expressions are evaluated and reduced modulo the core size.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..redcode import Instruction, Warrior
from ._errors import AssemblyError
from ._expressions import ExpressionError, evaluate
from ._lexer import ADDR, CHAR, EXPR, FSEP, MODF, NONE, NUMB, next_token
from ._preprocess import OPCODES, Expander, read_source
from ._settings import AssemblerSettings
from ._symbols import TEXT, Line, Symbol, SymbolTable

#: Largest source accepted, in characters (real warriors are a few KiB).
MAX_SOURCE = 1 << 20
#: pMARS never loads more than this many instructions, whatever ``maxlength`` says.
MAX_INSTRUCTIONS = 1000
#: Most substitutions pass 2 makes in one line.
_MAX_SUBSTITUTIONS = 10_000

_MODIFIERS = frozenset(("A", "B", "AB", "BA", "F", "X", "I"))

# States of the operand parser.
_OP, _MOD_OR_A, _MODIFIER, _A_START, _A_EXPR, _B_START, _B_EXPR = range(7)


def _default_modifier(opcode: str, a_mode: str, b_mode: str) -> str:
    """The modifier pMARS picks when none is written (the ICWS'94 table for '88 code)."""
    if opcode in ("DAT", "NOP"):
        return "F"
    if opcode in ("MOV", "CMP", "SEQ", "SNE"):
        return "AB" if a_mode == "#" else "B" if b_mode == "#" else "I"
    if opcode in ("ADD", "SUB", "MUL", "DIV", "MOD"):
        return "AB" if a_mode == "#" else "B" if b_mode == "#" else "F"
    if opcode in ("SLT", "LDP", "STP"):
        return "AB" if a_mode == "#" else "B"
    return "B"


class _Line2:
    """Parses one instruction line (pMARS's ``automaton`` and ``dfashell``)."""

    def __init__(self, table: SymbolTable, line: int, loc: int) -> None:
        self.table = table
        self.line = line
        self.loc = loc

    def fail(self, message: str) -> AssemblyError:
        return AssemblyError(message, self.loc)

    def parse(self, text: str) -> tuple[str, str | None, str, str, str, str]:
        """Returns ``(opcode, modifier or None, a_mode, a_expr, b_mode, b_expr)``."""
        frames: list[tuple[str, int, Symbol | None]] = []
        cur_text, pos, cur_sym = text, 0, None
        state = _OP
        complete = False
        opcode = ""
        modifier: str | None = None
        a_mode = b_mode = "$"
        a_expr: list[str] = []
        b_expr: list[str] = []
        pushed_back = False
        kind = NONE
        token = ""
        substitutions = 0
        lengths = [0, 0]
        while True:
            if not pushed_back:
                kind, token, pos = next_token(cur_text, pos)
                if kind == NONE and frames:
                    # End of a substituted text: resume the enclosing one in the same state.
                    if cur_sym is not None:
                        cur_sym.visit = False
                    cur_text, pos, cur_sym = frames.pop()
                    continue
            pushed_back = False
            if kind == NONE:
                break
            if state == _OP:
                upper = token.upper()
                if kind != CHAR or not (upper in OPCODES or upper in ("ORG", "END", "PIN")):
                    raise self.fail("opcode expected")
                opcode = upper
                state = _MOD_OR_A if upper in OPCODES else _B_EXPR
                complete = False
                continue
            if state == _MODIFIER:
                complete = False
                upper = token.upper()
                if kind != CHAR or upper not in _MODIFIERS:
                    raise self.fail("modifier expected")
                modifier = upper
                state = _A_START
                continue
            if kind == CHAR:
                symbol = self.table.lookup(token)
                if symbol is not None:
                    if symbol.visit:
                        raise self.fail(f"recursive reference to {token!r}")
                    substitutions += 1
                    if substitutions > _MAX_SUBSTITUTIONS:
                        raise self.fail("too many substitutions")
                    if symbol.kind == TEXT:
                        replacement = symbol.lines.text
                    elif state == _B_EXPR and opcode not in OPCODES:
                        replacement = str(symbol.value)
                    else:
                        replacement = str(symbol.value - self.line)
                    if state in (_MOD_OR_A, _A_START, _B_START):
                        complete = False
                    symbol.visit = True
                    frames.append((cur_text, pos, cur_sym))
                    cur_text, pos, cur_sym = replacement, 0, symbol
                    continue
                if len(token) > 1:
                    raise self.fail(f"undefined symbol {token!r}")
                # A single letter is a register of the expression evaluator.
            if state in (_MOD_OR_A, _A_START, _B_START):
                complete = False
                if state == _MOD_OR_A and kind == MODF:
                    state = _MODIFIER
                elif kind == ADDR:
                    if state == _B_START:
                        b_mode = token
                        state = _B_EXPR
                    else:
                        a_mode = token
                        state = _A_EXPR
                elif kind in (NUMB, EXPR, CHAR):
                    state = _B_EXPR if state == _B_START else _A_EXPR
                    pushed_back = True
                elif state == _MOD_OR_A:
                    raise self.fail(f"misplaced {token!r}")
                else:
                    raise self.fail(f"{'B' if state == _B_START else 'A'}-field expected")
                continue
            # _A_EXPR or _B_EXPR
            if kind == FSEP and state == _A_EXPR:
                state = _B_START
                complete = False  # pMARS resets it on entering every operand-start state
                continue
            if kind == ADDR and token not in "<>*":
                raise self.fail(f"misplaced {token!r}")
            if kind == NUMB:
                token += " "
            elif kind not in (ADDR, EXPR, CHAR):
                raise self.fail(f"misplaced {token!r}")
            side = 0 if state == _A_EXPR else 1
            lengths[side] += len(token)
            if lengths[side] >= 8000:
                raise self.fail("expression too long")
            (a_expr if side == 0 else b_expr).append(token)
            complete = True
        if opcode in OPCODES and not complete:
            raise self.fail(f"syntax error in {opcode}")
        return opcode, modifier, a_mode, "".join(a_expr), b_mode, "".join(b_expr)


def _evaluate(text: str, registers: list[int], loc: int) -> int:
    try:
        return evaluate(text or "0", registers)
    except ExpressionError as exc:
        raise AssemblyError(str(exc), loc) from None


def _predefined(settings: AssemblerSettings) -> dict[str, int]:
    return {
        "CORESIZE": settings.coresize,
        "MAXPROCESSES": settings.maxprocesses,
        "MAXCYCLES": settings.maxcycles,
        "MAXLENGTH": settings.maxlength,
        "MINDISTANCE": settings.mindistance,
        "VERSION": 94,
        "WARRIORS": settings.warriors,
        "ROUNDS": settings.rounds,
        "PSPACESIZE": settings.effective_pspacesize,
    }


def _assemble(source: str, settings: AssemblerSettings) -> Warrior:
    if len(source) > MAX_SOURCE:
        raise AssemblyError(f"source larger than {MAX_SOURCE} characters")
    if "\0" in source:
        line = source.count("\n", 0, source.index("\0")) + 1
        raise AssemblyError("NUL character in source", line)
    first, name, author = read_source(source)
    table = SymbolTable()
    for key, value in _predefined(settings).items():
        # pMARS defines them as EQU texts holding the (unsigned) number.
        table.add(Symbol(TEXT, [key], lines=Line(str(value % (1 << 32)), 0)))
    expander = Expander(table, min(settings.maxlength, MAX_INSTRUCTIONS))
    # pMARS evaluates its score formula "(W*W-1)/S" before assembling, which leaves the
    # expression registers W and S holding the number of warriors.
    expander.registers[ord("W") - ord("A")] = settings.warriors
    expander.registers[ord("S") - ord("A")] = settings.warriors
    expander.run(first)
    if expander.line == 0:
        raise AssemblyError("no instructions")

    coresize = settings.coresize
    registers = expander.registers
    instructions: list[Instruction] = []
    start: int | None = None
    pin: int | None = None
    for text, loc in expander.output:
        parser = _Line2(table, len(instructions), loc)
        opcode, modifier, a_mode, a_expr, b_mode, b_expr = parser.parse(text)
        if opcode not in OPCODES:
            value = _evaluate(b_expr, registers, loc)
            if opcode == "ORG":
                start = value % coresize
            elif opcode == "PIN":
                pin = value
            elif value and not start:
                # END's operand counts unless ORG already set a non-zero start.
                start = value % coresize
            continue
        if not b_expr:
            if opcode == "DAT":
                b_mode, b_expr = a_mode, a_expr
                a_mode, a_expr = "#", "0"
            elif opcode in ("JMP", "SPL", "NOP"):
                b_mode, b_expr = "$", "0"
            else:
                raise AssemblyError(f"{opcode} needs two operands", loc)
        if modifier is None:
            modifier = _default_modifier(opcode, a_mode, b_mode)
        a = _evaluate(a_expr, registers, loc) % coresize
        b = _evaluate(b_expr, registers, loc) % coresize
        instructions.append(Instruction(opcode, modifier, a_mode, a, b_mode, b))
    return Warrior(tuple(instructions), start=start or 0, name=name, author=author, pin=pin)


def assemble(source: str, *, settings: AssemblerSettings | None = None) -> Warrior:
    """Assembles Redcode source the way pMARS 0.9.4 does.

    Args:
        source: The warrior's source text.
        settings: MARS parameters (predefined constants, core size, length limit); the '94
            hill settings if omitted.

    Returns:
        The load image, fields reduced to ``[0, coresize)``.

    Raises:
        AssemblyError: pMARS would reject the source, or it exceeds a safety limit.
    """
    settings = settings if settings is not None else AssemblerSettings()
    try:
        return _assemble(source, settings)
    except AssemblyError:
        raise
    except (RecursionError, MemoryError) as exc:
        raise AssemblyError(f"source too complex: {type(exc).__name__}") from None
    except Exception as exc:  # a bug must still surface as a rejection, not a crash
        raise AssemblyError(f"internal assembler error: {exc!r}") from exc


def assemble_file(
    path: str | os.PathLike[str], *, settings: AssemblerSettings | None = None
) -> Warrior:
    """Assembles a Redcode file (read as Latin-1, so any byte sequence is accepted).

    Raises:
        AssemblyError: As :func:`assemble`, or the file is larger than the source limit.
        OSError: The file cannot be read.
    """
    with Path(path).open("rb") as handle:
        data = handle.read(MAX_SOURCE + 1)
    return assemble(data.decode("latin-1"), settings=settings)
