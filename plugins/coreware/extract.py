"""Reading operator output: find the Redcode in a reply (fences, prose and all) and assemble it.

LLMs wrap warriors in Markdown fences, put prose before and after them, sometimes give two
blocks (an example and the answer), forget ``END`` or use Windows newlines. :func:`extract`
cleans all that up and returns the author's source, not a disassembly, so the next prompt shows
readable code with its labels and comments; the cleaned text is a fixed point (extracting it
again gives the same text and so the same load image), which the archive and peers rely on.
"""

from __future__ import annotations

import re

import attrs
from dei_coreware.assembler import AssemblerSettings, AssemblyError, assemble
from dei_coreware.redcode import Warrior

from dei_framework.contract.errors import InvalidProgram

#: Opcodes and pseudo-opcodes: a line whose first or second word is one of these is code.
_CODE_WORDS = frozenset(
    "DAT MOV ADD SUB MUL DIV MOD JMP JMZ JMN DJN SPL SLT CMP SEQ SNE NOP LDP STP "
    "ORG END EQU FOR ROF PIN".split()
)
#: A fence line: three or more backticks (or tildes), optionally followed by a language tag.
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n]*$", re.MULTILINE)
#: Language tags that announce Redcode (or plain code) rather than another language.
_REDCODE_TAGS = frozenset(
    {
        "",
        "redcode",
        "red",
        "asm",
        "assembly",
        "nasm",
        "text",
        "txt",
        "corewar",
        "plaintext",
        "rc",
        "redcode94",
        "redcode-94",
    }
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Most characters of the offending line quoted in an error message.
_QUOTE = 60


@attrs.frozen
class Extracted:
    """The outcome of :func:`extract`.

    Attributes:
        source: The cleaned Redcode source (the canonical program text).
        warrior: Its load image.
    """

    source: str
    warrior: Warrior


def is_code_line(line: str) -> bool:
    """Whether a line looks like Redcode: a comment, or an (optionally labelled) opcode line."""
    stripped = line.strip()
    if stripped.startswith(";"):
        return True
    body = stripped.split(";", 1)[0]
    words = _WORD.findall(body.split(",", 1)[0])
    if not words:
        return False
    # "label opcode ...", "label: opcode ...", "opcode.mod ..." all put an opcode first or
    # second; prose almost never does ("Add a bomb" is caught by the operand check below).
    first = body.strip().split(None, 1)[0].rstrip(":").split(".", 1)[0].upper()
    second_words = body.strip().split(None, 2)
    second = second_words[1].split(".", 1)[0].upper() if len(second_words) > 1 else ""
    if first in _CODE_WORDS:
        return _plausible_operands(body.strip().split(None, 1)[1:])
    if second in _CODE_WORDS and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*:?", second_words[0]):
        return _plausible_operands(second_words[2:])
    return False


def _plausible_operands(rest: list[str]) -> bool:
    """Operands of code are short expressions, not sentences (``add a bomb to the core``)."""
    if not rest:
        return True
    text = rest[0].strip()
    # Prose has several bare words in a row; operands have at most a label and a modifier.
    return len(text.split()) <= 4 and not re.search(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}\s+[A-Za-z]", text)


def _blocks(text: str) -> list[tuple[str, str]]:
    """Fenced blocks as ``(tag, body)``; an unterminated last fence runs to the end."""
    fences = list(_FENCE.finditer(text))
    blocks: list[tuple[str, str]] = []
    index = 0
    while index < len(fences):
        opening = fences[index]
        closing = next(
            (f for f in fences[index + 1 :] if f.group(1)[0] == opening.group(1)[0]), None
        )
        end = closing.start() if closing else len(text)
        blocks.append((opening.group(2).lower(), text[opening.end() + 1 : end]))
        if closing is None:
            break
        index = fences.index(closing) + 1
    return blocks


def clean(text: str) -> str:
    """Turns a block of text into the canonical source.

    Drops prose lines before the first code line and after the last one, cuts everything after
    an ``END`` line (pMARS ignores it anyway), strips trailing blanks and ends with a newline.
    """
    lines = [line.rstrip() for line in text.split("\n")]
    code = [i for i, line in enumerate(lines) if is_code_line(line)]
    if not code:
        return "\n".join(lines).strip() + "\n"
    kept = lines[code[0] : code[-1] + 1]
    for i, line in enumerate(kept):
        body = line.split(";", 1)[0].split()
        words = [w.rstrip(":").upper() for w in body[:2]]
        if "END" in words and (words[0] == "END" or len(body) > 1 and words[1] == "END"):
            kept = kept[: i + 1]
            break
    return "\n".join(kept) + "\n"


def _normalise(reply: str) -> str:
    return reply.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ").lstrip("\ufeff")


def _locate(error: AssemblyError, source: str) -> InvalidProgram:
    """The assembler's ``line N: ...`` message, quoting the offending source line."""
    if error.line is None:
        return InvalidProgram(str(error))
    lines = source.split("\n")
    quoted = lines[error.line - 1].strip() if 0 < error.line <= len(lines) else ""
    if len(quoted) > _QUOTE:
        quoted = quoted[: _QUOTE - 3] + "..."
    suffix = f" (in `{quoted}`)" if quoted else ""
    return InvalidProgram(f"line {error.line}: {error.message}{suffix}")


def extract(reply: str, *, settings: AssemblerSettings | None = None) -> Extracted:
    """Finds and assembles the warrior in an operator's reply.

    With fenced blocks, the Redcode-tagged (or untagged) blocks that assemble compete and the
    one with most instructions wins (an answer usually outgrows the snippets around it; ties go
    to the later block, as replies end with their final version). Without fences the whole
    reply is cleaned of leading and trailing prose.

    Args:
        reply: Raw operator output.
        settings: Assembler settings (core size, maximum length) of the domain.

    Returns:
        The cleaned source and its load image.

    Raises:
        InvalidProgram: Nothing assembles; the message is the assembler's ``line N: ...`` error
            for the most code-like candidate (line numbers count in the cleaned source, and the
            offending line is quoted so a model can find it).
    """
    text = _normalise(reply)
    blocks = _blocks(text)
    # Redcode-tagged (or untagged) blocks first; a ```python or ```bash block only if no
    # Redcode block assembles.
    groups = [
        [body for tag, body in blocks if tag in _REDCODE_TAGS],
        [body for tag, body in blocks if tag not in _REDCODE_TAGS],
    ]
    if not blocks:
        groups = [[text]]
    failure: tuple[int, InvalidProgram] | None = None
    for group in groups:
        best: Extracted | None = None
        for body in group:
            source = clean(body)
            try:
                warrior = assemble(source, settings=settings)
            except AssemblyError as exc:
                codeness = sum(is_code_line(line) for line in source.split("\n"))
                if failure is None or codeness > failure[0]:
                    failure = (codeness, _locate(exc, source))
                continue
            if not any(
                is_code_line(line) and not line.strip().startswith(";")
                for line in source.split("\n")
            ):
                # pMARS reads "foo bar" as two labels; a block without one code-like line is
                # prose or a shell command that happened to assemble.
                continue
            if best is None or len(warrior) >= len(best.warrior):
                best = Extracted(source=source, warrior=warrior)
        if best is not None:
            return best
    if failure is not None and failure[0] > 0:
        raise failure[1]
    raise InvalidProgram("no Redcode found in the reply (expected one ```redcode block)")
