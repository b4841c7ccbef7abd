"""Scripted operators of the diff tests: the same children (python-ast's), answered as whole
blocks (`full-blocks`) or as SEARCH/REPLACE edits of the parent's block (`edits`), and edits
that never apply (`stale-edits`)."""

from __future__ import annotations

import difflib
import random

from dei_python.blocks import split
from dei_python.mutate import mutate_block

from dei_framework import hookimpl
from dei_framework.contract.operators import Operator, OperatorReply, OperatorRequest, OperatorSpec


def as_edit(parent: str, child: str) -> str:
    """One SEARCH/REPLACE edit turning ``parent`` into ``child``: the changed lines, widened by
    context until the SEARCH text occurs once in ``parent``."""
    old, new = parent.splitlines(keepends=True), child.splitlines(keepends=True)
    changes = [
        op
        for op in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ] or [("replace", 0, len(old), 0, len(new))]
    i1, i2, j1, j2 = changes[0][1], changes[-1][2], changes[0][3], changes[-1][4]
    while not ("".join(old[i1:i2]).strip() and parent.count("".join(old[i1:i2])) == 1):
        if i1 == 0 and i2 == len(old):
            break
        if i1 > 0:  # lines outside the changes are the same in both: widen both sides
            i1, j1 = i1 - 1, j1 - 1
        if i2 < len(old):
            i2, j2 = i2 + 1, j2 + 1
    return (
        f"Edit:\n<<<<<<< SEARCH\n{''.join(old[i1:i2])}=======\n{''.join(new[j1:j2])}"
        ">>>>>>> REPLACE\n"
    )


class Scripted(Operator):
    offline = True
    max_in_flight = 4

    def __init__(self, label: str, initial: str) -> None:
        self.label = label
        self.initial = initial

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        parent = split(request.parent.text if request.parent else self.initial).block
        child = mutate_block(parent, random.Random(request.seed))
        if self.label == "full-blocks":
            return OperatorReply(text=f"```python\n{child}```")
        if self.label == "edits":
            return OperatorReply(text=as_edit(parent, child))
        return OperatorReply(
            text="<<<<<<< SEARCH\n    return nothing_like_this\n=======\n"
            "    return 0\n>>>>>>> REPLACE\n"
        )


@hookimpl
def dei_operators() -> list[OperatorSpec]:
    return [
        OperatorSpec(
            name=name,
            domains=("python",),
            description="diff tests",
            factory=lambda ctx, name=name: Scripted(name, ctx.domain.initial_text),
        )
        for name in ("full-blocks", "edits", "stale-edits")
    ]
