"""How a node's scheduler admits what it is told, in slot order: one buffer entry for a
:class:`~dei_framework.search._work.Result` told through ``tell`` and for a row of the columns
told through ``tell_batch``, and one admission path for both (the round's call count, the
lineage's feedback, the archive, the selector).

A friend of :class:`~dei_framework.search.scheduler.Scheduler`: :func:`admit` updates the
scheduler's round state, which is why it lives beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs
import numpy as np

from dei_framework.contract.domain import PromptNeeds
from dei_framework.contract.kinds import CandidateSource
from dei_framework.contract.records import Candidate, DeferredText
from dei_framework.search._work import CALL_KINDS, MUTATE, PEER, Result, WorkItem
from dei_framework.search.archives import AddStatus, ArchiveBase
from dei_framework.search.selectors import ParentSelector

#: A domain's prompts that ask for nothing (no info, no ancestors kept).
NO_NEEDS = PromptNeeds()


class AdmittingNode(Protocol):
    """What :func:`admit` reads and updates of a
    :class:`~dei_framework.search.scheduler.Scheduler` (which imports this module: it is not
    imported here)."""

    name: str
    round: int
    lifecycle: str
    archive: ArchiveBase
    selector: ParentSelector
    completed: int
    lineage_errors: dict[str, str]
    prompt_needs: PromptNeeds
    previous_cells: set[tuple[int, ...]]
    _valid_received: int
    _novel: int


class Told:
    """One told item waiting in the reorder buffer (a plain record: a batch makes one per item).

    Attributes:
        item: The item.
        result: The :class:`~dei_framework.search._work.Result` it was told as (reported back
            in an admission, with its candidate even when the archive turns it down); ``None``
            for a row told through ``tell_batch``.
        failed: The operator call failed transiently: nothing to admit.
        text: Its text, told through ``tell`` (``None`` reads as ``""``); for a row, its text
            is ``texts[position]``, read when first wanted.
        texts: The batch's texts (``None`` for a result).
        position: The row's position in ``texts``.
        fitness: Its fitness; ``None`` when invalid (a result's is made a float when it is
            admitted).
        names: The descriptor's axis names, in order.
        values: The descriptor's values, in the same order.
        cell: Its cell, once placed (a batch is placed when told, a result when admitted).
        index: The cell's flat index, once placed (it stays ``None`` in an archive with its own
            ``add``, which places what it is offered itself).
        data: The domain's parsed form of its text.
        error: Why it is invalid.
        operator: Label of the operator that wrote its program.
        info: Extra fields of its ``evaluated`` event (a row told without ``info`` makes no
            event; a result's event is its admission's, made when the driver asks).
    """

    __slots__ = (
        "item",
        "result",
        "failed",
        "text",
        "texts",
        "position",
        "fitness",
        "names",
        "values",
        "cell",
        "index",
        "data",
        "error",
        "operator",
        "info",
    )

    def __init__(
        self,
        item,
        result,
        failed,
        text,
        texts,
        position,
        fitness,
        names,
        values,
        cell,
        index,
        data,
        error,
        operator,
        info,
    ):
        # One store per field: a batch makes one Told per row, and packing the fields into
        # tuples to unpack them again costs a measurable share of tell_batch.
        self.item = item
        self.result = result
        self.failed = failed
        self.text = text
        self.texts = texts
        self.position = position
        self.fitness = fitness
        self.names = names
        self.values = values
        self.cell = cell
        self.index = index
        self.data = data
        self.error = error
        self.operator = operator
        self.info = info

    @classmethod
    def of_result(cls, result: Result) -> Told:
        """A result told through ``tell`` (placed when admitted)."""
        program, valid = result.item.program, result.valid
        descriptor: Mapping[str, float] = result.descriptor if valid else {}
        return cls(
            result.item,
            result,
            result.call_failed,
            result.text,
            None,
            None,
            result.fitness if valid else None,
            tuple(descriptor),
            tuple(descriptor.values()),
            None,
            None,
            result.data,
            result.error,
            program.operator if program else result.operator,
            result.info,
        )

    @property
    def descriptor(self) -> dict[str, float]:
        """The raw descriptor, by axis name."""
        return dict(zip(self.names, self.values, strict=True))

    def candidate(
        self, fitness: float, *, node: str, round_index: int, needs: PromptNeeds = NO_NEEDS
    ) -> Candidate:
        """The record offered to the archive (a row's text stays unread until wanted), with
        its evaluation's info and its ancestors when the domain's prompts want them."""
        item = self.item
        text = (self.text or "") if self.texts is None else DeferredText(self.texts, self.position)
        info, lineage = None, ()
        if needs.info and self.info:
            info = self.info.get("info")  # the domain's Evaluation.info (Outcome.result)
        parent = item.parent
        if needs.history and parent is not None:
            # Light records: the history shows an ancestor's scores, not its program.
            nearest = attrs.evolve(parent, text="", lineage=(), data=None)
            lineage = (nearest, *parent.lineage[: needs.history - 1])
        return Candidate(
            id=item.id,
            text=text,
            fitness=fitness,
            descriptor=self.descriptor,
            cell=self.cell,
            node=node,
            operator=self.operator,
            round=round_index,
            parent=item.parent.id if item.parent is not None else None,
            data=self.data,
            info=info,
            lineage=lineage,
        )


def batch_rows(
    archive: ArchiveBase,
    names: tuple[str, ...],
    items: Sequence[WorkItem],
    *,
    texts: Sequence[str | None],
    fitness: Sequence[float | None],
    descriptors: Any,
    data: Sequence[Any] | None,
    errors: Sequence[str | None] | None,
    operator: str,
    info: Mapping[str, Any] | None,
) -> list[Told]:
    """The rows of ``tell_batch``'s columns, the valid ones placed in ``archive`` in one pass.

    Raises:
        ValueError: the columns' lengths differ from the items'.
    """
    count = len(items)
    columns = [texts, fitness, *(column for column in (data, errors) if column is not None)]
    if any(len(column) != count for column in columns):
        raise ValueError("tell_batch: texts, fitness, data and errors need one entry per item")
    values = np.asarray(descriptors, dtype=float).reshape(count, len(names))
    scores = [
        None if value is None else float(value)
        for value in (fitness.tolist() if isinstance(fitness, np.ndarray) else fitness)
    ]
    # Learned bounds may move before a row is admitted: such an archive places it then.
    valid = [] if archive.learns_bounds else [k for k in range(count) if scores[k] is not None]
    placed = archive.place(values[valid]) if valid else ([], [])
    cells: list[Any] = [None] * count
    indices: list[Any] = [None] * count
    for k, cell, index in zip(valid, *placed, strict=True):
        cells[k], indices[k] = cell, index
    rows = values.tolist()
    return [
        Told(
            item,
            None,
            False,
            None,
            texts,
            k,
            scores[k],
            names,
            rows[k],
            cells[k],
            indices[k],
            None if data is None else data[k],
            None if errors is None else errors[k],
            operator,
            info,
        )
        for k, item in enumerate(items)
    ]


def admit(scheduler: AdmittingNode, told: Told) -> tuple[Candidate | None, AddStatus | None]:
    """Admits one told item, however it was told: the round's call count, the lineage's
    feedback, the archive and the selector.

    Returns:
        The candidate offered to the archive (``None`` when invalid, or when nobody needs
        the record: a batch row the archive turns down, unless the selector learns from
        it) and what the archive did (``None`` when invalid or the call failed).
    """
    item = told.item
    if told.failed:  # nothing to admit, and the call does not count against the quota
        return None, None
    if item.kind in CALL_KINDS:  # item.needs_call, without a property call per row
        scheduler.completed += 1
    if told.fitness is None:
        if item.parent is not None and told.error:
            scheduler.lineage_errors[item.parent.id] = told.error
        if item.kind == MUTATE:
            scheduler.selector.tell(item.parent, None, AddStatus.NOT_ADDED)
        return None, None
    fitness, archive = float(told.fitness), scheduler.archive
    if told.index is None:  # told through tell: placed now
        told.cell = archive.cell_of(told.descriptor)
        if item.kind == PEER:
            return _admit_peer(scheduler, told, fitness)
        if type(archive).add is ArchiveBase.add:  # else it places the candidate itself
            told.index = archive.flat_index(told.cell)
    if told.index is None:  # an archive with its own add
        candidate = told.candidate(
            fitness, node=scheduler.name, round_index=scheduler.round, needs=scheduler.prompt_needs
        )
        status = archive.add(candidate)
    else:
        status = archive.status_at(told.index, fitness)
        if (
            not status
            and told.result is None
            and not (item.kind == MUTATE and "learns" in scheduler.selector.capabilities)
        ):
            return None, status  # nothing would change: no record needed
        candidate = told.candidate(
            fitness, node=scheduler.name, round_index=scheduler.round, needs=scheduler.prompt_needs
        )
        if status:  # what add does, without placing the descriptor a second time
            status = archive.add_at(candidate, told.index)
    if item.kind == MUTATE:
        scheduler.selector.tell(item.parent, candidate, status)
    return candidate, status


def _admit_peer(
    scheduler: AdmittingNode, told: Told, fitness: float
) -> tuple[Candidate | None, AddStatus | None]:
    """:func:`admit` for a received champion (valid, placed): counted for niche novelty,
    then offered to the archive unless the sharing policy keeps it out of cells."""
    candidate = told.candidate(
        fitness, node=scheduler.name, round_index=scheduler.round, needs=scheduler.prompt_needs
    )
    scheduler._valid_received += 1
    if candidate.cell not in scheduler.previous_cells:
        scheduler._novel += 1
    # The sharing policy let it into the opponent pool only: evaluated (it counts for niche
    # novelty above), never offered to the archive.
    if told.item.program.source == CandidateSource.PEER_EXCLUDED:
        told.result = attrs.evolve(
            told.result, error="not admitted (sharing policy)", fitness=None, descriptor=None
        )  # what is reported
        return None, None
    # reset: peers fill cells the warm start left empty; continual: a migrant competes
    # for its cell like any candidate (an island model), or it could never improve one.
    archive = scheduler.archive
    add = archive.add if scheduler.lifecycle == "continual" else archive.add_if_empty
    return candidate, add(candidate)
