"""``gp``: a genetic-programming operator over instructions (mutation, crossover, random warriors).

Its prior is syntactic: it knows which opcodes, modes and step sizes warriors use, not what
strategies they implement. A mutation applies one to three edits (opcode, modifier, mode,
field tweak, insert, delete, duplicate, swap, start), sometimes after a one-point crossover with
another elite; a new warrior is a short random loop. Every draw comes from the request's seed.
"""

from __future__ import annotations

import random
from typing import Any

from dei_coreware.assembler import AssemblerSettings
from dei_coreware.operators._redcode import (
    MODE_WEIGHTS,
    MODIFIERS,
    OPCODE_WEIGHTS,
    STEPS,
    Line,
    parse_parent,
    render,
    to_lines,
)

from dei_framework.contract.operators import Operator, OperatorReply, OperatorRequest

#: Probability of a crossover before the edits (when another elite is at hand).
CROSSOVER = 0.2


def _choice(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


class GPOperator(Operator):
    """Structural mutation and crossover of Redcode load images.

    Args:
        settings: The domain's assembler settings (core size, maximum length).
        label: Name in logs.
        strength: Mutation strength: the edits of a mutation (1 to 3, drawn) times this,
            rounded, at least one (1.0: the operator as it always was).
    """

    offline = True
    max_in_flight = 4

    def __init__(
        self, settings: AssemblerSettings | None = None, label: str = "gp", strength: float = 1.0
    ) -> None:
        self.settings = settings or AssemblerSettings()
        self.label = label
        self.strength = strength
        self._coresize = self.settings.coresize
        self._maxlength = min(self.settings.maxlength, 40)

    # --- random material ------------------------------------------------------------------------

    def _field(self, rng: random.Random, length: int) -> int:
        roll = rng.random()
        if roll < 0.5:
            return rng.randint(-length - 2, length + 2)
        if roll < 0.85:
            return rng.choice(STEPS) * rng.choice((1, -1))
        return rng.randrange(self._coresize) - self._coresize // 2

    def random_line(self, rng: random.Random, length: int) -> Line:
        opcode = _choice(rng, OPCODE_WEIGHTS)
        modifier = rng.choice(MODIFIERS) if rng.random() < 0.5 else _default_mod(opcode)
        return Line(
            opcode,
            modifier,
            _choice(rng, MODE_WEIGHTS),
            self._field(rng, length),
            _choice(rng, MODE_WEIGHTS),
            self._field(rng, length),
        )

    def random_warrior(self, rng: random.Random) -> tuple[list[Line], int]:
        """A short random body, usually closed into a loop (so it lives long enough to matter)."""
        size = rng.randint(2, 9)
        lines = [self.random_line(rng, size) for _ in range(size)]
        if rng.random() < 0.7:
            lines.append(Line("JMP", "B", "$", -len(lines), "$", 0))
        if rng.random() < 0.35:
            lines.insert(0, Line("SPL", "B", rng.choice("$#"), rng.choice((0, 1, 2)), "$", 0))
        return lines, 0

    # --- edits ----------------------------------------------------------------------------------

    def edit(self, rng: random.Random, lines: list[Line], start: int) -> tuple[list[Line], int]:
        """One random structural edit of ``lines`` (``start``: the entry offset, kept valid)."""
        lines = list(lines)
        i = rng.randrange(len(lines))
        old = lines[i]
        move = rng.random()
        if move < 0.16:
            lines[i] = Line(
                _choice(rng, OPCODE_WEIGHTS), old.modifier, old.a_mode, old.a, old.b_mode, old.b
            )
        elif move < 0.26:
            lines[i] = Line(old.opcode, rng.choice(MODIFIERS), old.a_mode, old.a, old.b_mode, old.b)
        elif move < 0.38:
            if rng.random() < 0.5:
                lines[i] = Line(
                    old.opcode, old.modifier, _choice(rng, MODE_WEIGHTS), old.a, old.b_mode, old.b
                )
            else:
                lines[i] = Line(
                    old.opcode, old.modifier, old.a_mode, old.a, _choice(rng, MODE_WEIGHTS), old.b
                )
        elif move < 0.6:
            # Field tweaks: small nudges keep a working loop working; big jumps move a step.
            delta = rng.choice((-2, -1, 1, 2)) if rng.random() < 0.6 else None
            if rng.random() < 0.5:
                a = old.a + delta if delta is not None else self._field(rng, len(lines))
                lines[i] = Line(old.opcode, old.modifier, old.a_mode, a, old.b_mode, old.b)
            else:
                b = old.b + delta if delta is not None else self._field(rng, len(lines))
                lines[i] = Line(old.opcode, old.modifier, old.a_mode, old.a, old.b_mode, b)
        elif move < 0.72 and len(lines) < self._maxlength:
            lines.insert(i, self.random_line(rng, len(lines)))
            start += i <= start
        elif move < 0.82 and len(lines) > 1:
            del lines[i]
            start -= i < start
        elif move < 0.88 and len(lines) < self._maxlength:
            lines.insert(i, old)
            start += i < start
        elif move < 0.95 and len(lines) > 1:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            start = rng.randrange(len(lines))
        return lines, min(max(start, 0), len(lines) - 1)

    def _crossover(self, rng: random.Random, lines: list[Line], other: list[Line]) -> list[Line]:
        cut_a = rng.randint(1, len(lines))
        cut_b = rng.randrange(len(other))
        child = lines[:cut_a] + other[cut_b:]
        return child[: self._maxlength]

    # --- the operator ---------------------------------------------------------------------------

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        return OperatorReply(text=self.write(request))

    def write(self, request: OperatorRequest) -> str:
        """The reply text for a request (synchronous, for tests and benchmarks)."""
        rng = random.Random(request.seed)
        parent = None
        if request.kind == "mutate" and request.parent is not None:
            parent = parse_parent(request.parent.text, self.settings)
        if parent is None:
            lines, start = self.random_warrior(rng)
            return render(lines, start, name="gp random", strategy="random loop")
        lines, start = to_lines(parent, self._coresize), parent.start
        how = "mutation"
        others = [parse_parent(o.text, self.settings) for o in request.others]
        others = [o for o in others if o is not None]
        if others and rng.random() < CROSSOVER:
            lines = self._crossover(rng, lines, to_lines(rng.choice(others), self._coresize))
            start = min(start, len(lines) - 1)
            how = "crossover"
        edits = rng.choice((1, 1, 1, 2, 2, 3))
        # The same draw at any strength: strength 1.0 makes exactly the mutations it always did.
        for _ in range(max(1, round(edits * self.strength))):
            lines, start = self.edit(rng, lines, start)
        return render(lines, start, name="gp variant", strategy=f"{how} of {request.parent.id}")

    def status(self) -> dict[str, Any]:
        return {}


def _default_mod(opcode: str) -> str:
    if opcode in ("MOV", "SEQ", "SNE"):
        return "I"
    if opcode in ("ADD", "SUB", "MUL", "DIV", "MOD", "DAT"):
        return "F" if opcode == "DAT" else "AB"
    return "B"
