"""SEARCH/REPLACE replies: edits of the parent's evolve block, as frontier models write them.

::

    <<<<<<< SEARCH
    exact lines of the parent's block
    =======
    the lines that replace them
    >>>>>>> REPLACE

A reply may hold several edits; they apply in order, each to the block as the edits before it
left it. An edit applies only when its SEARCH text occurs exactly once in the block: a text
that is absent, that occurs more than once, or that lies outside the block (in the fixed
scaffold) makes the candidate invalid with that reason — an edit is never dropped or guessed.
"""

from __future__ import annotations

import re

from dei_python.blocks import MAX_CHARS, Scaffold

from dei_framework.contract.errors import InvalidProgram

_EDIT = re.compile(
    r"^[ \t]*<{7} ?SEARCH[ \t]*\n(.*?)^[ \t]*={7}[ \t]*\n(.*?)^[ \t]*>{7} ?REPLACE[ \t]*$",
    re.S | re.M,
)
#: Whether a reply is written as edits (a SEARCH marker line).
_MARKER = re.compile(r"^[ \t]*<{7} ?SEARCH[ \t]*$", re.M)


def is_diff(reply: str) -> bool:
    """Whether ``reply`` is written as SEARCH/REPLACE edits."""
    return _MARKER.search(reply) is not None


def apply_edits(reply: str, scaffold: Scaffold) -> str:
    """The block ``scaffold`` holds after the reply's edits.

    Raises:
        InvalidProgram: No complete edit, or an edit that does not apply (see the module
            docstring); the message names the edit and its SEARCH text's first line.
    """
    if len(reply) > MAX_CHARS:
        raise InvalidProgram(
            f"line 1: the reply has {len(reply)} characters; at most {MAX_CHARS} are read"
        )
    edits = _EDIT.findall(reply)
    if not edits:
        raise InvalidProgram(
            "the reply opens a SEARCH/REPLACE edit but none is complete "
            "(<<<<<<< SEARCH, =======, >>>>>>> REPLACE, each on its own line)"
        )
    if len(edits) != len(_MARKER.findall(reply)):
        raise InvalidProgram(
            f"the reply opens {len(_MARKER.findall(reply))} SEARCH/REPLACE "
            f"edits but completes {len(edits)}"
        )
    block = scaffold.block
    for number, (search, replace) in enumerate(edits, 1):
        first = next((line.strip() for line in search.splitlines() if line.strip()), "")
        if not search.strip():
            raise InvalidProgram(f"edit {number}: the SEARCH text is empty")
        count = block.count(search)
        if count == 1:
            block = block.replace(search, replace, 1)
            continue
        where = f"edit {number} (SEARCH starting {first!r})"
        if count > 1:
            raise InvalidProgram(
                f"{where}: the text occurs {count} times in the parent's "
                "evolve block; give enough lines to make it unique"
            )
        if search in scaffold.head or search in scaffold.tail:
            raise InvalidProgram(
                f"{where}: the text is outside the evolve block; only the block may change"
            )
        raise InvalidProgram(
            f"{where}: the text does not occur in the parent's evolve block "
            "(copy its lines exactly, indentation included)"
        )
    return block
