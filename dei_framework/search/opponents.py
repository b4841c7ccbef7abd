"""The Red Queen opponent pool: who a node's candidates fight in a round.

Initial opponents stay for the whole run. Round champions arrive over time in two separate
windows: the node's own champions (the most recent ``own_window``) and champions received from
peers (the most recent ``peer_window``). Keeping them apart makes Red Queen memory equal across
conditions: with the defaults (20 and 20), a Solo node and a node of any ensemble both remember
their own last 20 champions, whatever their peers send. The same program never appears twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dei_framework.contract.kinds import CandidateSource
from dei_framework.contract.records import Candidate

#: Own champions remembered (DRQ's *k*).
OWN_WINDOW = 20
#: Received champions remembered.
PEER_WINDOW = 20


class OpponentPool:
    """Initial opponents plus the most recent own and received champions.

    Args:
        initial: Source texts of the initial opponents.
        own_window: How many recent own champions stay in the pool.
        peer_window: How many recent received champions stay in the pool.
    """

    def __init__(
        self,
        initial: Iterable[str] = (),
        *,
        own_window: int = OWN_WINDOW,
        peer_window: int = PEER_WINDOW,
    ) -> None:
        self.windows = {CandidateSource.OWN: own_window, CandidateSource.PEER: peer_window}
        self._initial: list[Candidate] = []
        self._champions: dict[str, list[Candidate]] = {
            CandidateSource.OWN: [],
            CandidateSource.PEER: [],
        }
        for text in initial:
            self._add(self._initial, Candidate(text=text, source=CandidateSource.INITIAL))

    def add_champion(self, opponent: Candidate) -> bool:
        """Adds a round champion (``source`` ``"own"`` or ``"peer"``); returns ``False`` if the
        same program is already present. The oldest of that source leaves when its window is
        full.
        """
        if opponent.source not in self._champions:
            raise ValueError(
                f"champion source must be 'own' or 'peer', got {str(opponent.source)!r}"
            )
        group = self._champions[opponent.source]
        if not self._add(group, opponent):
            return False
        del group[: max(0, len(group) - self.windows[opponent.source])]
        return True

    def _add(self, group: list[Candidate], opponent: Candidate) -> bool:
        if any(o.digest == opponent.digest for o in self.opponents()):
            return False
        group.append(opponent)
        return True

    @property
    def initial(self) -> list[Candidate]:
        """The initial opponents."""
        return list(self._initial)

    @property
    def champions(self) -> list[Candidate]:
        """Champions currently held: own ones, then received ones, oldest first."""
        return [*self._champions[CandidateSource.OWN], *self._champions[CandidateSource.PEER]]

    def opponents(self) -> list[Candidate]:
        """Everyone a candidate fights this round: initial opponents, then champions."""
        return [*self._initial, *self.champions]

    def describe(self) -> list[dict[str, Any]]:
        """The pool as logged in ``round`` events: source, round and node of each opponent."""
        return [{"source": o.source, "round": o.round, "node": o.node} for o in self.opponents()]

    def __len__(self) -> int:
        return len(self.opponents())

    def to_json(self) -> dict[str, Any]:
        # The champions' lists are keyed by their source's string ("own", "peer").
        own, peer = CandidateSource.OWN, CandidateSource.PEER
        return {
            "own_window": self.windows[own],
            "peer_window": self.windows[peer],
            "initial": [o.to_json() for o in self._initial],
            "own": [o.to_json() for o in self._champions[own]],
            "peer": [o.to_json() for o in self._champions[peer]],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OpponentPool:
        pool = cls(own_window=data["own_window"], peer_window=data["peer_window"])
        pool._initial = [Candidate.from_json(o) for o in data["initial"]]
        pool._champions = {
            source: [Candidate.from_json(o) for o in data[source]]
            for source in (CandidateSource.OWN, CandidateSource.PEER)
        }
        return pool


__all__ = ["OWN_WINDOW", "PEER_WINDOW", "OpponentPool"]
