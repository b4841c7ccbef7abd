"""Pass 1 of the assembler: source lines to instruction lines, as pMARS's ``expand`` does it.

Reading keeps only what pMARS keeps: text before the first ``;redcode`` line is dropped, a
second ``;redcode`` line ends the warrior, ``;name``/``;author`` are recorded, ``;assert`` lines
are kept and every other comment is removed. Expansion then walks the lines token by token and
builds one text line per instruction, with

* labels collected and bound to the instruction index when their opcode arrives,
* ``EQU`` texts substituted (lazily, as text, possibly over several lines),
* ``FOR``/``ROF`` blocks repeated, their counters substituted as two-digit numbers and
  ``name&counter`` concatenated,
* labels already defined replaced by their offset from the current instruction (forward
  references stay as names for pass 2),
* ``CURLINE`` replaced by the current instruction index and ``;assert`` conditions checked.

The text pipeline (including its oddities: numbers separated by blanks are joined, a blank is
kept only after names) is reproduced because it decides which sources assemble and to what.
"""

from __future__ import annotations

from ._errors import AssemblyError
from ._expressions import ExpressionError, evaluate
from ._lexer import CHAR, COMM, NONE, SPACE, is_space_at, next_token
from ._symbols import LABEL, STACK, TEXT, Line, Symbol, SymbolTable

#: Opcodes proper (they make an instruction).
OPCODES = frozenset(
    "DAT MOV ADD SUB MUL DIV MOD JMP JMZ JMN DJN SPL SLT CMP SEQ SNE NOP LDP STP".split()
)
#: Pseudo-opcodes (their operand is an absolute value).
PSEUDO_OPS = frozenset(("ORG", "END", "PIN"))

#: pMARS's line and expression buffer size: longer texts are an error.
MAX_CHARS = 8000
#: Most labels in front of one instruction (pMARS's limit).
MAX_LABELS = 7
#: Most tokens pass 1 may read (FOR and EQU expansions included) before giving up. pMARS
#: has no such limit; the largest of 1,200 real warriors needs 13,500.
MAX_STEPS = 100_000
#: Deepest EQU-inside-EQU substitution (keeps Python recursion bounded).
MAX_EQU_DEPTH = 100

# What the traversal has seen so far on a line (pMARS's ``wdecl``).
S_ERR = -1
S_NIL = 0  # nothing yet
S_LBL = 1  # labels only
S_VAL = 2  # inside an instruction's operands
S_COM = 3  # a complete instruction
S_PSE = 4  # inside a pseudo-op's operand
S_FOR = 5  # a FOR block was expanded
S_ROF = 6  # the end of a FOR block


def read_source(source: str) -> tuple[Line | None, str, str]:
    """Splits the source into the lines pMARS keeps.

    Returns:
        ``(first_line, name, author)``; lines are linked through ``Line.next``.
    """
    name, author = "Unknown", "Anonymous"
    head: Line | None = None
    tail: Line | None = None
    seen_redcode = False
    physical = source.split("\n")
    count = 0
    index = 0
    while index < len(physical):
        # A line ends at the first CR or LF; "\" at its end (outside comments) continues it.
        text = ""
        comment = False
        while index < len(physical):
            chunk = physical[index].split("\r", 1)[0]
            index += 1
            comment = comment or ";" in chunk
            text += chunk
            if text.endswith("\\") and not comment:
                text = text[:-1]
                continue
            break
        count += 1
        if len(text) >= MAX_CHARS:
            raise AssemblyError("line too long", count)
        kind, _, pos = next_token(text, 0)
        if kind == NONE:
            continue
        if kind != COMM:
            cut = text.find(";")
            line = Line(text if cut < 0 else text[:cut], count)
        else:
            word_kind, word, end = next_token(text, pos)
            word = word.upper()
            if word_kind == CHAR and word == "REDCODE" and end == pos + 7:
                if seen_redcode:
                    break  # a second ;redcode starts the next warrior
                seen_redcode = True
                head = tail = None
                continue
            rest = text[end:].lstrip(SPACE)
            if word == "NAME":
                name = rest or "Unknown"
                continue
            if word == "AUTHOR":
                author = rest or "Anonymous"
                continue
            if word not in ("ASSERT", "DEBUG", "TRACE", "BREAK"):
                continue
            # Switch lines are kept, minus any second comment.
            cut = text.find(";", end)
            line = Line(text if cut < 0 else text[:cut], count)
        if tail is None:
            head = tail = line
        else:
            tail.next = line
            tail = line
    return head, name, author


