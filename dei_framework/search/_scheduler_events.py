"""The events a node's scheduler makes, built from its work items and archives: ``evaluated``
(one per admitted item) and ``round`` (one per round end), as the records of
:mod:`dei_framework.search.events`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from dei_framework.contract.kinds import WorkKind
from dei_framework.contract.records import Candidate
from dei_framework.search.archives import AddStatus, ArchiveBase
from dei_framework.search.events import EvaluatedEvent, OpponentFought, RoundEvent


class EvaluatedItem(Protocol):
    """What an ``evaluated`` event reads of its work item (a
    :class:`~dei_framework.search._work.WorkItem`, whose module makes these events: it is not
    imported here)."""

    id: str
    node: str
    round: int
    order: int
    kind: WorkKind
    parent: Candidate | None


class Offered(Protocol):
    """What an ``evaluated`` event reports of a valid item: the candidate offered to the
    archive, or (told through ``tell_batch``, when no record was built) its buffer entry."""

    fitness: Any
    cell: Sequence[int]

    @property
    def descriptor(self) -> Mapping[str, float]: ...


def evaluated_event(
    item: EvaluatedItem,
    operator: str,
    status: AddStatus | None,
    offered: Offered | None,
    *,
    error: str | None,
    info: Mapping[str, Any],
) -> EvaluatedEvent:
    """The ``evaluated`` event of an admitted item, ``info``'s fields last.

    Args:
        item: The item.
        operator: Label of the operator that wrote its program.
        status: What the archive did.
        offered: What was offered to the archive; ``None`` for an invalid item (the event
            then says ``error``).
        error: Why the item is invalid.
        info: Extra fields (timings ...).
    """
    if offered is None:
        label, fitness, descriptor, cell = "invalid", None, None, None
    else:
        label, fitness, error = status.label, offered.fitness, None
        descriptor, cell = dict(offered.descriptor), tuple(offered.cell)
    return EvaluatedEvent(
        id=item.id,
        node=item.node,
        round=item.round,
        operator=operator,
        kind=item.kind,
        parent=item.parent.id if item.parent else None,
        slot=item.order,
        status=label,
        error=error,
        fitness=fitness,
        descriptor=descriptor,
        cell=cell,
        extra=info,
    )


def round_event(
    *,
    node: str,
    round_index: int,
    calls: int,
    finished: ArchiveBase,
    champion: Candidate | None,
    initial: set[str],
    received: int,
    novel: int,
    opponents: Sequence[Mapping[str, Any]],
    selector: str,
) -> RoundEvent:
    """The ``round`` event of a round that just ended.

    Args:
        node: The node.
        round_index: The round.
        calls: Calls admitted in the round.
        finished: The round's final archive (a snapshot, for a continual archive).
        champion: Its best elite, or ``None``.
        initial: Texts of the initial opponents and seed programs: a champion among them is
            no work of the search (it is marked, and champion-level figures use the round's
            best other elite instead).
        received: Received champions that were valid.
        novel: Those of them that fell in a cell the node's previous round left empty.
        opponents: The opponents fought in the round.
        selector: The selector's name.
    """
    champion_initial = champion is not None and champion.text in initial
    best_other = None
    if champion_initial:
        others = [elite for elite in finished if elite.text not in initial]
        best_other = max(others, key=lambda elite: elite.fitness) if others else None
    return RoundEvent(
        node=node,
        round=round_index,
        calls=calls,
        stats=finished.stats(),
        champion=champion,
        champion_initial=champion_initial,
        received=received,
        niche_novelty=novel / received if received else None,
        opponents=[OpponentFought.from_json(opponent) for opponent in opponents],
        selector=selector,
        archive_kind=finished.kind,
        generality_champion=best_other,
    )
