"""Finding the expression in operator output: code fences, prose, ``y = ...``, ``return ...``.

Models wrap answers in many ways. The rules, in order: if the reply has fenced code blocks, only
their lines are candidates (the first block first); otherwise every line is. Each candidate line
is normalised (comments, ``return``, an assignment's left-hand side, ``np.``/``math.``
prefixes, a trailing ``;`` or sentence period are dropped), and the first one that parses wins.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from typing import TypeVar

from dei_framework.contract.errors import InvalidProgram

T = TypeVar("T")

_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)
_INLINE = re.compile(r"`([^`\n]+)`")
_PREFIXES = re.compile(r"\b(?:np|numpy|math|torch|sp|sympy)\.")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][\w\s,()\[\]]*=(?!=)")
#: Most candidate lines tried per reply (a reply of a million lines is not worth reading).
MAX_CANDIDATES = 200


def candidates(reply: str) -> Iterator[str]:
    """Normalised candidate lines of ``reply``, most likely first."""
    blocks = _FENCE.findall(reply)
    lines = [line for block in blocks for line in block.splitlines()] or reply.splitlines()
    found = (candidate for line in lines for candidate in _variants(line) if candidate)
    return itertools.islice(found, MAX_CANDIDATES)


def _variants(line: str) -> Iterator[str]:
    yield _normalise(line)
    # Prose such as "Final answer: x0 + 1", "I propose `sin(x0)`".
    for span in _INLINE.findall(line):
        yield _normalise(span)
    if ":" in line:
        yield _normalise(line.rsplit(":", 1)[1])


def _normalise(line: str) -> str:
    line = line.split("#", 1)[0].strip().strip("`").strip()
    line = _PREFIXES.sub("", line)
    if line.startswith("return "):
        line = line[len("return ") :]
    line = _ASSIGNMENT.sub("", line, count=1).strip()
    line = line.rstrip(";").strip()
    if line.endswith(".") and not re.search(r"\d\.$", line):
        line = line[:-1].rstrip()
    return line


def first_parse(reply: str, parse: Callable[[str], T]) -> T:
    """The first candidate of ``reply`` that ``parse`` accepts.

    Raises:
        InvalidProgram: no candidate parses; the message is the first candidate's error (the
            most likely intended expression), or says that the reply was empty.
    """
    first_error: InvalidProgram | None = None
    for candidate in candidates(reply):
        try:
            return parse(candidate)
        except InvalidProgram as exc:
            first_error = first_error or exc
    if first_error is None:
        raise InvalidProgram("no expression found in the reply")
    raise first_error
