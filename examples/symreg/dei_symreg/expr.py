"""Arithmetic expressions: a bounded tokenizer, a recursive-descent parser, numpy evaluation.

This is the whole trust boundary of the symbolic-regression domain: operator output (an LLM's
reply, a peer's champion) is text from outside, so it is never handed to ``eval``. The parser
accepts only the grammar below, rejects input beyond fixed limits *before* it could exhaust the
stack or the memory, and the evaluator maps every numeric accident (overflow, ``nan``, division
by zero) to non-finite values the caller scores, never to an exception or a warning.

Grammar (``^`` and ``**`` both mean power; power binds tighter than unary minus and is
right-associative, as in Python: ``-x^2`` is ``-(x^2)``, ``2^3^2`` is ``2^(3^2)``)::

    expr  := term (("+" | "-") term)*
    term  := unary (("*" | "/") unary)*
    unary := ("-" | "+") unary | power
    power := atom (("^" | "**") unary)?
    atom  := NUMBER | "pi" | VARIABLE | FUNCTION "(" expr ")" | "(" expr ")"

Example:
    >>> tree = parse_expression("x0^2 * sin(x1) + 0.5*x0", variables=("x0", "x1"))
    >>> to_text(tree)
    'x0^2 * sin(x1) + 0.5 * x0'
    >>> size(tree), nonlinearity(tree)
    (10, 1)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence

import attrs
import numpy as np

from dei_framework.contract.errors import InvalidProgram

#: The unary functions an expression may call, with their numpy implementation.
FUNCTIONS: Mapping[str, np.ufunc] = {
    "sin": np.sin,
    "cos": np.cos,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "abs": np.abs,
    "tanh": np.tanh,
}
#: Named constants.
CONSTANTS: Mapping[str, float] = {"pi": math.pi}
#: Binary operators in canonical spelling.
OPERATORS = ("+", "-", "*", "/", "^")


@attrs.frozen(kw_only=True)
class Limits:
    """Bounds on an expression, checked while parsing (so hostile input fails fast).

    Attributes:
        max_chars: Longest expression text accepted.
        max_nodes: Most AST nodes (numbers, variables, operators, calls).
        max_depth: Deepest nesting (parentheses, unary minus, calls, operators).
    """

    max_chars: int = 1000
    max_nodes: int = 100
    max_depth: int = 24


# --- the tree -------------------------------------------------------------------------------------


@attrs.frozen
class Num:
    """A numeric constant (always finite; the parser never makes negative ones)."""

    value: float


@attrs.frozen
class Var:
    """An input variable, by name."""

    name: str


@attrs.frozen
class Neg:
    """Unary minus."""

    arg: Node


@attrs.frozen
class Bin:
    """A binary operation; ``op`` is one of :data:`OPERATORS`."""

    op: str
    left: Node
    right: Node


@attrs.frozen
class Call:
    """A call of one of :data:`FUNCTIONS`."""

    fn: str
    arg: Node


Node = Num | Var | Neg | Bin | Call


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-expressions of ``node``."""
    if isinstance(node, Bin):
        return (node.left, node.right)
    if isinstance(node, Neg | Call):
        return (node.arg,)
    return ()


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree, parents before children."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


def size(node: Node) -> int:
    """Number of nodes (the ``size`` descriptor)."""
    return sum(1 for _ in walk(node))


def depth(node: Node) -> int:
    """Height of the tree (a lone variable has depth 1); iterative, so any tree is safe."""
    deepest = 0
    stack = [(node, 1)]
    while stack:
        current, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children(current))
    return deepest


def _is_constant(node: Node) -> bool:
    return not any(isinstance(n, Var) for n in walk(node))


def nonlinearity(node: Node) -> int:
    """Number of non-polynomial operations (the ``nonlinearity`` descriptor).

    Counts function calls, divisions by a sub-expression that contains a variable, and powers
    whose exponent is not a non-negative integer constant. A polynomial scores 0.
    """
    count = 0
    for n in walk(node):
        if isinstance(n, Call):
            count += 1
        elif isinstance(n, Bin) and n.op == "/" and not _is_constant(n.right):
            count += 1
        elif isinstance(n, Bin) and n.op == "^":
            exponent = n.right
            if not (isinstance(exponent, Num) and float(exponent.value).is_integer()):
                count += 1
    return count


def constants(node: Node) -> int:
    """Number of numeric constants (an optional descriptor)."""
    return sum(1 for n in walk(node) if isinstance(n, Num))


