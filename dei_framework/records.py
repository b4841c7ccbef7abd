"""Value records shared across the core: the one candidate record and chat messages.

A :class:`Candidate` is a program text plus what is known about it. The same record serves as
an archive elite, a parent handed to an operator, an opponent in the Red Queen pool and a
champion received from a peer; fields that do not apply keep their defaults. (The names
``Elite``, ``Parent`` and ``Opponent`` are aliases of it, kept so existing code reads well.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from dei_framework.envelope import hash_text

#: One chat message (``{"role": ..., "content": ...}``).
Message = Mapping[str, str]


@attrs.frozen(kw_only=True)
class Candidate:
    """A program and what is known about it.

    Attributes:
        text: Canonical program text.
        id: Candidate id, unique within a run (``node-r2-s17``); empty for opponents.
        fitness: Fitness measured in the round of ``round`` (``None`` when not measured).
        descriptor: Raw descriptor values by axis name.
        cell: Archive cell (empty when not placed in an archive).
        node: Node that evaluated (or, for opponents and received champions, produced) it.
        operator: Label of the operator that wrote it (or ``"initial"``, ``"peer:<node>"``...).
        round: Round it was evaluated in, or champion of (``-1`` for initial opponents).
        parent: Id of the elite it was mutated from, if any.
        source: Where an opponent came from: ``"initial"``, ``"own"`` or ``"peer"``.
        data: The domain's parsed form of ``text`` when whoever built the record had it (a
            numeric genome, say), so an operator need not parse the text again; ``None``
            otherwise. Not compared, not shown, not serialised (the text is the record).
    """

    text: str
    id: str = ""
    fitness: float | None = None
    descriptor: Mapping[str, float] = attrs.field(factory=dict)
    cell: tuple[int, ...] = attrs.field(default=(), converter=tuple)
    node: str = ""
    operator: str = ""
    round: int = -1
    parent: str | None = None
    source: str = ""
    data: Any = attrs.field(default=None, eq=False, repr=False)

    @property
    def digest(self) -> str:
        """Content hash: two candidates with the same text are the same program."""
        return hash_text(self.text)

    def to_json(self) -> dict[str, Any]:
        # Written out field by field (what attrs.asdict gives, in field order): records are
        # serialised for every event and checkpoint, and asdict's generic walk costs 10x this.
        return {"text": self.text, "id": self.id, "fitness": self.fitness,
                "descriptor": dict(self.descriptor), "cell": list(self.cell), "node": self.node,
                "operator": self.operator, "round": self.round, "parent": self.parent,
                "source": self.source}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Candidate:
        fields = {field.name for field in attrs.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in fields})


#: An archive elite (a :class:`Candidate` with ``fitness``, ``descriptor`` and ``cell`` set).
Elite = Candidate
#: An elite handed to an operator (a :class:`Candidate`).
Parent = Candidate
#: A program in the Red Queen pool (a :class:`Candidate` with ``source`` set).
Opponent = Candidate
