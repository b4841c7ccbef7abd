"""The symbol table shared by both passes: labels, EQU texts and FOR counters."""

from __future__ import annotations

import attrs

#: ``EQU`` text (also the predefined constants, which pMARS defines as EQU texts).
TEXT = 0
#: ``FOR`` loop counter (only while its loop is being expanded).
STACK = 1
#: Instruction label.
LABEL = 2


@attrs.define(eq=False, slots=True)
class Line:
    """One source line (after comment removal) in a singly linked list, as pMARS walks them.

    Attributes:
        text: The line text.
        loc: 1-based line number in the source, for error messages.
        next: The following line, or ``None``.
    """

    text: str
    loc: int
    next: Line | None = None


@attrs.define(eq=False, slots=True)
class Symbol:
    """One definition; several names can share it (``a b c equ 1`` or stacked labels).

    Attributes:
        kind: ``TEXT``, ``STACK`` or ``LABEL``.
        names: The names defined by it.
        value: Instruction index (``LABEL``) or iteration number (``STACK``).
        lines: First line of the replacement text (``TEXT``).
        visit: Set while the symbol is being substituted, to catch recursive definitions.
    """

    kind: int
    names: list[str]
    value: int = 0
    lines: Line | None = None
    visit: bool = False


class SymbolTable:
    """Definitions, the newest first when a name is defined twice (lookups see the newest)."""

    __slots__ = ("_by_name", "_stack")

    def __init__(self) -> None:
        self._by_name: dict[str, list[Symbol]] = {}
        self._stack: list[Symbol] = []  # FOR counters, innermost last

    def add(self, symbol: Symbol) -> None:
        """Defines ``symbol`` under each of its names."""
        for name in symbol.names:
            self._by_name.setdefault(name, []).append(symbol)
        if symbol.kind == STACK:
            self._stack.append(symbol)

    def lookup(self, name: str) -> Symbol | None:
        """The newest definition of ``name`` (names are case-sensitive), or ``None``."""
        found = self._by_name.get(name)
        return found[-1] if found else None

    def pop_counter(self) -> None:
        """Removes the innermost FOR counter (its loop is fully expanded)."""
        symbol = self._stack.pop()
        for name in symbol.names:
            self._by_name[name].remove(symbol)
