"""pMARS's tokenizer: one token at a time from a position in a line.

pMARS classifies tokens by their first character (digits, identifiers, or one punctuation
character, with ``&&`` and ``||`` as the only two-character tokens). Both assembler passes
re-tokenize text after substitutions, so this is a function over ``(text, pos)``.
"""

from __future__ import annotations

import re

NONE = 0
ADDR = 1
FSEP = 2
COMM = 3
MODF = 4
EXPR = 5
CHAR = 7
NUMB = 8
APND = 9
MISC = 10

#: C ``isspace`` in the C locale.
SPACE = " \t\n\v\f\r"
#: Addressing-mode characters (pMARS with the '94 extensions: ``*`` is a mode, not an operator).
ADDR_CHARS = "#$@<>*{}"
#: Characters pMARS passes through as expression operators.
EXPR_CHARS = "()/+-%!="

_TOKEN = re.compile(r"[ \t\n\v\f\r]*(?:([0-9]+)|([A-Za-z_][A-Za-z0-9_]*)|(&&|\|\||.))?", re.S)

_SINGLE = {ch: ADDR for ch in ADDR_CHARS}
_SINGLE.update({ch: EXPR for ch in EXPR_CHARS})
_SINGLE.update({"&&": EXPR, "||": EXPR, "&": APND, ";": COMM, ",": FSEP, ".": MODF})


def next_token(text: str, pos: int) -> tuple[int, str, int]:
    """Reads the token at ``pos`` (after skipping white space).

    Returns:
        ``(kind, token, end)``: the token kind constant, its text ("" for ``NONE``) and the
        position just after it.
    """
    m = _TOKEN.match(text, pos)
    number, ident, other = m.groups()
    end = m.end()
    if number is not None:
        return NUMB, number, end
    if ident is not None:
        return CHAR, ident, end
    if other is not None:
        return _SINGLE.get(other, MISC), other, end
    return NONE, "", end


def is_space_at(text: str, pos: int) -> bool:
    """Whether ``text[pos]`` exists and is C white space."""
    return pos < len(text) and text[pos] in SPACE
