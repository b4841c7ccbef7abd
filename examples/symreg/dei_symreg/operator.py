"""``symreg-gp``: an offline genetic-programming operator for the symbolic-regression domain.

It ignores the chat messages and works on expression trees: random trees for ``new`` requests;
for ``mutate`` requests one of subtree replacement, point mutation, constant perturbation,
crossover with another elite (``others``) and hoisting (replacing the tree by one of its
subtrees, which counters bloat). Every draw comes from the request's seed, so a run is
reproducible, and every reply respects the domain's size and depth limits.
"""

from __future__ import annotations

import random

from dei_framework.contract.errors import ConfigError, InvalidProgram
from dei_framework.contract.operators import (
    Operator,
    OperatorReply,
    OperatorRequest,
    OperatorSettings,
)
from dei_symreg.domain import SymRegDomain
from dei_symreg.expr import FUNCTIONS, Bin, Call, Neg, Node, Num, Var, children, const, depth, size
from dei_symreg.expr import to_text as _to_text

#: Tree path: child indices from the root.
Path = tuple[int, ...]

#: Mutation moves and their weights; crossover needs ``others`` and falls back to subtree.
MOVES = {"subtree": 3, "point": 2, "constants": 2, "crossover": 2, "hoist": 1}
#: Attempts at a mutation that respects the limits before returning the parent unchanged.
MAX_TRIES = 20


def _rebuild(node: Node, kids: list[Node]) -> Node:
    if isinstance(node, Bin):
        return Bin(node.op, kids[0], kids[1])
    if isinstance(node, Neg):
        return Neg(kids[0])
    if isinstance(node, Call):
        return Call(node.fn, kids[0])
    return node


def paths(node: Node, prefix: Path = ()) -> list[tuple[Path, Node]]:
    """Every subtree with its path, root first."""
    found = [(prefix, node)]
    for index, child in enumerate(children(node)):
        found.extend(paths(child, (*prefix, index)))
    return found


def replace_at(node: Node, path: Path, new: Node) -> Node:
    """A copy of ``node`` with the subtree at ``path`` replaced by ``new``."""
    if not path:
        return new
    kids = list(children(node))
    kids[path[0]] = replace_at(kids[path[0]], path[1:], new)
    return _rebuild(node, kids)


