"""python-ast: seeded AST mutations of the evolve block, valid Python, the scaffold kept."""

from __future__ import annotations

import ast
import asyncio
import random

from dei_python.blocks import split
from dei_python.domain import PythonDomain
from dei_python.mutate import PythonAst, mutate_block

from dei_framework.contract.operators import OperatorRequest
from dei_framework.contract.records import Candidate

BLOCK = """def priority(item, bins):
    room = bins - item
    score = -1.0 * room
    score = score + 2 * (room < 3)
    if item > 50:
        score = score * 2
    return score
"""


def _request(seed: int, parent: str | None) -> OperatorRequest:
    return OperatorRequest(
        key=f"n/0/{seed}",
        kind="mutate" if parent else "new",
        messages=(),
        parent=Candidate(text=parent) if parent else None,
        seed=seed,
    )


def test_children_are_valid_python_and_differ_from_the_parent() -> None:
    changed = 0
    for seed in range(300):
        child = mutate_block(BLOCK, random.Random(seed))
        ast.parse(child)  # raises on a broken child
        changed += ast.dump(ast.parse(child)) != ast.dump(ast.parse(BLOCK))
    assert changed >= 290  # an edit can undo itself (a + then a -), hardly ever more


def test_each_kind_of_edit_happens() -> None:
    seen = set()
    for seed in range(200):
        child = mutate_block(BLOCK, random.Random(seed), edits=1)
        before, after = ast.parse(BLOCK), ast.parse(child)
        count = len(list(ast.walk(after))) - len(list(ast.walk(before)))
        if count < 0:
            seen.add("drop")
        elif count > 0:
            seen.add("duplicate")
        elif "<=" in child or ">=" in child or "room > 3" in child or "item < 50" in child:
            seen.add("compare")
        elif any(op in child for op in ("bins + item", "/ room", "+ room", "score / 2")):
            seen.add("arith")
        else:
            seen.add("constant")
    assert seen == {"drop", "duplicate", "compare", "arith", "constant"}


def test_no_drop_leaves_a_name_unbound() -> None:
    for seed in range(300):
        tree = ast.parse(mutate_block(BLOCK, random.Random(seed)))
        bound = {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        } | {"item", "bins"}
        read = {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        assert read <= bound, seed


def test_the_operator_is_deterministic_in_the_seed_and_keeps_the_scaffold() -> None:
    domain = PythonDomain({})
    operator = PythonAst(domain.initial_text)
    replies = [
        asyncio.run(operator.propose(_request(seed, domain.initial_text))).text
        for seed in (1, 2, 1)
    ]
    assert replies[0] == replies[2] != replies[1]
    for reply in replies:
        program = domain.parse(reply)
        assert split(program.text).head == domain.scaffold.head
        assert split(program.text).tail == domain.scaffold.tail
    fresh = asyncio.run(operator.propose(_request(5, None))).text  # no parent: the initial block
    assert domain.parse(fresh).text != domain.initial_text
