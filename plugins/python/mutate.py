"""``python-ast``: an offline operator that mutates the evolve block's syntax tree.

One to three edits per child, each drawn from the request's seed alone (so a run is
reproducible and needs no model):

* **constant** — a number is perturbed (a float scaled by ``exp(N(0, 0.3))``, an integer moved
  by one or two);
* **compare** — a comparison operator is swapped (``<`` for ``<=`` or ``>``, ``==`` for ``!=``,
  ...);
* **arith** — an arithmetic operator is swapped (``+`` for ``-``, ``*`` for ``/``, ...);
* **drop** — a statement is removed from a body that keeps at least one (never a ``return``,
  a definition, or the only binding of a name, so that most children still run);
* **duplicate** — a statement is repeated right after itself (an accumulation applied twice).

A request without a parent mutates the task's initial block. The child is the block written
back with :func:`ast.unparse` (comments inside the block are lost: the syntax tree has none),
answered in a fenced block as an LLM would answer.
"""

from __future__ import annotations

import ast
import math
import random
import textwrap
from typing import Any

from dei_python.blocks import split

from dei_framework.contract.domain import Domain
from dei_framework.contract.errors import ConfigError, InvalidProgram
from dei_framework.contract.operators import (
    Operator,
    OperatorReply,
    OperatorRequest,
    OperatorSettings,
)

#: Swaps per comparison operator.
COMPARE_SWAPS: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE, ast.Gt),
    ast.LtE: (ast.Lt, ast.GtE),
    ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt, ast.LtE),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
}
#: Swaps per arithmetic operator.
ARITH_SWAPS: dict[type, tuple[type, ...]] = {
    ast.Add: (ast.Sub, ast.Mult),
    ast.Sub: (ast.Add,),
    ast.Mult: (ast.Div, ast.Add),
    ast.Div: (ast.Mult, ast.FloorDiv),
    ast.FloorDiv: (ast.Div,),
    ast.Pow: (ast.Mult,),
    ast.Mod: (ast.FloorDiv,),
}
#: The edits, in the order their sites are listed (the draw depends on this order).
EDITS = ("constant", "compare", "arith", "drop", "duplicate")
#: Statements never dropped or repeated.
_KEPT = (
    ast.Return,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Import,
    ast.ImportFrom,
    ast.Global,
    ast.Nonlocal,
)


def _bindings(tree: ast.AST) -> dict[str, int]:
    """How many times each name is bound in ``tree``."""
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
    return counts


def _droppable(statement: ast.stmt, bindings: dict[str, int]) -> bool:
    """Whether dropping ``statement`` leaves every name it binds bound elsewhere (a child
    that reads a name never bound is a child wasted)."""
    names = [
        node.id
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    ]
    return all(bindings.get(name, 0) > names.count(name) for name in names)


def _sites(tree: ast.AST) -> dict[str, list[Any]]:
    """Where each edit can apply, in :func:`ast.walk` order (deterministic)."""
    sites: dict[str, list[Any]] = {edit: [] for edit in EDITS}
    bindings = _bindings(tree)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)
        ):
            sites["constant"].append(node)
        elif isinstance(node, ast.Compare):
            sites["compare"] += [
                (node, i) for i, op in enumerate(node.ops) if type(op) in COMPARE_SWAPS
            ]
        elif isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in ARITH_SWAPS:
            sites["arith"].append(node)
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list) or not body or not isinstance(body[0], ast.stmt):
                continue
            for index, statement in enumerate(body):
                if isinstance(statement, _KEPT):
                    continue
                if len(body) > 1 and _droppable(statement, bindings):
                    sites["drop"].append((body, index))
                sites["duplicate"].append((body, index))
    return sites


def _perturb(value: int | float, rng: random.Random) -> int | float:
    if isinstance(value, int):
        return value + rng.choice((-2, -1, 1, 2))
    scaled = value * math.exp(rng.gauss(0.0, 0.3)) if value else rng.gauss(0.0, 0.1)
    return float(f"{scaled:.4g}")  # short literals keep the block readable


def _apply(edit: str, site: Any, rng: random.Random) -> None:
    if edit == "constant":
        site.value = _perturb(site.value, rng)
    elif edit == "compare":
        node, index = site
        node.ops[index] = rng.choice(COMPARE_SWAPS[type(node.ops[index])])()
    elif edit == "arith":
        site.op = rng.choice(ARITH_SWAPS[type(site.op)])()
    elif edit == "drop":
        body, index = site
        del body[index]
    else:  # duplicate
        body, index = site
        body.insert(index + 1, _copy(body[index]))


def _copy(node: ast.stmt) -> ast.stmt:
    return ast.parse(ast.unparse(node)).body[0]


def mutate_block(block: str, rng: random.Random, *, edits: int | None = None) -> str:
    """``block`` with one to three edits (see the module docstring); unchanged when it does
    not parse or offers no site.

    Args:
        block: Python source (indented or not).
        rng: The only source of randomness.
        edits: How many edits (default: drawn, 1 to 3, mostly 1).
    """
    try:
        tree = ast.parse(textwrap.dedent(block))
    except (SyntaxError, ValueError, RecursionError):
        return block
    count = edits if edits is not None else rng.choice((1, 1, 1, 2, 2, 3))
    for _ in range(count):
        sites = _sites(tree)  # sites move after a drop or a duplicate: list them again
        offered = [edit for edit in EDITS if sites[edit]]
        if not offered:
            break
        edit = rng.choice(offered)
        _apply(edit, rng.choice(sites[edit]), rng)
    ast.fix_missing_locations(tree)
    return ast.unparse(tree) + "\n"


class PythonAst(Operator):
    """Seeded AST mutations of a ``python`` program's evolve block; no model.

    Args:
        initial: The program a request without a parent starts from.
        label: The operator's label.
    """

    offline = True
    max_in_flight = 4

    def __init__(self, initial: str, *, label: str = "python-ast") -> None:
        self.initial = initial
        self.label = label

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        source = request.parent.text if request.parent is not None else self.initial
        try:
            block = split(source).block
        except InvalidProgram:  # a peer's text without one block: the whole of it
            block = source
        child = mutate_block(block, random.Random(request.seed))
        return OperatorReply(text=f"```python\n{child}```")


def create(settings: OperatorSettings, domain: Domain) -> Operator:
    """The ``python-ast`` factory: option ``concurrency`` (calls in flight, default 4)."""
    initial = getattr(domain, "initial_text", None)
    if not isinstance(initial, str):
        raise ConfigError(f"python-ast works with the python domain, not {domain.name!r}")
    operator = PythonAst(initial)
    concurrency = settings.options.get("concurrency", operator.max_in_flight)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(
            f"python-ast: concurrency must be a whole number >= 1, got {concurrency!r}"
        )
    operator.max_in_flight = concurrency
    return operator