def const(value: float) -> Node:
    """A constant node for any finite ``value`` (negative values become ``Neg(Num)``)."""
    return Neg(Num(-value)) if value < 0 else Num(value)


# --- tokenizer ------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"(?:"
    r"(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
    r"|(?P<op>\*\*|[-+*/^(),])"
    r")"
)
#: Longest numeric literal accepted (a thousand-digit number is an attack, not a constant).
_MAX_NUMBER_CHARS = 40


@attrs.frozen
class Token:
    kind: str  # "num", "name", "op" or "end"
    text: str
    column: int  # 1-based, for error messages


def tokenize(text: str) -> list[Token]:
    """Splits ``text`` into tokens.

    Raises:
        InvalidProgram: a character outside the grammar, or an over-long number.
    """
    tokens: list[Token] = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        while text[position].isspace():
            position += 1
        match = _TOKEN.match(text, position)
        if match is None or match.lastgroup is None:
            raise InvalidProgram(f"column {position + 1}: unexpected character {text[position]!r}")
        kind = match.lastgroup
        value = match.group(kind)
        if kind == "num" and len(value) > _MAX_NUMBER_CHARS:
            raise InvalidProgram(f"column {match.start(kind) + 1}: numeric literal too long")
        tokens.append(Token(kind, "^" if value == "**" else value, match.start(kind) + 1))
        position = match.end()
    tokens.append(Token("end", "", len(text) + 1))
    return tokens


# --- parser ---------------------------------------------------------------------------------------


class _Parser:
    """Recursive descent over the token list; depth and node counts are bounded as it goes."""

    def __init__(self, tokens: list[Token], variables: Sequence[str], limits: Limits) -> None:
        self.tokens = tokens
        self.index = 0
        self.variables = frozenset(variables)
        self.limits = limits
        self.depth = 0
        self.nodes = 0

    @property
    def current(self) -> Token:
        return self.tokens[self.index]

    def fail(self, message: str, token: Token | None = None) -> InvalidProgram:
        token = token or self.current
        found = "end of input" if token.kind == "end" else repr(token.text)
        return InvalidProgram(f"column {token.column}: {message}, found {found}")

    def take(self, text: str) -> bool:
        if self.current.kind == "op" and self.current.text == text:
            self.index += 1
            return True
        return False

    def node(self, made: Node) -> Node:
        self.nodes += 1
        if self.nodes > self.limits.max_nodes:
            raise InvalidProgram(
                f"expression has more than {self.limits.max_nodes} nodes; write a shorter one"
            )
        return made

    def enter(self) -> None:
        # Counting depth here, not catching RecursionError, keeps hostile nesting cheap and
        # the interpreter's stack untouched.
        self.depth += 1
        if self.depth > self.limits.max_depth:
            raise InvalidProgram(
                f"column {self.current.column}: expression nested deeper than "
                f"{self.limits.max_depth} levels"
            )

    def leave(self) -> None:
        self.depth -= 1

    def expr(self) -> Node:
        self.enter()
        left = self.term()
        while self.current.kind == "op" and self.current.text in "+-":
            op = self.current.text
            self.index += 1
            left = self.node(Bin(op, left, self.term()))
        self.leave()
        return left

    def term(self) -> Node:
        left = self.unary()
        while self.current.kind == "op" and self.current.text in "*/":
            op = self.current.text
            self.index += 1
            left = self.node(Bin(op, left, self.unary()))
        return left

    def unary(self) -> Node:
        if self.take("+"):
            self.enter()
            result = self.unary()
            self.leave()
            return result
        if self.take("-"):
            self.enter()
            result = self.node(Neg(self.unary()))
            self.leave()
            return result
        return self.power()

    def power(self) -> Node:
        base = self.atom()
        if self.take("^"):
            self.enter()
            exponent = self.unary()
            self.leave()
            return self.node(Bin("^", base, exponent))
        return base

    def atom(self) -> Node:
        token = self.current
        if token.kind == "num":
            self.index += 1
            value = float(token.text)
            if not math.isfinite(value):
                raise InvalidProgram(f"column {token.column}: constant {token.text} overflows")
            return self.node(Num(value))
        if token.kind == "name":
            self.index += 1
            if token.text in FUNCTIONS:
                if not self.take("("):
                    raise self.fail(f"expected '(' after {token.text}")
                arg = self.expr()
                if not self.take(")"):
                    raise self.fail(f"expected ')' closing {token.text}(")
                return self.node(Call(token.text, arg))
            if token.text in self.variables:
                return self.node(Var(token.text))
            if token.text in CONSTANTS:
                return self.node(Num(CONSTANTS[token.text]))
            allowed = ", ".join(sorted(self.variables))
            functions = ", ".join(FUNCTIONS)
            raise InvalidProgram(
                f"column {token.column}: unknown name {token.text!r}; variables: {allowed}; "
                f"functions: {functions}"
            )
        if self.take("("):
            inner = self.expr()
            if not self.take(")"):
                raise self.fail("expected ')'")
            return inner
        raise self.fail("expected a number, variable, function or '('")


