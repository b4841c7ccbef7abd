"""Value records shared across the core: the one candidate record and chat messages.

A :class:`Candidate` is a program text plus what is known about it. The same record serves as
an archive elite, a parent handed to an operator, an opponent in the Red Queen pool and a
champion received from a peer; fields that do not apply keep their defaults.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from dei_framework.contract.json_form import json_field, json_form
from dei_framework.contract.kinds import CandidateSource

__all__ = ["Candidate", "ExportedProgram", "Message"]

#: One chat message (``{"role": ..., "content": ...}``).
Message = Mapping[str, str]


class DeferredText:
    """A program text read from a sequence when first needed (then kept).

    What :meth:`~dei_framework.search.scheduler.Scheduler.tell_batch` puts in the candidates it
    admits: when the texts are a lazy sequence (one that formats on access, such as a numeric
    domain's), an elite replaced before anyone reads its text is never formatted. ``str()``
    gives the text; equal to a string or another deferred text with the same text; pickles as
    the plain string.

    Args:
        source: The texts (``None`` entries read as ``""``).
        index: Which one.
    """

    __slots__ = ("_source", "_index", "_text")

    def __init__(self, source: Sequence[str | None], index: int) -> None:
        self._source: Sequence[str | None] | None = source
        self._index = index
        self._text: str | None = None

    def __str__(self) -> str:
        if self._text is None:
            self._text = self._source[self._index] or ""  # type: ignore[index]
            self._source = None  # the batch it came from may go
        return self._text

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str | DeferredText):
            return str(self) == str(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))

    def __repr__(self) -> str:
        return repr(str(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (str, (str(self),))


def _text_key(text: str | DeferredText) -> str:
    return text if type(text) is str else str(text)


@json_form()
@attrs.frozen(kw_only=True, repr=False)
class Candidate:
    """A program and what is known about it.

    Attributes:
        text: Canonical program text.
        id: Candidate id, unique within a run (``node-r2-s17``); empty for opponents.
        fitness: Fitness measured in the round of ``round`` (``None`` when not measured).
        descriptor: Raw descriptor values by axis name.
        cell: Archive cell (empty when not placed in an archive).
        node: Node that evaluated (or, for opponents and received champions, produced) it.
        operator: Label of the operator that wrote it (or ``"initial"``, ``"seed"``,
            ``"peer:<node>"``...).
        round: Round it was evaluated in, or champion of (``-1`` for initial opponents).
        parent: Id of the elite it was mutated from, if any.
        source: Where it came from (:class:`~dei_framework.contract.kinds.CandidateSource`:
            an opponent ``"initial"``, ``"own"`` or ``"peer"``, a seed program ``"seed"``; a
            candidate of the node's own search has none, ``""``).
        data: The domain's parsed form of ``text`` when whoever built the record had it (a
            numeric genome, say), so an operator need not parse the text again; ``None``
            otherwise. Not compared, not shown, not serialised (the text is the record).
        info: What its evaluation said besides fitness and descriptor
            (:attr:`~dei_framework.contract.domain.Evaluation.info`: an evaluator's metrics
            and artifacts, what it printed), kept when the node's domain asks for it
            (:attr:`~dei_framework.contract.domain.PromptNeeds.info`) so its prompts can show
            it; ``None`` otherwise. Not compared; written only when set.
        lineage: Its nearest ancestors, parent first, as they were when mutated (each
            without its text and lineage: their scores, descriptors and info), kept when the
            node's domain asks for evolution history
            (:attr:`~dei_framework.contract.domain.PromptNeeds.history`). Not compared;
            written only when not empty (a resumed run's prompts must be the ones it made).
    """

    # Stored as given (a string, or a DeferredText written on first read of ``text``).
    _text: str | DeferredText = attrs.field(alias="text", eq=_text_key)
    id: str = ""
    fitness: float | None = None
    descriptor: Mapping[str, float] = attrs.field(factory=dict)
    cell: tuple[int, ...] = attrs.field(default=(), converter=tuple)
    node: str = ""
    operator: str = ""
    round: int = -1
    parent: str | None = None
    source: CandidateSource = CandidateSource.NONE
    data: Any = json_field(default=None, eq=False, repr=False, skip=True)
    info: Mapping[str, Any] | None = json_field(default=None, omit_none=True, eq=False, repr=False)
    lineage: tuple[Candidate, ...] = json_field(default=(), when="lineage", eq=False, repr=False)

    def __repr__(self) -> str:  # attrs' form, with the field's public name
        shown = ", ".join(
            f"{field.alias}={getattr(self, field.alias)!r}"
            for field in attrs.fields(type(self))
            if field.repr
        )
        return f"{type(self).__name__}({shown})"

    @property
    def text(self) -> str:
        """Canonical program text."""
        text = self._text
        if type(text) is not str:
            text = str(text)
            object.__setattr__(self, "_text", text)  # written once: keep the string
        return text

    @property
    def digest(self) -> str:
        """Content hash: two candidates with the same text are the same program."""
        return hash_text(self.text)


def hash_text(text: str) -> str:
    """A short content hash used to recognise the same program (e.g. in opponent pools)."""
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


@json_form()
@attrs.frozen(kw_only=True)
class ExportedProgram:
    """One exported program and where it comes from.

    Attributes:
        text: The program text, as the run recorded it.
        run: The run's name (its directory, relative to the exported directory).
        node: The node whose archive held it.
        operator: The operator label that wrote it (``"peer:<node>"`` for a received
            champion, ``"initial"`` for a bundled opponent).
        round: The round (0-based) it was the champion or an elite of.
        fitness: Its fitness in that round (``None`` if not measured).
        cell: Its archive cell.
        id: Its candidate id within the run.
        kind: ``"champion"`` or ``"elite"``.
    """

    text: str
    run: str
    node: str
    operator: str
    round: int
    fitness: float | None
    cell: tuple[int, ...] = attrs.field(converter=tuple)
    id: str
    kind: Literal["champion", "elite"]

    @property
    def title(self) -> str:
        """A one-line name: ``run node-0 round 1 champion`` (``... elite cell 3,4``)."""
        where = f"{self.run} {self.node} round {self.round} {self.kind}"
        if self.kind == "elite":
            where += " cell " + ",".join(map(str, self.cell))
        return where

    @property
    def origin(self) -> str:
        """Where it comes from in one line: run, node, operator, round, fitness, cell."""
        fitness = "unmeasured" if self.fitness is None else f"{self.fitness:.6g}"
        return (
            f"run {self.run}, node {self.node}, operator {self.operator}, round "
            f"{self.round}, fitness {fitness}, cell {list(self.cell)}"
        )

    @property
    def stem(self) -> str:
        """A file name without suffix, unique within an export."""
        stem = f"{self.run}-{self.node}-r{self.round:03d}-{self.kind}"
        if self.kind == "elite":
            stem += "-" + "-".join(map(str, self.cell))
        return re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("_")
