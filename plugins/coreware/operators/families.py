"""Operator families: offline operators of comparable means but different strategic priors.

The two original offline operators differ in *strength* (``templates`` writes working strategies,
``gp`` random loops), so an ensemble mixing them cannot tell diversity from quality. A family is
built from the same two means for every member — instances of strategy archetypes with fresh
constants, and structural edits of the archive's elites — and differs only in **which
archetypes it knows**:

* ``bombers``: dwarf, stone and core clear (bombs thrown blindly at a fixed step, or a sweep);
* ``papers``: the paper replicator (copies itself around the core and keeps going);
* ``scanners``: scanner and vampire (look before they strike, or lure processes into a pit);
* ``imps``: imp and three-point imp ring (self-moving single instructions).

Four families, so a four-node Diverse ensemble has one node per family, as the paper has one
node per model family. That mimics the paper's setting in miniature: each family has its own
prior and blind spots (a ``bombers`` node never writes a replicator from scratch, though edits
of received champions can take it there), while the search machinery is the same. Every draw
comes from the request's seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from dei_coreware.assembler import AssemblerSettings
from dei_coreware.operators._redcode import parse_parent, render, to_lines
from dei_coreware.operators.gp import GPOperator
from dei_coreware.operators.templates import ARCHETYPES, read_tag, write_archetype

from dei_framework.contract.operators import Operator, OperatorReply, OperatorRequest

#: The families: registered operator name -> the archetypes it writes.
FAMILIES: dict[str, tuple[str, ...]] = {
    "bombers": ("dwarf", "stone", "clear"),
    "papers": ("paper",),
    "scanners": ("scanner", "vampire"),
    "imps": ("imp", "ring"),
}
#: Share of mutations of an own-family warrior that re-draw its constants (the rest edit it).
REDRAW = 0.5
#: Share of mutations of any other warrior that edit it (the rest write a fresh archetype).
EDIT_FOREIGN = 0.7


class FamilyOperator(Operator):
    """Archetypes of one family with fresh constants, plus structural edits of elites.

    Args:
        archetypes: The archetypes this operator writes (names of
            :data:`~dei_coreware.operators.templates.ARCHETYPES`).
        settings: The domain's assembler settings (core size, maximum length).
        label: Name in logs.
        strength: Mutation strength: a redraw re-rolls this many constants (rounded, at least
            one) and an edit makes its drawn number of structural edits times this (1.0: the
            operator as it always was).

    Raises:
        ValueError: an unknown or empty archetype list.
    """

    offline = True
    max_in_flight = 4

    def __init__(
        self,
        archetypes: Sequence[str],
        settings: AssemblerSettings | None = None,
        label: str = "family",
        strength: float = 1.0,
    ) -> None:
        self.strength = strength
        unknown = sorted(set(archetypes) - set(ARCHETYPES))
        if unknown or not archetypes:
            raise ValueError(f"unknown archetypes {unknown} (known: {sorted(ARCHETYPES)})")
        self.archetypes = tuple(archetypes)
        self.settings = settings or AssemblerSettings()
        self.label = label
        self._gp = GPOperator(self.settings)

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        return OperatorReply(text=self.write(request))

    def write(self, request: OperatorRequest) -> str:
        """The reply text for a request (synchronous, for tests and benchmarks)."""
        rng = random.Random(request.seed)
        coresize = self.settings.coresize
        if request.kind != "mutate" or request.parent is None:
            return self._fresh(rng)
        tagged = read_tag(request.parent.text)
        own = tagged is not None and tagged[0] in self.archetypes
        if own and rng.random() < REDRAW:
            name, params = tagged
            fresh = ARCHETYPES[name].draw(rng, coresize)
            params = {key: params.get(key, value) for key, value in fresh.items()}
            redraws = max(1, round(self.strength))
            # One redraw takes the very draw it always took (strength 1.0 is unchanged).
            keys = (
                [rng.choice(sorted(fresh))]
                if redraws == 1
                else rng.sample(sorted(fresh), min(redraws, len(fresh)))
            )
            for key in keys:
                params[key] = fresh[key]
            return write_archetype(name, params, coresize)
        if own or rng.random() < EDIT_FOREIGN:
            parent = parse_parent(request.parent.text, self.settings)
            if parent is not None and len(parent):
                lines, start = to_lines(parent, coresize), parent.start
                edits = rng.choice((1, 1, 2))
                for _ in range(max(1, round(edits * self.strength))):
                    lines, start = self._gp.edit(rng, lines, start)
                return render(
                    lines,
                    start,
                    name=f"{self.label} variant",
                    strategy=f"edit of {request.parent.id}",
                )
        return self._fresh(rng)

    def _fresh(self, rng: random.Random) -> str:
        name = rng.choice(self.archetypes)
        return write_archetype(
            name, ARCHETYPES[name].draw(rng, self.settings.coresize), self.settings.coresize
        )