class Expander:
    """Pass 1 state (pMARS keeps it in globals)."""

    def __init__(self, table: SymbolTable, maxlength: int) -> None:
        self.table = table
        self.maxlength = maxlength
        self.output: list[tuple[str, int]] = []  # (instruction text, source line)
        self.dest: list[str] = []
        self.dest_len = 0
        self.pending: list[str] = []  # labels waiting for their instruction, newest last
        self.skip = 0  # nesting depth inside a FOR block that runs 0 times
        self.line = 0  # instruction index
        self.going = True  # cleared by END (and a missing ROF)
        self.cursor: Line | None = None  # the line being expanded (FOR/EQU move it)
        self.steps = 0
        self.equ_depth = 0
        self.registers = [0] * 26
        self.warnings: list[str] = []

    # -- helpers ----------------------------------------------------------------------------

    def fail(self, message: str) -> AssemblyError:
        return AssemblyError(message, self.cursor.loc if self.cursor is not None else None)

    def emit(self, text: str) -> None:
        """Appends to the line being built; pMARS's buffer holds fewer than 8000 characters."""
        if self.dest_len + len(text) >= MAX_CHARS:
            raise self.fail("line too long after substitution")
        self.dest.append(text)
        self.dest_len += len(text)

    def reset_dest(self) -> None:
        self.dest = []
        self.dest_len = 0

    def add_instruction(self, loc: int) -> None:
        self.output.append(("".join(self.dest), loc))

    def eval_dest(self) -> int:
        try:
            return evaluate("".join(self.dest), self.registers)
        except ExpressionError as exc:
            raise self.fail(str(exc)) from None

    # -- driver -------------------------------------------------------------------------------

    def run(self, first: Line | None) -> None:
        """Expands every line (pMARS's ``expand``)."""
        self.cursor = first
        while self.cursor is not None and self.going:
            self.reset_dest()
            result = self.traverse(self.cursor.text, S_NIL)
            if result == S_COM:
                self.add_instruction(self.cursor.loc)
            elif result == S_ROF:
                raise self.fail("ROF without FOR")
            self.cursor = self.cursor.next
        if self.pending:
            self.warnings.append("discarded labels: " + " ".join(reversed(self.pending)))
            self.pending = []

    def traverse(self, text: str, state: int) -> int:
        """Reads ``text`` token by token, appending to the line being built.

        Returns:
            The state reached (``S_COM`` when the text completed an instruction).
        """
        pos = 0
        table = self.table
        while True:
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise self.fail("expansion too large (FOR/EQU)")
            kind, token, pos = next_token(text, pos)
            if kind == NONE:
                return state
            if kind == COMM:
                if state == S_NIL and not self.skip:
                    word_kind, word, end = next_token(text, pos)
                    if word.upper() == "ASSERT":
                        self.check_assert(text[end:])
                return state
            if kind != CHAR:
                if self.skip:
                    return S_NIL
                if state <= S_LBL:
                    raise self.fail(f"unexpected {token!r}")
                self.emit(token)
                continue

            upper = token.upper()
            if upper == "ROF":
                if self.skip:
                    self.skip -= 1
                    return S_ERR
                if state <= S_LBL:
                    return S_ROF
                raise self.fail("misplaced ROF")
            if upper == "FOR":
                if self.skip:
                    self.skip += 1
                    return S_ERR
                if state <= S_LBL:
                    return self.expand_for(text[pos:])
                raise self.fail("misplaced FOR")
            if token == "CURLINE":
                if self.skip:
                    return S_NIL
                if state <= S_LBL:
                    raise self.fail("CURLINE used as a label")
                self.emit(str(self.line) + (" " if is_space_at(text, pos) else ""))
                continue
            if upper == "EQU":
                if self.skip:
                    return S_NIL
                if state <= S_LBL:
                    return self.define_equ(text[pos:])
                raise self.fail("misplaced EQU")
            if upper in OPCODES or upper in PSEUDO_OPS:
                if self.skip:
                    return S_NIL
                if state > S_LBL:
                    raise self.fail(f"misplaced {token}")
                return self.instruction(upper, text, pos)
            if self.skip:
                state = S_NIL
                continue

            # A name: label definition, substitution, or left for pass 2.
            while text.startswith("&", pos) and text[pos + 1 : pos + 2].isalpha():
                part_kind, part, after = next_token(text, pos + 1)
                if part_kind != CHAR:
                    break
                pos = after
                counter = table.lookup(part)
                if counter is None or counter.kind != STACK:
                    raise self.fail(f"cannot concatenate {part!r}: not a FOR counter")
                token += f"{counter.value:02d}"
            symbol = table.lookup(token)
            if symbol is not None:
                if symbol.kind == TEXT:
                    if symbol.visit:
                        raise self.fail(f"recursive EQU {token!r}")
                    return self.substitute(text[pos:], state, symbol)
                if state <= S_LBL:
                    # pMARS warns and drops the line.
                    self.warnings.append(f"line {self.cursor.loc}: {token!r} redefined")
                    return S_ERR
                if symbol.kind == STACK:
                    value = f"{symbol.value:02d}"
                elif state == S_PSE:
                    value = str(symbol.value)
                else:
                    value = str(symbol.value - self.line)
                self.emit(value + (" " if is_space_at(text, pos) else ""))
                continue
            if state <= S_LBL:
                if len(self.pending) >= MAX_LABELS:
                    raise self.fail(f"too many labels before {token!r}")
                self.pending.append(token)
                if text.startswith(":", pos):
                    pos += 1
                state = S_LBL
                continue
            self.emit(token + (" " if is_space_at(text, pos) else ""))

    def instruction(self, upper: str, text: str, pos: int) -> int:
        """An opcode or pseudo-op: copies it (and what sticks to it) and reads the operands."""
        end = pos
        while end < len(text) and text[end] not in SPACE:
            end += 1
        self.emit(upper + text[pos:end] + (" " if end < len(text) else ""))
        real = upper in OPCODES
        if self.traverse(text[end:], S_VAL if real else S_PSE) == S_ERR:
            return S_ERR
        if self.pending:
            self.table.add(Symbol(LABEL, self.pending[::-1], value=self.line))
            self.pending = []
        if real:
            self.line += 1
            if self.line > self.maxlength:
                raise AssemblyError(f"too many instructions (more than {self.maxlength})")
        elif upper == "END":
            self.going = False
        return S_COM

    def check_assert(self, text: str) -> None:
        self.traverse(text, S_VAL)
        try:
            result = evaluate("".join(self.dest), self.registers)
        except ExpressionError:
            self.warnings.append(f"line {self.cursor.loc}: invalid assert")
            return
        if result == 0:
            raise self.fail("assertion failed")

    def define_equ(self, rest: str) -> int:
        """``names EQU text``, with following ``EQU text`` lines continuing the text."""
        if not self.pending:
            self.warnings.append(f"line {self.cursor.loc}: EQU without a label")
            return S_VAL
        cursor = self.cursor
        first = last = Line(rest, cursor.loc)
        while cursor.next is not None:
            kind, token, end = next_token(cursor.next.text, 0)
            if kind == CHAR and token.upper() == "EQU":
                cursor = cursor.next
                last.next = Line(cursor.text[end:], cursor.loc)
                last = last.next
            elif kind == COMM:
                cursor = cursor.next  # a kept switch line between EQU lines is skipped
            else:
                break
        self.cursor = cursor
        self.table.add(Symbol(TEXT, self.pending[::-1], lines=first))
        self.pending = []
        return S_VAL

    def substitute(self, rest: str, state: int, symbol: Symbol) -> int:
        """Expands an EQU text in place, then goes on with the rest of the line."""
        self.equ_depth += 1
        if self.equ_depth > MAX_EQU_DEPTH:
            raise self.fail("EQU substitutions nested too deeply")
        symbol.visit = True
        saved = self.cursor
        self.cursor = line = symbol.lines
        state = self.traverse(line.text, state)
        while line.next is not None and self.going:
            if not self.skip and state == S_COM:
                self.add_instruction(line.loc)
            line = self.cursor = line.next
            self.reset_dest()
            state = self.traverse(line.text, S_NIL)
        self.cursor = saved
        if rest[:1] in SPACE and rest:
            if self.dest_len + 1 < MAX_CHARS:  # pMARS ignores this append failing
                self.dest.append(" ")
                self.dest_len += 1
        symbol.visit = False
        self.equ_depth -= 1
        return self.traverse(rest, state)

    def expand_for(self, rest: str) -> int:
        """``[counter] FOR count`` ... ``ROF``: repeats the block."""
        counter_names: list[str] = []
        if self.pending:
            counter_names = [self.pending[-1]]
            if len(self.pending) > 1:
                self.table.add(Symbol(LABEL, self.pending[-2::-1], value=self.line))
            self.pending = []
        self.reset_dest()
        self.traverse(rest, S_VAL)
        count = self.eval_dest()
        if count <= 0:
            self.skip += 1
            return S_FOR
        counter = Symbol(STACK, counter_names, value=1, visit=True)
        self.table.add(counter)
        start = self.cursor
        count &= 0xFFFF  # pMARS compares with an unsigned short
        while self.going and counter.value <= count:
            self.cursor = start
            while self.going:
                nxt = self.cursor.next
                if nxt is None:
                    self.warnings.append("missing ROF")
                    self.going = False
                    break
                self.cursor = nxt
                self.reset_dest()
                result = self.traverse(nxt.text, S_NIL)
                if result == S_ROF:
                    break
                if result == S_COM:
                    self.add_instruction(nxt.loc)
            counter.value = (counter.value + 1) & 0xFFFF
        self.table.pop_counter()
        return S_FOR
