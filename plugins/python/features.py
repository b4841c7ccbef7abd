"""The features DEI computes itself, with OpenEvolve's names and meaning, for a task whose
``feature_dimensions`` names one its evaluator does not return (the evaluator's own value of
the same name always wins, as in OpenEvolve):

- ``complexity``: the length of the code, in characters. DEI counts the evolve block (the
  scaffold around it never changes, so the whole file's length is the block's plus a
  constant).
- ``diversity``: how far the program's evolve block is from a reference set, the mean of a
  normalised edit distance over tokens (:func:`diversity`). OpenEvolve measures it against a
  sample of its database; a DEI domain sees one program at a time (in a sandbox child), and a
  descriptor must be a function of the program alone (the same program lands in the same
  cell, on any node, in common ground, after a resume), so DEI's reference set is fixed when
  the run starts: the task's initial program. ``diversity`` is then how far a program has
  moved from where the search began.
- ``score``: the fitness (:func:`fitness`), as OpenEvolve's ``score`` dimension is.
"""

from __future__ import annotations

import ast
import difflib
import io
import math
import re
import tokenize
from collections.abc import Collection, Mapping, Sequence

#: The built-in feature names.
COMPLEXITY = "complexity"
DIVERSITY = "diversity"
SCORE = "score"
COMPUTED = (COMPLEXITY, DIVERSITY, SCORE)
#: Tokens of a block compared at most (its start): the matching is at worst quadratic.
MAX_TOKENS = 20_000
#: Tokens that carry no code: comments and layout.
_LAYOUT = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
)
#: A word, a number, or one other non-blank character (for text Python cannot tokenize).
_WORD = re.compile(r"\w+|\S")


def fitness(metrics: Mapping[str, float], features: Collection[str] = ()) -> float:
    """OpenEvolve's fitness: ``combined_score``, or else the mean of the numeric values that
    are not features (of all of them when every value is one), NaN skipped; 0 without any.
    """
    if "combined_score" in metrics:
        return metrics["combined_score"]
    values = [value for key, value in metrics.items() if key not in features]
    for pool in (values, list(metrics.values())):
        finite = [value for value in pool if not math.isnan(value)]
        if finite:
            return sum(finite) / len(finite)
    return 0.0


def tokens(text: str) -> tuple[str, ...]:
    """The code's tokens, as :func:`diversity` compares them: comments and layout left out,
    each string literal in one spelling (``'a'`` and ``"a"`` are the same), so that
    rewriting a program without changing it (``ast.unparse``, a reindent) is no distance."""
    try:
        found = [
            _literal(token.string) if token.type == tokenize.STRING else token.string
            for token in tokenize.generate_tokens(io.StringIO(text).readline)
            if token.type not in _LAYOUT
        ]
    except (tokenize.TokenError, SyntaxError):  # not Python as a whole: words and symbols
        found = _WORD.findall(text)
    return tuple(found[:MAX_TOKENS])


def _literal(text: str) -> str:
    try:
        return repr(ast.literal_eval(text))
    except (ValueError, SyntaxError):  # an f-string, say: as written
        return text


def distance(first: Sequence[str], second: Sequence[str]) -> float:
    """The share of tokens edited to turn one sequence into the other, in ``[0, 1]``: each
    insertion, deletion or replacement of difflib's matching counted at its longer side,
    over the longer sequence's length (0: the same; 1: nothing in common)."""
    longest = max(len(first), len(second))
    if longest == 0:
        return 0.0
    matcher = difflib.SequenceMatcher(None, first, second, autojunk=False)
    edited = sum(
        max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    )
    return edited / longest


def diversity(block: str, references: Sequence[Sequence[str]]) -> float:
    """The mean :func:`distance` of a block's tokens to each reference (0 without any)."""
    if not references:
        return 0.0
    mine = tokens(block)
    return sum(distance(mine, other) for other in references) / len(references)
