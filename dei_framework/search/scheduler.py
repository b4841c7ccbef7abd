"""The ask/tell core of one node: MAP-Elites rounds as a synchronous state machine.

A round ends with a champion, published to peers; what a round start does depends on the
archive lifecycle: ``reset`` (Red Queen rounds, DRQ and DEI) starts a fresh archive warmed with
the opponent pool, which grows with the champions; ``continual`` (classic MAP-Elites, island
models) keeps the archive, so a round is a migration interval: peers' champions are evaluated
and offered to it, and the opponent pool stays the initial one (a static objective).

:class:`Scheduler` holds everything a node decides — the archive, the opponent pool, the
selector, the round quotas — and nothing it waits for: no event loop, no operator, no transport.
A driver (the built-in :class:`~dei_framework.runtime.driver.SearchDriver`, or a loop of your own)
asks it for work, performs the work any way it likes, and tells it the results::

    scheduler.start_round(received=[...])        # at each round's start (optional when lone)
    while not scheduler.finished:
        items = scheduler.ask(4)                 # WorkItems: evaluate this text, or call first
        results = [do(item) for item in items]   # operator call + evaluation, in any order
        report = scheduler.tell(results)         # admissions (AddStatus), maybe a RoundEnd

Determinism by construction (no batch barrier): :meth:`Scheduler.tell` accepts results in any
order and admits them in slot order through a reorder buffer. Mutation slot ``s`` is planned —
its parents drawn by the selector from a generator seeded by ``(seed, node, round, s)`` —
exactly when every slot before ``s - lag`` has been admitted, from the archive as it stands
then. So the plans, and therefore a seeded offline run, are the same whatever the timing;
:meth:`Scheduler.ask` returns fewer items than asked when the next slot is not planned yet.

The scheduler's parts live beside it (their public names are importable from here): the
records it exchanges with its driver (``_work``), its items' seeds (``_slots``), a round's warm
start (``_warm_start``), its call-slot planning (``_planning``), the one admission path of
``tell`` and ``tell_batch`` (``_admission``), a round's end (``_round_end``), its run-log events
(``_scheduler_events``) and checkpoint (``_scheduler_state``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.domain import LIFECYCLES, Domain, PromptNeeds
from dei_framework.contract.kinds import CandidateSource
from dei_framework.contract.operators import DeferredMessages, OperatorRequest, UsageMeter
from dei_framework.contract.records import Candidate, DeferredText
from dei_framework.search import _planning, _scheduler_state
from dei_framework.search._admission import Told, admit, batch_rows
from dei_framework.search._round_end import end_round
from dei_framework.search._scheduler_events import evaluated_event
from dei_framework.search._slots import NodeSlots, derive_seed
from dei_framework.search._warm_start import warm_start
from dei_framework.search._work import Admission, Kind, Result, RoundEnd, TellReport, WorkItem
from dei_framework.search.archives import AddStatus, ArchiveBase, ArchiveFactory, GridArchive
from dei_framework.search.events import RoundEvent
from dei_framework.search.opponents import OWN_WINDOW, PEER_WINDOW, OpponentPool
from dei_framework.search.selectors import ParentSelector, UniformSelector
from dei_framework.search.sharing import Admit, SharingPolicy, TopKSharing
from dei_framework.search.slot_random import SlotGenerator, initial_states

__all__ = [
    "Admission",
    "Kind",
    "Result",
    "RoundEnd",
    "Scheduler",
    "TellReport",
    "WorkItem",
    "derive_seed",
    # Imported here before the module's parts moved out: still importable from it.
    "AddStatus",
    "Admit",
    "DeferredMessages",
    "DeferredText",
    "OperatorRequest",
    "SlotGenerator",
    "UsageMeter",
    "initial_states",
]


class Scheduler:
    """Red Queen MAP-Elites for one node, as ask/tell.

    Args:
        name: Node name (part of every id, key and seed).
        space: The descriptor space of this node's archive.
        initial_opponents: Texts of the initial opponents (warm start of round 0).
        calls: Operator calls of the whole run, spread evenly over the rounds.
        rounds: Red Queen rounds.
        seed: Run seed; every draw derives from ``(seed, name, round, slot)``.
        new_fraction: Share of calls that write a new program instead of mutating an elite.
        others: Elites besides the parent handed to each mutation.
        lag: How far planning may run ahead of admission: slot ``s`` is planned once every slot
            before ``s - lag`` is admitted. A result up to ``lag / concurrency`` times the mean
            latency late stalls nothing (``dei-run`` gives 6x the operator's concurrency); a
            larger lag means staler parents. The same value is needed to reproduce a run.
        archive: Builds each round's fresh archive (``archive(space=, qd_offset=, seed=)``).
        selector: Chooses parents (default: the paper's uniform sampling).
        sharing: Decides where received champions may go (default: opponents and cells).
        qd_offset: The domain's lowest fitness (QD-score offset).
        own_window: Own champions kept in the opponent pool.
        peer_window: Received champions kept in the opponent pool.
        lifecycle: ``"reset"`` (a fresh archive each round, Red Queen opponent pool) or
            ``"continual"`` (one archive for the run; received champions compete for its
            cells; the opponent pool stays ``initial_opponents``).
        seeds: Texts of seed programs (:meth:`~dei_framework.contract.domain.Domain.seed_programs`):
            evaluated in the warm start of every fresh archive (round 0's with ``continual``,
            every round's with ``reset``), after the opponents, and offered to it; never
            opponents. A seed whose text is an opponent's (an initial one, or with ``reset`` a
            champion of this node) is warmed once, as the opponent.
        prompt_needs: What the domain's prompts show besides the parent
            (:attr:`~dei_framework.contract.domain.Domain.prompt_needs`): the inspirations
            each call's item carries, and what candidates keep (their evaluation's info,
            their ancestors). ``None``: nothing, as a domain that asks for nothing.

    Raises:
        ValueError: ``rounds``, ``calls`` or ``lag`` out of range, or an unknown lifecycle.
    """

    def __init__(
        self,
        *,
        name: str,
        space: DescriptorSpace,
        initial_opponents: Sequence[str],
        calls: int,
        rounds: int = 3,
        seed: int = 0,
        new_fraction: float = 0.1,
        others: int = 2,
        lag: int = 8,
        archive: ArchiveFactory = GridArchive,
        selector: ParentSelector | None = None,
        sharing: SharingPolicy | None = None,
        qd_offset: float = 0.0,
        own_window: int = OWN_WINDOW,
        peer_window: int = PEER_WINDOW,
        lifecycle: str = "reset",
        seeds: Sequence[str] = (),
        prompt_needs: PromptNeeds | None = None,
    ) -> None:
        if rounds < 1 or calls < 0 or lag < 0:
            raise ValueError(
                f"need rounds >= 1, calls >= 0, lag >= 0; got {rounds}, {calls}, {lag}"
            )
        if lifecycle not in LIFECYCLES:
            raise ValueError(f"lifecycle must be one of {', '.join(LIFECYCLES)}, got {lifecycle!r}")
        self.lifecycle = lifecycle
        self.name = name
        self.space = space
        self._axis_names = space.names
        self.calls = calls
        self.rounds = rounds
        self.seed = seed
        self.new_fraction = new_fraction
        self.others = others
        self.lag = lag
        self.selector = selector or UniformSelector()
        self.sharing = sharing or TopKSharing(name="champion")
        self.qd_offset = qd_offset
        self._archive_factory = archive
        self._slots = NodeSlots(seed, name)
        self.pool = OpponentPool(initial_opponents, own_window=own_window, peer_window=peer_window)
        # Seed programs start archives without fighting, so a static domain's seeds do not
        # make it adversarial (initial opponents would: they join the pool).
        opponents = set(initial_opponents)
        self.seeds: tuple[Candidate, ...] = tuple(
            Candidate(text=text, source=CandidateSource.SEED, operator="seed")
            for text in dict.fromkeys(seeds)
            if text not in opponents
        )
        # Resumable state.
        self.round = 0
        self.started = False
        self.archive = self._new_archive(0)
        self.previous_cells: set[tuple[int, ...]] = set()
        self.lineage_errors: dict[str, str] = {}
        self.prompt_needs = prompt_needs or PromptNeeds()
        self.history: list[RoundEvent] = []
        self.stopped: str | None = None
        self.completed = 0  # calls admitted this round
        self._opponents_fought: list[dict[str, Any]] = []
        self._warm = 0  # warm + peer items of this round (they take orders 0 .. _warm - 1)
        self._next_order = 0  # next order to admit
        self._next_slot = 0  # next call slot to plan
        self._novel = self._valid_received = 0
        self._planned: list[WorkItem] = []  # planned, not yet asked
        self._asked: dict[int, WorkItem] = {}  # asked, not yet admitted, by order
        self._buffer: dict[int, Told] = {}  # told, waiting for earlier orders
        #: Quotas a dynamic budget allocator set, by round (see :meth:`set_round_quota`).
        self.round_quotas: dict[int, int] = {}
        self.allocated = False

    @classmethod
    def for_domain(cls, domain: Domain, *, name: str, calls: int, **settings: Any) -> Scheduler:
        """A scheduler over ``domain``'s default axes, initial opponents, fitness floor and
        archive lifecycle.

        ``settings`` are the other constructor arguments (``rounds``, ``seed``, ``selector``,
        ``lifecycle`` to override the domain's ...).
        """
        offered = {spec.name: spec.axis for spec in domain.descriptor_axes()}
        space = DescriptorSpace([offered[axis] for axis in domain.default_axes])
        settings.setdefault("lifecycle", domain.default_lifecycle())
        settings.setdefault("seeds", domain.seed_programs())
        settings.setdefault("prompt_needs", getattr(domain, "prompt_needs", None))
        return cls(
            name=name,
            space=space,
            initial_opponents=domain.initial_opponents(),
            calls=calls,
            qd_offset=domain.fitness_floor,
            **settings,
        )

    # --- queries --------------------------------------------------------------------------------

    def _new_archive(self, round_index: int) -> ArchiveBase:
        seed = derive_seed(self.seed, self.name, round_index, "archive")
        return self._archive_factory(space=self.space, qd_offset=self.qd_offset, seed=seed)

    @property
    def finished(self) -> bool:
        """No work is left: every round ran, or the node stopped."""
        return self.stopped is not None or self.round >= self.rounds

    def round_quota(self, round_index: int) -> int:
        """Calls made in ``round_index``: the run's calls spread evenly over rounds, or the
        quota a budget allocator set for the round (:meth:`set_round_quota`)."""
        if self.allocated:
            return self.round_quotas.get(round_index, 0)
        base, extra = divmod(self.calls, self.rounds)
        return base + (1 if round_index < extra else 0)

    def set_round_quota(self, round_index: int, calls: int) -> None:
        """Sets the calls of a round that has not started (a dynamic budget allocator's
        decision); from then on only rounds given a quota this way make calls."""
        if round_index < self.round or (round_index == self.round and self.started):
            raise RuntimeError(f"{self.name}: round {round_index} started already")
        self.allocated = True
        self.round_quotas[round_index] = int(calls)

    @property
    def opponents(self) -> list[Candidate]:
        """Who this round's candidates fight (fixed from :meth:`start_round` to the round end)."""
        return self.pool.opponents()

    @property
    def in_flight(self) -> int:
        """Items asked but not yet admitted."""
        return len(self._asked)

    def eval_seed(self, round_index: int | None = None) -> int:
        """The evaluation seed of a round (default: the current one); every candidate of a round
        meets the same conditions."""
        return self._slots.eval_seed(self.round if round_index is None else round_index)

    @property
    def draining(self) -> bool:
        """Every call of the started round is handed out: the round ends when they are in.

        A transient failure reopens a call (another slot replaces it), so this can turn
        ``False`` again.
        """
        if not self.started or self._planned or self._next_order < self._warm:
            return False
        pending = self._next_slot - (self._next_order - self._warm)  # planned, not admitted
        return self.completed + pending >= self.round_quota(self.round)

    def next_round_calls(self) -> list[WorkItem]:
        """The next round's calls that nothing in this round decides, for a driver to make
        while this round drains: its from-scratch (``"new"``) slots within its quota, which
        have no parent and no feedback. Their requests are exactly those the next round hands
        out; their ``order`` is ``-1`` (the next warm start's size is not known yet), so only
        the call may be made early — the next round asks them again, with their order, for the
        evaluation. Empty in the last round or once the node stopped.
        """
        return _planning.next_round_calls(self)

    # --- the round ------------------------------------------------------------------------------

    def start_round(self, received: Iterable[Candidate] = ()) -> list[Candidate]:
        """Starts the current round: warm start, then received champions.

        ``reset``: the (fresh) archive is warmed with the whole opponent pool, and received
        champions may join the pool. ``continual``: only the first round is warmed (with the
        initial programs); the archive carries over, and received champions go to cells only.

        Args:
            received: Champions from peers, already parsed (``text`` canonical) and checked by
                the caller; ``node``, ``round`` and ``operator`` say where they came from.

        Returns:
            The received champions the sharing policy admitted anywhere (for the run log).
        """
        if self.started or self.finished:
            raise RuntimeError("start_round: the round already started or the run is finished")
        items, accepted = warm_start(
            received,
            round_index=self.round,
            continual=self.lifecycle == "continual",
            pool=self.pool,
            seeds=self.seeds,
            sharing=self.sharing,
            slots=self._slots,
        )
        self._opponents_fought = self.pool.describe()
        self._warm = len(items)
        self._planned = items
        self.started = True
        _planning.plan(self)
        return accepted

    def ask(self, n: int = 1) -> list[WorkItem]:
        """Up to ``n`` items to work on, in slot order (fewer, possibly none, when the next
        slots wait for earlier ones to be admitted, or the round's quota is planned).

        A round that was not started is started with no received champions.
        """
        if self.finished:
            return []
        if not self.started:
            self.start_round()
        items, self._planned = self._planned[:n], self._planned[n:]
        for item in items:
            self._asked[item.order] = item
        return items

    def tell(self, results: Iterable[Result]) -> TellReport:
        """Takes results in any order; admits every result whose earlier slots are all in.

        Each result waits in the reorder buffer as the same entry a :meth:`tell_batch` row
        makes, and is admitted the same way.

        Returns:
            The admissions made now (in slot order) and the round end, if the round ended.
        """
        for result in results:
            order = result.item.order
            if result.item.round != self.round or order not in self._asked:
                raise ValueError(f"tell: {result.item.key} was not asked or was already told")
            self._buffer[order] = Told.of_result(result)
        return self._admit_buffered()

    def tell_batch(
        self,
        items: Sequence[WorkItem],
        *,
        texts: Sequence[str | None],
        fitness: Sequence[float | None],
        descriptors: Any,
        data: Sequence[Any] | None = None,
        errors: Sequence[str | None] | None = None,
        operator: str = "",
        info: Mapping[str, Any] | None = None,
    ) -> TellReport:
        """Tells many call items' outcomes at once, as columns (pyribs' ``tell`` shape).

        The same admissions as :meth:`tell` with one :class:`Result` per item (the same
        archives, selector and lineage updates, in slot order through the same reorder buffer),
        for a fraction of the cost: cells are computed for the whole batch in one pass, and
        a candidate record is built only for what the archive takes (or the selector is told).

        Args:
            items: Asked ``"new"``/``"mutate"`` items (any order, any subset of those asked).
            texts: Canonical program text per item. An admitted candidate reads its text
                from here when its ``text`` is first read (a :class:`DeferredText`): with a
                lazy sequence that formats on access, texts nobody reads are never written
                (the sequence is kept until then).
            fitness: Fitness per item; ``None`` marks an invalid item (nothing parsed or the
                evaluation failed).
            descriptors: Raw descriptor values, one row per item and one column per axis of
                :attr:`space` (``space.names`` order), e.g. an ``(n, axes)`` array. Rows of
                invalid items are ignored (any finite numbers).
            data: The parsed form per item, kept on admitted candidates (``Candidate.data``)
                so operators need not parse their text again. Give values nothing else
                will modify (a row of an array you reuse would change under the archive).
            errors: Why each invalid item is invalid (the parent's lineage feedback).
            operator: Label of the operator that wrote the programs.
            info: When given, each item's ``evaluated`` event is made too (for a run log),
                ending with these fields, and returned in :attr:`TellReport.events`.

        Returns:
            The round end, if the round ended, and ``statuses``: the items admitted now (in
            slot order: earlier-told items waiting for a slower slot too), with what the
            archive did (Results told earlier through :meth:`tell` come in ``admitted``).

        Raises:
            ValueError: an item was not asked, was already told, or is not a call item; or
                the columns' lengths differ from the items'.
        """
        rows = batch_rows(
            self.archive,
            self._axis_names,
            items,
            texts=texts,
            fitness=fitness,
            descriptors=descriptors,
            data=data,
            errors=errors,
            operator=operator,
            info=info,
        )
        for told in rows:
            item = told.item
            if (
                item.round != self.round
                or item.order not in self._asked
                or item.order in self._buffer
            ):
                raise ValueError(f"tell_batch: {item.key} was not asked or was already told")
            if not item.needs_call:
                raise ValueError(f"tell_batch: {item.key} is a {str(item.kind)!r} item; tell() it")
            self._buffer[item.order] = told
        return self._admit_buffered()

    def _admit_buffered(self) -> TellReport:
        """Admits every buffered item whose earlier slots are in, then ends the round if its
        last slot was admitted."""
        admitted, statuses, events = [], [], []
        while self._next_order in self._buffer:
            told = self._buffer.pop(self._next_order)
            del self._asked[self._next_order]
            candidate, status = admit(self, told)
            if told.result is not None:  # told through tell: reported as an Admission
                admitted.append(Admission(result=told.result, candidate=candidate, status=status))
            else:
                statuses.append((told.item, status))
                if told.info is not None:
                    offered = None if told.fitness is None else told
                    events.append(
                        evaluated_event(
                            told.item,
                            told.operator,
                            status,
                            offered,
                            error=told.error,
                            info=told.info,
                        )
                    )
            self._next_order += 1
            _planning.plan(self)
        round_end = None
        quota_done = self.completed >= self.round_quota(self.round)
        if (
            self.started
            and self._next_order >= self._warm
            and not self._planned
            and not self._asked
            and quota_done
        ):
            round_end = end_round(self)
        return TellReport(
            admitted=tuple(admitted),
            statuses=tuple(statuses),
            round_end=round_end,
            events=tuple(events),
        )

    def stop(self, reason: str) -> None:
        """Stops the node for good (e.g. its operator failed beyond retrying)."""
        self.stopped = reason

    # --- checkpoints ----------------------------------------------------------------------------

    def state_json(self) -> dict[str, Any]:
        """Everything needed to continue later, taken at any moment between two calls.

        Results told but not yet admitted are not kept: their items are listed again as
        outstanding, so a resumed driver asks them again (the calls are found by their keys in
        the run's call record).
        """
        return _scheduler_state.state_json(self)

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continues from :meth:`state_json` output."""
        _scheduler_state.restore(self, state)
