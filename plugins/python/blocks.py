"""Evolve blocks: the marked region of a program that search changes, and replies that fill it.

An OpenEvolve program marks what may evolve between a line ``# EVOLVE-BLOCK-START`` and a line
``# EVOLVE-BLOCK-END``; everything else (imports, the harness, helper code) is the *scaffold*,
kept as the task wrote it. A reply replaces the block only: a model is shown the block, and
whatever it answers (a fenced block, bare code, or a whole program with the markers, of which
only the marked part is taken) goes between the scaffold's markers. So the scaffold can never
be broken or rewritten by a reply.

Nothing here runs a program: parsing is :func:`ast.parse` of the assembled text.
"""

from __future__ import annotations

import ast
import re
import textwrap

import attrs

from dei_framework.contract.errors import InvalidProgram

#: The markers, as OpenEvolve writes them (a line whose stripped text starts with one).
START = "# EVOLVE-BLOCK-START"
END = "# EVOLVE-BLOCK-END"
#: Longest reply accepted: a block of a few thousand lines. A longer one is a runaway model's.
MAX_CHARS = 200_000

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)


@attrs.frozen(kw_only=True)
class Scaffold:
    """A program cut at its evolve block.

    Attributes:
        head: Everything before the block, up to and including the START marker's line.
        block: The evolved code between the markers (each line ends with a newline).
        tail: Everything from the END marker's line on.
        indent: The block's indentation (that of its first non-blank line), given back to a
            reply written flush left.
    """

    head: str
    block: str
    tail: str
    indent: str = ""

    @property
    def head_lines(self) -> int:
        """Lines before the block's first line."""
        return self.head.count("\n")

    def join(self, block: str) -> str:
        """The program with ``block`` in place of the evolved code."""
        if block and not block.endswith("\n"):
            block += "\n"
        return self.head + block + self.tail


def split(text: str) -> Scaffold:
    """Cuts ``text`` at its evolve block (a program without markers is all block).

    Raises:
        InvalidProgram: One marker without the other, END before START, or more than one
            block (the message names the line).
    """
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip().startswith(START)]
    ends = [i for i, line in enumerate(lines) if line.strip().startswith(END)]
    if not starts and not ends:
        return Scaffold(head="", block=text, tail="", indent=_indent(text))
    if len(starts) != 1 or len(ends) != 1:
        extra = (starts[1:] or ends[1:] or starts or ends)[0]
        if not starts or not ends:
            missing = END if starts else START
            raise InvalidProgram(
                f"line {extra + 1}: {missing} is missing (one evolve block, between both markers)"
            )
        raise InvalidProgram(f"line {extra + 1}: more than one evolve block (DEI evolves one)")
    start, end = starts[0], ends[0]
    if end < start:
        raise InvalidProgram(f"line {end + 1}: {END} comes before {START}")
    head = "".join(lines[: start + 1])
    if not head.endswith("\n"):
        head += "\n"
    block = "".join(lines[start + 1 : end])
    return Scaffold(head=head, block=block, tail="".join(lines[end:]), indent=_indent(block))


def _indent(code: str) -> str:
    for line in code.splitlines():
        if line.strip():
            return line[: len(line) - len(line.lstrip())]
    return ""


def reply_code(reply: str) -> str:
    """The code in an operator reply: its first fenced block (a ``python`` one first), or the
    reply itself when it has no fence."""
    fences = _FENCE.findall(reply)
    for language, code in fences:
        if language.lower() in ("python", "py", "python3"):
            return code
    if fences:
        return fences[0][1]
    return reply


def reply_block(reply: str, scaffold: Scaffold) -> str:
    """The block a reply gives, indented as the scaffold's block is.

    A reply holding a whole program with the markers gives its marked part; otherwise the
    reply's code is the block.

    Raises:
        InvalidProgram: The reply is too long, its markers are broken, or its block is empty.
    """
    if len(reply) > MAX_CHARS:
        raise InvalidProgram(
            f"line 1: the reply has {len(reply)} characters; at most {MAX_CHARS} are read"
        )
    code = reply_code(reply)
    if START not in code and START in reply:  # a whole program whose text has a fence in it
        code = reply
    if START in code or END in code:
        code = split(code).block
    if not code.strip():
        raise InvalidProgram("line 1: the evolve block is empty (answer with its new code)")
    code = textwrap.dedent(code.expandtabs(4)).strip("\n") + "\n"
    if scaffold.indent:
        code = textwrap.indent(code, scaffold.indent)
    return code


def check_syntax(text: str, scaffold: Scaffold) -> None:
    """Compiles ``text`` to an AST (never runs it).

    Raises:
        InvalidProgram: A syntax error, with the program's line number and, when it falls in
            the block, the block's.
    """
    try:
        ast.parse(text)
    except SyntaxError as exc:
        line = exc.lineno or 1
        where = f"line {line}"
        block_line = line - scaffold.head_lines
        if scaffold.head and 1 <= block_line <= scaffold.block.count("\n"):
            where += f" (line {block_line} of the evolve block)"
        raise InvalidProgram(f"{where}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting
        raise InvalidProgram(
            f"line 1: not a Python program ({type(exc).__name__}: {exc})"
        ) from None