class GPOperator(Operator):
    """Random trees and tree mutations over a :class:`~dei_symreg.domain.SymRegDomain`.

    Args:
        domain: The domain (its variables and limits shape every tree).
        temperature: Mutation strength: scales constant noise and the size of new subtrees.
        max_in_flight: Concurrent calls (cheap either way; batches follow this size).
        label: Name in logs and summaries.
    """

    offline = True

    def __init__(
        self,
        domain: SymRegDomain,
        *,
        temperature: float = 1.0,
        max_in_flight: int = 8,
        label: str = "symreg-gp",
    ) -> None:
        if not temperature > 0:
            raise ConfigError(f"symreg-gp: temperature must be > 0, got {temperature}")
        self.domain = domain
        self.temperature = temperature
        self.max_in_flight = max_in_flight
        self.label = label

    # --- building blocks ------------------------------------------------------------------------

    def constant(self, rng: random.Random) -> Node:
        # Round numbers read well in prompts and logs; constant perturbation refines them.
        return const(round(rng.uniform(-3.0, 3.0), 2) or 1.0)

    def terminal(self, rng: random.Random) -> Node:
        if rng.random() < 0.7:
            return Var(rng.choice(self.domain.variables))
        return self.constant(rng)

    def random_tree(self, rng: random.Random, max_depth: int, *, full: bool = False) -> Node:
        """A random tree at most ``max_depth`` deep (``full``: every branch that deep)."""
        if max_depth <= 1 or (not full and rng.random() < 0.3):
            return self.terminal(rng)
        roll = rng.random()
        if roll < 0.2:
            return Call(rng.choice(list(FUNCTIONS)), self.random_tree(rng, max_depth - 1))
        if roll < 0.27:
            # Small integer powers: polynomial building blocks that rarely overflow.
            return Bin("^", self.random_tree(rng, max_depth - 1), Num(float(rng.choice((2, 3)))))
        op = rng.choice(("+", "-", "*", "*", "/"))
        return Bin(
            op,
            self.random_tree(rng, max_depth - 1, full=full),
            self.random_tree(rng, max_depth - 1, full=full),
        )

    def fits(self, tree: Node) -> bool:
        """Whether ``tree`` respects the domain's limits."""
        limits = self.domain.limits
        return (
            size(tree) <= limits.max_nodes
            and depth(tree) <= limits.max_depth
            and len(_to_text(tree)) <= limits.max_chars
        )

    def _subtree_depth(self, rng: random.Random) -> int:
        return max(1, min(6, round(rng.randint(1, 3) * self.temperature)))

    # --- moves ----------------------------------------------------------------------------------

    def mutate(self, tree: Node, rng: random.Random, others: list[Node]) -> Node:
        """One mutation of ``tree`` (possibly violating the limits; the caller checks)."""
        move = rng.choices(list(MOVES), weights=list(MOVES.values()))[0]
        spots = paths(tree)
        path, target = rng.choice(spots)
        if move == "crossover" and others:
            _, donor = rng.choice(paths(rng.choice(others)))
            return replace_at(tree, path, donor)
        if move == "point":
            return replace_at(tree, path, self._point(target, rng))
        if move == "constants":
            return self._perturb(tree, rng)
        if move == "hoist" and len(spots) > 1:
            return rng.choice(spots[1:])[1]
        return replace_at(tree, path, self.random_tree(rng, self._subtree_depth(rng)))

    def _point(self, node: Node, rng: random.Random) -> Node:
        if isinstance(node, Bin):
            return Bin(rng.choice([op for op in "+-*/^" if op != node.op]), node.left, node.right)
        if isinstance(node, Call):
            return Call(rng.choice([f for f in FUNCTIONS if f != node.fn]), node.arg)
        if isinstance(node, Neg):
            return node.arg
        return self.terminal(rng)

    def _perturb(self, tree: Node, rng: random.Random) -> Node:
        if isinstance(tree, Num):
            scale = 0.2 * self.temperature
            value = tree.value * rng.gauss(1.0, scale) + rng.gauss(0.0, scale)
            return const(float(f"{value:.6g}"))
        kids = [self._perturb(child, rng) for child in children(tree)]
        return _rebuild(tree, kids)

    # --- the contract ---------------------------------------------------------------------------

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        rng = random.Random(request.seed)
        parent = self._tree(request.parent.text) if request.parent is not None else None
        if request.kind == "new" or parent is None:
            for _ in range(MAX_TRIES):
                tree = self.random_tree(rng, rng.randint(2, 4), full=rng.random() < 0.5)
                if self.fits(tree):
                    break
            return OperatorReply(text=_to_text(tree))
        others = [t for t in (self._tree(o.text) for o in request.others) if t is not None]
        tree = parent
        for _ in range(MAX_TRIES):
            candidate = self.mutate(parent, rng, others)
            if self.fits(candidate) and candidate != parent:
                tree = candidate
                break
        return OperatorReply(text=_to_text(tree))

    def _tree(self, text: str) -> Node | None:
        try:
            return self.domain.parse_tree(text)
        except InvalidProgram:  # an elite from an older, looser configuration
            return None


def create(settings: OperatorSettings) -> GPOperator:
    """The ``symreg-gp`` factory, ``factory(ctx)``: builds the node's operator for
    ``settings.domain``.

    Reads the operator options ``temperature`` (mutation strength, default 1.0) and
    ``concurrency`` (calls in flight, default 8); other options (meant for LLM nodes sharing an
    ``[operator_options]`` table) are ignored.

    Raises:
        ConfigError: the domain is not ``symreg``, or an option is invalid.
    """
    domain = settings.domain
    if not isinstance(domain, SymRegDomain):
        raise ConfigError(f"{settings.node}: symreg-gp works only with --domain symreg")
    options = settings.options
    try:
        temperature = float(options.get("temperature", 1.0))
        concurrency = int(options.get("concurrency", 8))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{settings.node}: symreg-gp option: {exc}") from None
    if concurrency < 1:
        raise ConfigError(f"{settings.node}: concurrency must be at least 1, got {concurrency}")
    return GPOperator(domain, temperature=temperature, max_in_flight=concurrency)
