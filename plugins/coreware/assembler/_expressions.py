"""Integer expression evaluator with pMARS's grammar and C ``long`` semantics.

Grammar, loosest first (every level left-associative, as pMARS's evaluator does it)::

    ||    &&    == != < > <= >= (one level)    + -    * / %

Unary ``-``, ``+`` and ``!`` bind to the operand right after them. A single letter that is not a
label is one of 26 registers (``a`` ... ``z``, case-insensitive, initially 0): ``x=expr``
assigns the rest of the (sub)expression to it. Arithmetic wraps at 64 bits like ``long`` on
Linux, division truncates toward zero and a zero divisor is an error.
"""

from __future__ import annotations

from ._lexer import SPACE

#: Binary operators and their precedence (higher binds tighter).
_PRECEDENCE = {
    "*": 5,
    "/": 5,
    "%": 5,
    "+": 4,
    "-": 4,
    "<": 3,
    ">": 3,
    "==": 3,
    "!=": 3,
    "<=": 3,
    ">=": 3,
    "&&": 2,
    "||": 1,
}

_LONG_MAX = (1 << 63) - 1
_LONG_MIN = -(1 << 63)
#: pMARS reads at most this many digits per number.
_MAX_DIGITS = 20
#: Deepest parenthesis / register-assignment nesting accepted (pMARS has no limit; no real
#: warrior comes close, and Python recursion must stay bounded).
MAX_DEPTH = 200


class ExpressionError(Exception):
    """The expression is malformed (``kind="syntax"``) or divides by zero (``"division"``)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _wrap(value: int) -> int:
    """Reduces to a signed 64-bit integer (the C ``long`` the evaluator works in)."""
    return ((value - _LONG_MIN) & 0xFFFFFFFFFFFFFFFF) + _LONG_MIN


def c_div(x: int, y: int) -> int:
    """C division: truncates toward zero."""
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def c_mod(x: int, y: int) -> int:
    """C remainder: takes the sign of the dividend."""
    return x - c_div(x, y) * y


def _apply(op: str, x: int, y: int) -> int:
    if op == "+":
        return _wrap(x + y)
    if op == "-":
        return _wrap(x - y)
    if op == "*":
        return _wrap(x * y)
    if op in ("/", "%"):
        if y == 0:
            raise ExpressionError("division", "division by zero")
        if x == _LONG_MIN and y == -1:
            # x86 traps on this one (pMARS would crash): refuse it.
            raise ExpressionError("syntax", "arithmetic overflow")
        return c_div(x, y) if op == "/" else c_mod(x, y)
    if op == "&&":
        return int(bool(x) and bool(y))
    if op == "||":
        return int(bool(x) or bool(y))
    if op == "==":
        return int(x == y)
    if op == "!=":
        return int(x != y)
    if op == "<":
        return int(x < y)
    if op == ">":
        return int(x > y)
    if op == "<=":
        return int(x <= y)
    return int(x >= y)  # ">="


class _Parser:
    """Recursive-descent / precedence-climbing parser over one expression string."""

    __slots__ = ("text", "pos", "registers", "depth")

    def __init__(self, text: str, registers: list[int]) -> None:
        self.text = text
        self.pos = 0
        self.registers = registers
        self.depth = 0

    def skip_space(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in SPACE:
            pos += 1
        self.pos = pos

    def at_terminal(self) -> bool:
        """End of text or ``)``: where pMARS stops an (sub)expression."""
        return self.pos >= len(self.text) or self.text[self.pos] == ")"

    def read_operator(self) -> str:
        """Consumes and returns a binary operator; anything else is a syntax error."""
        text, pos = self.text, self.pos
        two = text[pos : pos + 2]
        if two in ("&&", "||", "==", "!=", "<=", ">="):
            self.pos = pos + 2
            return two
        one = text[pos]
        if one in "+-*/%<>":
            self.pos = pos + 1
            return one
        raise ExpressionError("syntax", f"bad operator {one!r}")

    def expression(self, min_prec: int) -> int:
        """Parses operands joined by operators of precedence ``>= min_prec``."""
        value = self.operand()
        while True:
            self.skip_space()
            if self.at_terminal():
                return value
            start = self.pos
            op = self.read_operator()
            prec = _PRECEDENCE[op]
            if prec < min_prec:
                self.pos = start  # leave it to the caller's lower level
                return value
            rhs = self.expression(prec + 1)
            value = _apply(op, value, rhs)

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError("syntax", "expression nested too deeply")

    def operand(self) -> int:
        """A number, register, parenthesized expression, or unary operators applied to one."""
        unary: list[str] = []
        text = self.text
        while True:
            self.skip_space()
            ch = text[self.pos] if self.pos < len(text) else ""
            if ch in ("-", "!", "+") and ch:
                unary.append(ch)
                self.pos += 1
                continue
            break
        if ch == "(":
            self.pos += 1
            self.enter()
            value = self.expression(0)
            self.depth -= 1
            if self.pos >= len(text) or text[self.pos] != ")":
                raise ExpressionError("syntax", "missing ')'")
            self.pos += 1
        elif ch.isascii() and ch.isalpha():
            value = self.register(ord(ch.upper()) - ord("A"))
        else:
            start = self.pos
            end = start
            while end < len(text) and "0" <= text[end] <= "9" and end - start < _MAX_DIGITS:
                end += 1
            if end == start:
                raise ExpressionError("syntax", "number expected")
            value = min(int(text[start:end]), _LONG_MAX)  # sscanf("%ld") saturates
            self.pos = end
        for op in reversed(unary):
            if op == "-":
                value = _wrap(-value)
            elif op == "!":
                value = 0 if value else 1
        return value

    def register(self, index: int) -> int:
        """Reads register ``index`` or, for ``x=expr``, assigns the rest of the expression."""
        self.pos += 1
        self.skip_space()
        text, pos = self.text, self.pos
        if pos < len(text) and text[pos] == "=" and text[pos + 1 : pos + 2] != "=":
            self.pos = pos + 1
            self.enter()
            value = self.expression(0)
            self.depth -= 1
            self.registers[index] = value
            return value
        return self.registers[index]


def evaluate(text: str, registers: list[int] | None = None) -> int:
    """Evaluates one expression.

    Args:
        text: The expression (white space allowed between tokens).
        registers: The 26 register values, updated by assignments; a fresh zeroed set if
            omitted. pMARS keeps them for the whole warrior.

    Returns:
        The value as a signed 64-bit integer.

    Raises:
        ExpressionError: Malformed expression or division by zero.
    """
    parser = _Parser(text, registers if registers is not None else [0] * 26)
    value = parser.expression(0)
    parser.skip_space()
    if parser.pos != len(text):
        raise ExpressionError("syntax", "unexpected text after expression")
    return value
