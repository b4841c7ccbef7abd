"""The Red Queen opponent pool: who a node's candidates fight in a round.

Initial opponents stay for the whole run; round champions (the node's own and its peers')
arrive over time and only the most recent ``max_champions`` stay, so the pressure keeps moving
as in DRQ. The same program never appears twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from dei_framework.envelope import hash_text


@attrs.frozen(kw_only=True)
class Opponent:
    """One program in the pool, with where it came from.

    Attributes:
        text: Program text.
        source: ``"initial"``, ``"own"`` or ``"peer"``.
        node: Node that produced it (empty for initial opponents).
        round: Round it was champion of (``-1`` for initial opponents).
        operator: Label of the operator that wrote it.
    """

    text: str
    source: str
    node: str = ""
    round: int = -1
    operator: str = ""

    @property
    def digest(self) -> str:
        """Content hash: two opponents with the same program are the same opponent."""
        return hash_text(self.text)

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


class OpponentPool:
    """Initial opponents plus the last ``max_champions`` round champions (own and peers').

    Args:
        initial: Source texts of the initial opponents.
        max_champions: How many recent champions stay in the pool (DRQ's *k*, default 20).
    """

    def __init__(self, initial: Iterable[str] = (), *, max_champions: int = 20) -> None:
        self.max_champions = max_champions
        self._initial: list[Opponent] = []
        self._champions: list[Opponent] = []
        for text in initial:
            self._add(self._initial, Opponent(text=text, source="initial"))

    def add_champion(self, opponent: Opponent) -> bool:
        """Adds a round champion; returns ``False`` if the same program is already present.

        The oldest champion leaves when more than ``max_champions`` are held.
        """
        if not self._add(self._champions, opponent):
            return False
        del self._champions[: max(0, len(self._champions) - self.max_champions)]
        return True

    def _add(self, group: list[Opponent], opponent: Opponent) -> bool:
        if any(o.digest == opponent.digest for o in (*self._initial, *self._champions)):
            return False
        group.append(opponent)
        return True

    @property
    def initial(self) -> list[Opponent]:
        """The initial opponents."""
        return list(self._initial)

    @property
    def champions(self) -> list[Opponent]:
        """Champions currently held, oldest first."""
        return list(self._champions)

    def opponents(self) -> list[Opponent]:
        """Everyone a candidate fights this round: initial opponents, then champions."""
        return [*self._initial, *self._champions]

    def __len__(self) -> int:
        return len(self._initial) + len(self._champions)

    def to_json(self) -> dict[str, Any]:
        return {
            "max_champions": self.max_champions,
            "initial": [o.to_json() for o in self._initial],
            "champions": [o.to_json() for o in self._champions],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OpponentPool:
        pool = cls(max_champions=data["max_champions"])
        pool._initial = [Opponent(**o) for o in data["initial"]]
        pool._champions = [Opponent(**o) for o in data["champions"]]
        return pool
