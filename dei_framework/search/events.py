"""The events a node's scheduler makes, as records: :class:`EvaluatedEvent` (one per admitted
item) and :class:`RoundEvent` (one per round end).

They are frozen attrs records, read by attribute (``event.fitness``, ``round.stats.coverage``).
``to_json()`` gives the ``evaluated`` and ``round`` lines of ``events.jsonl`` field for field
(derived from the fields: :mod:`~dei_framework.contract.json_form`) and ``from_json()`` reads
them back: JSON is made only where an event leaves the process (the run log, a checkpoint, a
status line).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from dei_framework.contract.json_form import json_field, json_form
from dei_framework.contract.kinds import CandidateSource, EventKind, WorkKind
from dei_framework.contract.records import Candidate
from dei_framework.search.archives import ArchiveStats

__all__ = ["EvaluatedEvent", "OpponentFought", "RoundEvent"]


# Not slotted: one is made per evaluation, and attrs fills a frozen class's __dict__ directly
# where a slotted one takes an object.__setattr__ per field (twice the time: 1.2 against 2.4 µs).
@json_form(tag=("event", EventKind.EVALUATED))
@attrs.frozen(kw_only=True, slots=False)
class EvaluatedEvent:
    """One candidate evaluated (or found invalid): an ``evaluated`` line of ``events.jsonl``.

    Attributes:
        id: The candidate's id, unique within the run (``node-r2-s17``).
        node: The node that evaluated it.
        round: The round (0-based) it was evaluated in.
        operator: Label of the operator that wrote it (``"initial"``, ``"seed"``,
            ``"peer:<node>"`` for others).
        kind: ``new`` or ``mutate`` (an operator wrote it this round), ``warm`` (a pool program
            re-evaluated at a round's start, or a seed program) or ``peer`` (a champion received
            from another node).
        parent: Id of the elite it was mutated from (``mutate`` only; else ``None``).
        slot: Its slot in the round (results are admitted in slot order).
        status: What the archive did (an :class:`~dei_framework.search.archives.AddStatus`
            label: ``"new"``, ``"improve_existing"``, ``"not_added"``) or ``"invalid"``.
        error: Why it is invalid (``None`` unless ``status`` is ``"invalid"``).
        fitness: Measured fitness (``None`` when invalid).
        descriptor: Measured raw descriptor by axis name (``None`` when invalid).
        cell: The archive cell it falls in (``None`` when invalid).
        extra: The fields that follow in the run log, in its order: ``timings`` (seconds spent:
            ``eval_s`` parsing and evaluating it, ``call_s`` the operator call that wrote it),
            ``generality_matches`` (reference programs it is identical to, when there are
            some), the domain's ``info`` (when it gave some), and whatever a custom loop told
            with its result.
    """

    #: What the run log calls it.
    event: ClassVar[EventKind] = EventKind.EVALUATED

    id: str
    node: str
    round: int
    operator: str
    kind: WorkKind
    parent: str | None
    slot: int
    status: str
    error: str | None = json_field(default=None, when="invalid")
    fitness: float | None = None
    descriptor: Mapping[str, float] | None = None
    cell: tuple[int, ...] | None = None
    extra: Mapping[str, Any] = json_field(factory=dict, extra=True)

    @property
    def invalid(self) -> bool:
        """Whether it was found invalid (then ``error`` says why)."""
        return self.status == "invalid"

    @property
    def timings(self) -> Mapping[str, float]:
        """Seconds spent on it: ``eval_s`` (parsing and evaluating) and, for an operator-made
        candidate, ``call_s`` (the call that wrote it); empty when not measured."""
        return self.extra.get("timings") or {}

    @property
    def generality_matches(self) -> tuple[str, ...]:
        """Reference programs it is identical to (left out of the node's generality)."""
        return tuple(self.extra.get("generality_matches", ()))


@json_form()
@attrs.frozen(kw_only=True)
class OpponentFought:
    """One program of the Red Queen pool a round's candidates fought.

    Attributes:
        source: ``initial``, ``own`` (a champion of this node) or ``peer`` (received).
        round: The round it was champion of (``-1`` for initial opponents).
        node: The node that produced it (empty for initial opponents).
    """

    source: CandidateSource
    round: int
    node: str


@json_form(tag=("event", EventKind.ROUND))
@attrs.frozen(kw_only=True)
class RoundEvent:
    """A node's round, finished: a ``round`` line of ``events.jsonl``.

    Attributes:
        node: The node.
        round: The round just finished (0-based).
        calls: Operator calls the round completed.
        stats: The round's final archive's statistics.
        champion: The round's best elite (``None`` when the archive is empty).
        champion_initial: Whether the champion is one of the initial opponents or seed
            programs (evaluated in the warm start: no work of the search).
        received: Valid champions of other nodes evaluated this round.
        niche_novelty: Share of those that fell in a cell the node's previous round left
            empty (``None`` when none was received).
        opponents: The opponent pool the round's candidates fought.
        emitter: The node's parent selector (``--emitter``).
        archive_kind: The archive's kind (``--archive``).
        generality: The champion's generality: ``None`` until it is measured, after the round
            (``summary.json`` and the node's history have the measured values).
        generality_champion: The best elite other than an initial opponent or seed, when
            ``champion_initial`` (the subject of champion-level figures such as generality).
    """

    #: What the run log calls it.
    event: ClassVar[EventKind] = EventKind.ROUND

    node: str
    round: int
    calls: int
    stats: ArchiveStats
    champion: Candidate | None
    champion_initial: bool = False
    received: int = 0
    niche_novelty: float | None = None
    opponents: tuple[OpponentFought, ...] = attrs.field(default=(), converter=tuple)
    emitter: str = ""
    archive_kind: str = ""
    generality: float | None = None
    generality_champion: Candidate | None = json_field(default=None, when="champion_initial")

    @property
    def subject(self) -> Candidate | None:
        """The elite champion-level figures describe: the champion, or when that is an initial
        opponent or seed, the best other elite."""
        return self.generality_champion if self.champion_initial else self.champion
