"""What a node's scheduler and its driver hand each other: the work items it asks to be done,
the results told back, the admissions and round ends it reports."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import attrs

from dei_framework.contract.domain import Domain
from dei_framework.contract.kinds import CALL_KINDS, WorkKind
from dei_framework.contract.operators import DeferredMessages, OperatorRequest, UsageMeter
from dei_framework.contract.records import Candidate
from dei_framework.search._scheduler_events import evaluated_event
from dei_framework.search.archives import AddStatus, ArchiveBase
from dei_framework.search.events import EvaluatedEvent, RoundEvent

#: What a work item asks (the former ``Literal`` alias, kept for its importers).
Kind = WorkKind

#: The work kinds bound to module names once, for the per-item paths (the scheduler's ask and
#: admission): looking a member up on its enum costs a few times a plain name's in Python 3.11.
NEW, MUTATE, WARM, PEER = WorkKind.NEW, WorkKind.MUTATE, WorkKind.WARM, WorkKind.PEER


@attrs.frozen(kw_only=True)
class WorkItem:
    """One unit of work the scheduler hands out.

    Attributes:
        id: Candidate id of what this item produces (``node-r2-s17``, ``-w3`` warm, ``-p0``
            peer).
        key: Stable request key (``node/r2/s17``): recorded calls are found by it on resume
            and replay.
        node: The node.
        round: The round.
        order: Admission position within the round (warm and peer items first).
        kind: ``"new"`` or ``"mutate"`` (call the operator, then evaluate its reply), ``"warm"``
            (re-evaluate a pool opponent, or evaluate a seed program) or ``"peer"`` (evaluate a
            received champion): a :class:`~dei_framework.contract.kinds.WorkKind`.
        seed: Seed for the operator call.
        eval_seed: Seed for the evaluation (one per node and round: equal conditions).
        parent: The elite to mutate (``"mutate"`` only).
        others: More elites for inspiration or crossover.
        feedback: The last parse error in the parent's lineage.
        program: For ``"warm"`` and ``"peer"`` items, the program to evaluate.
        inspirations: Elites the domain's prompt shows besides the parent (its
            :class:`~dei_framework.contract.domain.PromptNeeds`); empty when it asks for none.
    """

    id: str
    key: str
    node: str
    round: int
    order: int
    kind: Kind
    seed: int
    eval_seed: int
    parent: Candidate | None = None
    others: tuple[Candidate, ...] = attrs.field(default=(), converter=tuple)
    feedback: str | None = None
    program: Candidate | None = None
    inspirations: tuple[Candidate, ...] = attrs.field(default=(), converter=tuple)

    @property
    def needs_call(self) -> bool:
        """``True`` when an operator must write the program first."""
        return self.kind in CALL_KINDS

    def request(self, domain: Domain, *, meter: UsageMeter | None = None) -> OperatorRequest:
        """The operator request of a call item, with the domain's chat messages (written when
        the operator first reads them: offline operators that ignore them cost nothing) and
        the call's ``meter``, if any."""
        # Only a domain that asks for inspirations is handed them (its messages take them).
        extra = {"inspirations": self.inspirations} if self.inspirations else {}
        messages = DeferredMessages(
            functools.partial(
                domain.messages,
                self.kind,
                parent=self.parent,
                others=self.others,
                feedback=self.feedback,
                **extra,
            )
        )
        return OperatorRequest(
            key=self.key,
            kind=self.kind,
            messages=messages,
            parent=self.parent,
            others=self.others,
            feedback=self.feedback,
            seed=self.seed,
            inspirations=self.inspirations,
            meter=meter,
        )

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self, recurse=False)
        data["parent"] = self.parent.to_json() if self.parent else None
        data["others"] = [o.to_json() for o in self.others]
        data["program"] = self.program.to_json() if self.program else None
        if self.inspirations:  # written only when there are any: other domains' records stay
            data["inspirations"] = [o.to_json() for o in self.inspirations]
        else:
            del data["inspirations"]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkItem:
        values = dict(data)
        values["kind"] = WorkKind(data["kind"])
        values["parent"] = Candidate.from_json(data["parent"]) if data["parent"] else None
        values["others"] = tuple(Candidate.from_json(o) for o in data["others"])
        values["program"] = Candidate.from_json(data["program"]) if data["program"] else None
        values["inspirations"] = tuple(Candidate.from_json(o) for o in data.get("inspirations", ()))
        return cls(**values)


@attrs.frozen(kw_only=True)
class Result:
    """What doing one work item gave.

    Attributes:
        item: The item.
        text: Canonical program text (``None`` when nothing parsed).
        fitness: Measured fitness (``None`` when invalid).
        descriptor: Measured raw descriptor (``None`` when invalid).
        error: Why the candidate is invalid (parse or evaluation message).
        call_failed: The operator call failed transiently: nothing to admit, and the slot's
            call does not count against the round's quota.
        operator: Label of the operator that wrote the program (for calls).
        info: Extra fields for the ``evaluated`` event (timings ...).
        data: The domain's parsed form of ``text``, kept on the admitted candidate
            (``Candidate.data``) so that operators need not parse its text again.
    """

    item: WorkItem
    text: str | None = None
    fitness: float | None = None
    descriptor: Mapping[str, float] | None = None
    error: str | None = None
    call_failed: bool = False
    operator: str = ""
    info: Mapping[str, Any] = attrs.field(factory=dict)
    data: Any = attrs.field(default=None, eq=False, repr=False)

    @property
    def valid(self) -> bool:
        return self.fitness is not None and self.descriptor is not None


@attrs.frozen(kw_only=True)
class Admission:
    """One result admitted (in slot order).

    Attributes:
        result: The result.
        candidate: The candidate offered to the archive (``None`` when invalid or failed).
        status: What the archive did (``None`` when invalid or failed).
    """

    result: Result
    candidate: Candidate | None
    status: AddStatus | None

    def event(self) -> EvaluatedEvent | None:
        """The ``evaluated`` event of the run log (``None`` for a failed call)."""
        result, item = self.result, self.result.item
        if result.call_failed:
            return None
        operator = item.program.operator if item.program else result.operator
        return evaluated_event(
            item, operator, self.status, self.candidate, error=result.error, info=result.info
        )


@attrs.frozen(kw_only=True)
class RoundEnd:
    """A round that just ended.

    Attributes:
        event: The ``round`` event (calls, stats, champion, opponents fought, novelty...).
        archive: The round's final archive.
        champion: Its best elite, or ``None``.
    """

    event: RoundEvent
    archive: ArchiveBase
    champion: Candidate | None


@attrs.frozen(kw_only=True)
class TellReport:
    """What :meth:`Scheduler.tell <dei_framework.search.scheduler.Scheduler.tell>` or
    :meth:`Scheduler.tell_batch <dei_framework.search.scheduler.Scheduler.tell_batch>` did.

    Attributes:
        admitted: Results told through ``tell`` admitted by this call, in slot order
            (earlier-told results that were waiting for a slower slot are admitted now too).
        statuses: Items told through ``tell_batch`` admitted by this call, in slot order,
            each with what the archive did (``None`` when invalid).
        round_end: The round that ended, if one did.
        events: The ``evaluated`` events of the ``statuses`` items told with ``info`` (what
            :meth:`Admission.event` gives for an item told through ``tell``).
    """

    admitted: tuple[Admission, ...] = ()
    statuses: tuple[tuple[WorkItem, AddStatus | None], ...] = ()
    round_end: RoundEnd | None = None
    events: tuple[EvaluatedEvent, ...] = ()