def parse_expression(text: str, *, variables: Sequence[str], limits: Limits | None = None) -> Node:
    """Parses one expression.

    Args:
        text: The expression, e.g. ``"x0^2 * sin(x1)"``.
        variables: The variable names it may use.
        limits: Size bounds (default :class:`Limits`).

    Returns:
        The tree.

    Raises:
        InvalidProgram: the text is empty, too long, too large, too deep or not in the grammar;
            the message names the column.
    """
    limits = limits or Limits()
    if len(text) > limits.max_chars:
        raise InvalidProgram(
            f"expression is {len(text)} characters long; the limit is {limits.max_chars}"
        )
    if not text.strip():
        raise InvalidProgram("empty expression")
    parser = _Parser(tokenize(text), variables, limits)
    tree = parser.expr()
    if parser.current.kind != "end":
        raise parser.fail("expected an operator or the end of the expression")
    if depth(tree) > limits.max_depth:  # long operator chains nest without parentheses
        raise InvalidProgram(f"expression nested deeper than {limits.max_depth} levels")
    return tree


# --- printing -------------------------------------------------------------------------------------

# Binding strength of each form; a child printed where a stronger form is required gets
# parentheses. The choices mirror the grammar exactly, so parse(to_text(t)) == t.
_ADD, _MUL, _UNARY, _POW, _ATOM = 1, 2, 3, 4, 5


def _format_number(value: float) -> str:
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _strength(node: Node) -> int:
    if isinstance(node, Bin):
        return {"+": _ADD, "-": _ADD, "*": _MUL, "/": _MUL, "^": _POW}[node.op]
    if isinstance(node, Neg):
        return _UNARY
    if isinstance(node, Num) and node.value < 0:
        return _UNARY
    return _ATOM


def to_text(node: Node) -> str:
    """The canonical text of a tree (spaces around ``+ - * /``, none around ``^``)."""

    def show(child: Node, required: int) -> str:
        text = to_text(child)
        return f"({text})" if _strength(child) < required else text

    if isinstance(node, Num):
        return _format_number(node.value)
    if isinstance(node, Var):
        return node.name
    if isinstance(node, Call):
        return f"{node.fn}({to_text(node.arg)})"
    if isinstance(node, Neg):
        return "-" + show(node.arg, _UNARY)
    if node.op == "^":
        return f"{show(node.left, _ATOM)}^{show(node.right, _UNARY)}"
    level = _strength(node)
    return f"{show(node.left, level)} {node.op} {show(node.right, level + 1)}"


# --- evaluation -----------------------------------------------------------------------------------


def evaluate(node: Node, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The expression's value at every input point, vectorised.

    Numeric accidents do not raise and do not warn: they come back as ``inf`` or ``nan`` in
    the result, for the caller to score. The recursion is bounded by the parser's depth limit.

    Args:
        node: The tree.
        inputs: One float array per variable name, all of the same shape.

    Returns:
        A float array of that shape.
    """
    shape = np.shape(next(iter(inputs.values())))
    with np.errstate(all="ignore"):
        return np.broadcast_to(_evaluate(node, inputs), shape).astype(float)


def _evaluate(node: Node, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    if isinstance(node, Num):
        return np.float64(node.value)
    if isinstance(node, Var):
        return inputs[node.name]
    if isinstance(node, Neg):
        return -_evaluate(node.arg, inputs)
    if isinstance(node, Call):
        return FUNCTIONS[node.fn](_evaluate(node.arg, inputs))
    left = _evaluate(node.left, inputs)
    right = _evaluate(node.right, inputs)
    if node.op == "+":
        return left + right
    if node.op == "-":
        return left - right
    if node.op == "*":
        return left * right
    if node.op == "/":
        return np.divide(left, right)
    return np.power(left, right)
