"""The ask/tell core of one node: MAP-Elites rounds as a synchronous state machine.

A round ends with a champion, published to peers; what a round start does depends on the
archive lifecycle: ``reset`` (Red Queen rounds, DRQ and DEI) starts a fresh archive warmed with
the opponent pool, which grows with the champions; ``continual`` (classic MAP-Elites, island
models) keeps the archive, so a round is a migration interval: peers' champions are evaluated
and offered to it, and the opponent pool stays the initial one (a static objective).

:class:`Scheduler` holds everything a node decides — the archive, the opponent pool, the
emitter, the round quotas — and nothing it waits for: no event loop, no operator, no transport.
A driver (the built-in :class:`~dei_framework.runtime.driver.SearchDriver`, or a loop of your own)
asks it for work, performs the work any way it likes, and tells it the results::

    scheduler.start_round(received=[...])        # at each round's start (optional when lone)
    while not scheduler.finished:
        items = scheduler.ask(4)                 # WorkItems: evaluate this text, or call first
        results = [do(item) for item in items]   # operator call + evaluation, in any order
        report = scheduler.tell(results)         # admissions (AddStatus), maybe a RoundEnd

Determinism by construction (no batch barrier): :meth:`Scheduler.tell` accepts results in any
order and admits them in slot order through a reorder buffer. Mutation slot ``s`` is planned —
its parents drawn by the emitter from a generator seeded by ``(seed, node, round, s)`` —
exactly when every slot before ``s - lag`` has been admitted, from the archive as it stands
then. So the plans, and therefore a seeded offline run, are the same whatever the timing;
:meth:`Scheduler.ask` returns fewer items than asked when the next slot is not planned yet.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs
import numpy as np

from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.domain import LIFECYCLES, Domain
from dei_framework.contract.operators import DeferredMessages, OperatorRequest, UsageMeter
from dei_framework.contract.records import Candidate, DeferredText
from dei_framework.search.archives import AddStatus, ArchiveBase, ArchiveFactory, GridArchive
from dei_framework.search.opponents import OWN_WINDOW, PEER_WINDOW, OpponentPool
from dei_framework.search.selectors import ParentSelector, UniformSelector
from dei_framework.search.sharing import Admit, SharingPolicy, TopKSharing
from dei_framework.search.slot_random import SlotGenerator, initial_states

Kind = Literal["warm", "peer", "new", "mutate"]
#: Slots whose generators' starting states are computed together (one vectorised pass).
_RNG_BLOCK = 256
#: Blocks of starting states kept (the current round's and the next one's early calls).
_RNG_BLOCKS_KEPT = 8


def derive_seed(*parts: int | str) -> int:
    """A 31-bit seed derived from parts (ints or strings), stable across Python versions."""
    return _seed_of("/".join(map(str, parts)))


def _seed_of(joined: str) -> int:
    """:func:`derive_seed` of parts already joined with ``/``."""
    digest = hashlib.blake2b(joined.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFFFFFF


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
            received champion).
        seed: Seed for the operator call.
        eval_seed: Seed for the evaluation (one per node and round: equal conditions).
        parent: The elite to mutate (``"mutate"`` only).
        others: More elites for inspiration or crossover.
        feedback: The last parse error in the parent's lineage.
        program: For ``"warm"`` and ``"peer"`` items, the program to evaluate.
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

    @property
    def needs_call(self) -> bool:
        """``True`` when an operator must write the program first."""
        return self.kind in ("new", "mutate")

    def request(self, domain: Domain, *, meter: UsageMeter | None = None) -> OperatorRequest:
        """The operator request of a call item, with the domain's chat messages (written when
        the operator first reads them: offline operators that ignore them cost nothing) and
        the call's ``meter``, if any."""
        messages = DeferredMessages(functools.partial(
            domain.messages, self.kind, parent=self.parent, others=self.others,
            feedback=self.feedback))  # fmt: skip
        return OperatorRequest(key=self.key, kind=self.kind, messages=messages,
                               parent=self.parent, others=self.others, feedback=self.feedback,
                               seed=self.seed, meter=meter)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self, recurse=False)
        data["parent"] = self.parent.to_json() if self.parent else None
        data["others"] = [o.to_json() for o in self.others]
        data["program"] = self.program.to_json() if self.program else None
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkItem:
        values = dict(data)
        values["parent"] = Candidate.from_json(data["parent"]) if data["parent"] else None
        values["others"] = tuple(Candidate.from_json(o) for o in data["others"])
        values["program"] = Candidate.from_json(data["program"]) if data["program"] else None
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

    def event(self) -> dict[str, Any] | None:
        """The ``evaluated`` event of the run log (``None`` for a failed call)."""
        result, item = self.result, self.result.item
        if result.call_failed:
            return None
        operator = item.program.operator if item.program else result.operator
        candidate = self.candidate
        if candidate is None:
            return _evaluated_event(item, operator, None, error=result.error, info=result.info)
        return _evaluated_event(item, operator, self.status, fitness=candidate.fitness,
                               descriptor=dict(candidate.descriptor), cell=candidate.cell,
                               info=result.info)  # fmt: skip


def _evaluated_event(item: WorkItem, operator: str, status: AddStatus | None, *,
                    fitness: float | None = None, descriptor: dict[str, float] | None = None,
                    cell: Sequence[int] | None = None, error: str | None = None,
                    info: Mapping[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The ``evaluated`` event of an item (``status`` ``None``: invalid, with ``error``), its
    fields in the run log's order, ``info``'s last."""
    event: dict[str, Any] = {
        "event": "evaluated", "id": item.id, "node": item.node, "round": item.round,
        "operator": operator, "kind": item.kind,
        "parent": item.parent.id if item.parent else None, "slot": item.order,
    }  # fmt: skip
    if status is None:
        event.update(status="invalid", error=error, fitness=None, descriptor=None, cell=None)
    else:
        event.update(status=status.label, fitness=fitness, descriptor=descriptor, cell=list(cell))
    event.update(info)
    return event


@attrs.frozen(kw_only=True)
class RoundEnd:
    """A round that just ended.

    Attributes:
        event: The ``round`` event (calls, stats, champion, opponents fought, novelty...).
        archive: The round's final archive.
        champion: Its best elite, or ``None``.
    """

    event: dict[str, Any]
    archive: ArchiveBase
    champion: Candidate | None


@attrs.frozen(kw_only=True)
class TellReport:
    """What :meth:`Scheduler.tell` or :meth:`Scheduler.tell_batch` did.

    Attributes:
        admitted: Results told through :meth:`~Scheduler.tell` admitted by this call, in slot
            order (earlier-told results that were waiting for a slower slot are admitted now
            too).
        statuses: Items told through :meth:`~Scheduler.tell_batch` admitted by this call, in
            slot order, each with what the archive did (``None`` when invalid).
        round_end: The round that ended, if one did.
        events: The ``evaluated`` events of the ``statuses`` items told with ``info`` (what
            :meth:`Admission.event` gives for an item told through :meth:`~Scheduler.tell`).
    """

    admitted: tuple[Admission, ...] = ()
    statuses: tuple[tuple[WorkItem, AddStatus | None], ...] = ()
    round_end: RoundEnd | None = None
    events: tuple[dict[str, Any], ...] = ()


class _Told:
    """One item told through :meth:`Scheduler.tell_batch`, waiting in the reorder buffer (a
    plain record: a batch makes one per item)."""

    __slots__ = ("item", "texts", "position", "fitness", "values", "cell", "index", "data",
                 "error", "operator", "info")  # fmt: skip

    def __init__(self, item, texts, position, fitness, values, cell, index, data, error,
                 operator, info):  # fmt: skip
        self.item, self.texts, self.position = item, texts, position
        self.fitness, self.values, self.cell, self.index = fitness, values, cell, index
        self.data, self.error, self.operator, self.info = data, error, operator, info


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
        emitter: Chooses parents (default: the paper's uniform sampling).
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
        emitter: ParentSelector | None = None,
        sharing: SharingPolicy | None = None,
        qd_offset: float = 0.0,
        own_window: int = OWN_WINDOW,
        peer_window: int = PEER_WINDOW,
        lifecycle: str = "reset",
        seeds: Sequence[str] = (),
    ) -> None:
        if rounds < 1 or calls < 0 or lag < 0:
            raise ValueError(f"need rounds >= 1, calls >= 0, lag >= 0; got {rounds}, {calls}, "
                             f"{lag}")
        if lifecycle not in LIFECYCLES:
            raise ValueError(f"lifecycle must be one of {', '.join(LIFECYCLES)}, "
                             f"got {lifecycle!r}")  # fmt: skip
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
        self.emitter = emitter or UniformSelector()
        self.sharing = sharing or TopKSharing(name="champion")
        self.qd_offset = qd_offset
        self._archive_factory = archive
        self._eval_seeds: dict[int, int] = {}
        self._rng_blocks: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self.pool = OpponentPool(initial_opponents, own_window=own_window,
                                 peer_window=peer_window)  # fmt: skip
        # Seed programs start archives without fighting, so a static domain's seeds do not
        # make it adversarial (initial opponents would: they join the pool).
        opponents = set(initial_opponents)
        self.seeds: tuple[Candidate, ...] = tuple(
            Candidate(text=text, source="seed", operator="seed")
            for text in dict.fromkeys(seeds) if text not in opponents
        )  # fmt: skip
        # Resumable state.
        self.round = 0
        self.started = False
        self.archive = self._new_archive(0)
        self.previous_cells: set[tuple[int, ...]] = set()
        self.lineage_errors: dict[str, str] = {}
        self.history: list[dict[str, Any]] = []
        self.stopped: str | None = None
        self.completed = 0  # calls admitted this round
        self._opponents_fought: list[dict[str, Any]] = []
        self._warm = 0  # warm + peer items of this round (they take orders 0 .. _warm - 1)
        self._next_order = 0  # next order to admit
        self._next_slot = 0  # next call slot to plan
        self._novel = self._valid_received = 0
        self._planned: list[WorkItem] = []  # planned, not yet asked
        self._asked: dict[int, WorkItem] = {}  # asked, not yet admitted, by order
        self._buffer: dict[int, Result] = {}  # told, waiting for earlier orders
        #: Quotas a dynamic budget allocator set, by round (see :meth:`set_round_quota`).
        self.round_quotas: dict[int, int] = {}
        self.allocated = False

    @classmethod
    def for_domain(cls, domain: Domain, *, name: str, calls: int, **settings: Any) -> Scheduler:
        """A scheduler over ``domain``'s default axes, initial opponents, fitness floor and
        archive lifecycle.

        ``settings`` are the other constructor arguments (``rounds``, ``seed``, ``emitter``,
        ``lifecycle`` to override the domain's ...).
        """
        offered = {spec.name: spec.axis for spec in domain.descriptor_axes()}
        space = DescriptorSpace([offered[axis] for axis in domain.default_axes])
        settings.setdefault("lifecycle", domain.default_lifecycle())
        settings.setdefault("seeds", domain.seed_programs())
        return cls(name=name, space=space, initial_opponents=domain.initial_opponents(),
                   calls=calls, qd_offset=domain.fitness_floor, **settings)  # fmt: skip

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
        round_index = self.round if round_index is None else round_index
        seed = self._eval_seeds.get(round_index)
        if seed is None:  # derived once per round, not once per slot
            seed = self._eval_seeds[round_index] = derive_seed(self.seed, self.name, round_index,
                                                               "eval")  # fmt: skip
        return seed

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
        following = self.round + 1
        if self.finished or following >= self.rounds:
            return []
        if self.allocated and following not in self.round_quotas:
            return []  # its quota is decided at the round boundary, from this round's outcome
        items = []
        for slot in range(self.round_quota(following)):
            rng = self._slot_rng(following, slot)
            if rng.random() < self.new_fraction:  # the draw _plan_slot makes first
                key = f"{self.name}/r{following}/s{slot}"
                items.append(WorkItem(id=f"{self.name}-r{following}-s{slot}", key=key,
                                      node=self.name, round=following, order=-1, kind="new",
                                      seed=derive_seed(self.seed, key),
                                      eval_seed=self.eval_seed(following)))  # fmt: skip
        return items

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
        continual = self.lifecycle == "continual"
        # A persistent archive holds every earlier warm start already (the objective is fixed).
        own = [] if continual and self.round > 0 else self.pool.opponents()
        # A fresh archive's start; a seed that became an opponent (reset: a champion of this
        # node) is warmed once, as the opponent.
        fighting = {opponent.text for opponent in own}
        seeds = [] if continual and self.round > 0 else [
            seed for seed in self.seeds if seed.text not in fighting]  # fmt: skip
        accepted = []
        peers: list[tuple[Candidate, bool]] = []
        for champion in received:
            admit = self.sharing.on_receive(champion)
            if continual:  # a static objective: the opponent pool never grows
                admit &= Admit.CELLS
            if not admit:
                continue
            accepted.append(champion)
            if Admit.OPPONENTS in admit:
                self.pool.add_champion(attrs.evolve(champion, source="peer"))
            peers.append((champion, Admit.CELLS in admit))
        self._opponents_fought = self.pool.describe()
        eval_seed = self.eval_seed()
        items = []
        for index, opponent in enumerate(own):
            label = opponent.source
            if opponent.source != "initial":
                label = f"{opponent.source}:{opponent.node}"
            items.append(self._item(kind="warm", order=len(items), suffix=f"w{index}",
                                    eval_seed=eval_seed,
                                    program=attrs.evolve(opponent, operator=label)))  # fmt: skip
        for index, seed in enumerate(seeds, start=len(own)):  # ids go on from the opponents'
            items.append(self._item(kind="warm", order=len(items), suffix=f"w{index}",
                                    eval_seed=eval_seed, program=seed))  # fmt: skip
        for index, (champion, to_cells) in enumerate(peers):
            program = attrs.evolve(champion, operator=f"peer:{champion.node}",
                                   source="peer" if to_cells else "peer-excluded")  # fmt: skip
            items.append(self._item(kind="peer", order=len(items), suffix=f"p{index}",
                                    eval_seed=eval_seed, program=program))  # fmt: skip
        self._warm = len(items)
        self._planned = items
        self.started = True
        self._plan()
        return accepted

    def _item(self, *, kind: Kind, order: int, suffix: str, eval_seed: int, **fields) -> WorkItem:
        key = f"{self.name}/r{self.round}/{suffix}"
        return WorkItem(id=f"{self.name}-r{self.round}-{suffix}", key=key, node=self.name,
                        round=self.round, order=order, kind=kind, seed=derive_seed(self.seed, key),
                        eval_seed=eval_seed, **fields)  # fmt: skip

    def _plan(self) -> None:
        """Plans every call slot the lag rule and the quota allow now (deterministic point)."""
        if self._next_order < self._warm:
            return  # the archive is still warming up
        quota = self.round_quota(self.round)
        while True:
            slot = self._next_slot
            admitted = self._next_order - self._warm  # call slots admitted
            if slot - self.lag > admitted or self.completed + slot - admitted >= quota:
                return
            self._planned.append(self._plan_slot(slot))
            self._next_slot += 1

    def _slot_rng(self, round_index: int, slot: int) -> SlotGenerator:
        """The generator of a call slot: it draws what ``np.random.default_rng`` seeded by
        ``(seed, node, round, slot)`` draws, for a fraction of the cost (see
        :mod:`~dei_framework.search.slot_random`)."""
        block, offset = divmod(slot, _RNG_BLOCK)
        states = self._rng_blocks.get((round_index, block))
        if states is None or offset >= len(states):  # new, or cut short by an earlier quota
            if len(self._rng_blocks) >= _RNG_BLOCKS_KEPT:
                self._rng_blocks.clear()
            start = block * _RNG_BLOCK
            end = max(slot + 1, min(start + _RNG_BLOCK, self.round_quota(round_index)))
            prefix = f"{self.seed}/{self.name}/{round_index}"
            states = self._rng_blocks[round_index, block] = initial_states(
                [_seed_of(f"{prefix}/{s}") for s in range(start, end)])  # derive_seed's
        return SlotGenerator(*states[offset])

    def _plan_slot(self, slot: int) -> WorkItem:
        rng = self._slot_rng(self.round, slot)
        name, round_index = self.name, self.round
        key = f"{name}/r{round_index}/s{slot}"
        parent, others, feedback, kind = None, (), None, "new"
        if len(self.archive) and rng.random() >= self.new_fraction:
            parent, *drawn = self.emitter.select(self.archive, rng, 1 + self.others)
            others = tuple([o for o in drawn if o.id != parent.id])
            feedback, kind = self.lineage_errors.get(parent.id), "mutate"
        return WorkItem(id=f"{name}-r{round_index}-s{slot}", key=key, node=name,
                        round=round_index, order=self._warm + slot, kind=kind,
                        seed=_seed_of(f"{self.seed}/{key}"),  # = derive_seed(self.seed, key)
                        eval_seed=self.eval_seed(), parent=parent, others=others,
                        feedback=feedback)  # fmt: skip

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

        Returns:
            The admissions made now (in slot order) and the round end, if the round ended.
        """
        for result in results:
            order = result.item.order
            if result.item.round != self.round or order not in self._asked:
                raise ValueError(f"tell: {result.item.key} was not asked or was already told")
            self._buffer[order] = result
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
        archives, emitter and lineage updates, in slot order through the same reorder buffer),
        for a fraction of the cost: cells are computed for the whole batch in one pass, and
        a candidate record is built only for what the archive takes (or the emitter is told).

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
        count = len(items)
        columns = [texts, fitness, *(column for column in (data, errors) if column is not None)]
        if any(len(column) != count for column in columns):
            raise ValueError("tell_batch: texts, fitness, data and errors need one entry per item")
        values = np.asarray(descriptors, dtype=float).reshape(count, len(self.space.axes))
        scores = [None if value is None else float(value) for value in
                  (fitness.tolist() if isinstance(fitness, np.ndarray) else fitness)]  # fmt: skip
        valid = [k for k in range(count) if scores[k] is not None]
        placed = self.archive.place(values[valid]) if valid else ([], [])
        cells: list[Any] = [None] * count
        indices: list[Any] = [None] * count
        for k, cell, index in zip(valid, *placed, strict=True):
            cells[k], indices[k] = cell, index
        rows = values.tolist()
        for k, item in enumerate(items):
            order = item.order
            if item.round != self.round or order not in self._asked or order in self._buffer:
                raise ValueError(f"tell_batch: {item.key} was not asked or was already told")
            if not item.needs_call:
                raise ValueError(f"tell_batch: {item.key} is a {item.kind!r} item; tell() it")
            self._buffer[order] = _Told(
                item, texts, k, scores[k], rows[k], cells[k], indices[k],
                None if data is None else data[k], None if errors is None else errors[k], operator,
                info,
            )  # fmt: skip
        return self._admit_buffered()

    def _admit_buffered(self) -> TellReport:
        """Admits every buffered result whose earlier slots are in, then ends the round if
        its last slot was admitted."""
        admitted, statuses, events = [], [], []
        while self._next_order in self._buffer:
            result = self._buffer.pop(self._next_order)
            del self._asked[self._next_order]
            if type(result) is _Told:
                status = self._admit_told(result)
                statuses.append((result.item, status))
                if result.info is not None:
                    events.append(self._told_event(result, status))
            else:
                admitted.append(self._admit(result))
            self._next_order += 1
            self._plan()
        round_end = None
        quota_done = self.completed >= self.round_quota(self.round)
        if self.started and self._next_order >= self._warm and not self._planned \
                and not self._asked and quota_done:
            round_end = self._end_round()
        return TellReport(admitted=tuple(admitted), statuses=tuple(statuses),
                          round_end=round_end, events=tuple(events))  # fmt: skip

    def _told_event(self, told: _Told, status: AddStatus | None) -> dict[str, Any]:
        """The ``evaluated`` event of an item told through :meth:`tell_batch` (what
        :meth:`Admission.event` gives for one told through :meth:`tell`)."""
        if told.fitness is None:
            return _evaluated_event(told.item, told.operator, None, error=told.error,
                                   info=told.info)  # fmt: skip
        return _evaluated_event(
            told.item, told.operator, status, fitness=told.fitness,
            descriptor=dict(zip(self._axis_names, told.values, strict=True)), cell=told.cell,
            info=told.info,
        )  # fmt: skip

    def _admit_told(self, told: _Told) -> AddStatus | None:
        """:meth:`_admit` for a call item told through :meth:`tell_batch` (the same effects)."""
        item = told.item
        self.completed += 1
        parent = item.parent
        if told.fitness is None:
            if parent is not None and told.error:
                self.lineage_errors[parent.id] = told.error
            if item.kind == "mutate":
                self.emitter.tell(parent, None, AddStatus.NOT_ADDED)
            return None
        status = self.archive.status_at(told.index, told.fitness)
        learns = item.kind == "mutate" and "learns" in self.emitter.capabilities
        if not status and not learns:
            return status  # nothing would change: no record needed
        candidate = Candidate(
            id=item.id, text=DeferredText(told.texts, told.position), fitness=told.fitness,
            descriptor=dict(zip(self._axis_names, told.values, strict=True)), cell=told.cell,
            node=self.name, operator=told.operator, round=self.round,
            parent=parent.id if parent is not None else None, data=told.data,
        )  # fmt: skip
        if status:
            status = self.archive.add_at(candidate, told.index)
        if item.kind == "mutate":
            self.emitter.tell(parent, candidate, status)
        return status

    def _admit(self, result: Result) -> Admission:
        item = result.item
        if result.call_failed:
            return Admission(result=result, candidate=None, status=None)
        if item.needs_call:
            self.completed += 1
        if not result.valid:
            if item.parent is not None and result.error:
                self.lineage_errors[item.parent.id] = result.error
            if item.kind == "mutate":
                self.emitter.tell(item.parent, None, AddStatus.NOT_ADDED)
            return Admission(result=result, candidate=None, status=None)
        operator = item.program.operator if item.program else result.operator
        archive = self.archive
        cell = archive.cell_of(result.descriptor)
        candidate = Candidate(
            id=item.id, text=result.text or "", fitness=float(result.fitness),
            descriptor=dict(result.descriptor), cell=cell,
            node=self.name, operator=operator, round=self.round,
            parent=item.parent.id if item.parent else None, data=result.data,
        )  # fmt: skip
        if item.kind == "peer":
            self._valid_received += 1
            if candidate.cell not in self.previous_cells:
                self._novel += 1
            if item.program.source == "peer-excluded":
                return Admission(result=attrs.evolve(result, error="not admitted (sharing policy)",
                                                     fitness=None, descriptor=None),
                                 candidate=None, status=None)  # fmt: skip
            # reset: peers fill cells the warm start left empty; continual: a migrant competes
            # for its cell like any candidate (an island model), or it could never improve one.
            add = self.archive.add if self.lifecycle == "continual" else self.archive.add_if_empty
            status = add(candidate)
        elif type(archive).add is ArchiveBase.add:
            # What add does, without placing the descriptor a second time: the cell is this.
            status = archive.add_at(candidate, archive.flat_index(cell))
        else:  # an archive with its own add
            status = archive.add(candidate)
        if item.kind == "mutate":
            self.emitter.tell(item.parent, candidate, status)
        return Admission(result=result, candidate=candidate, status=status)

    def _end_round(self) -> RoundEnd:
        continual = self.lifecycle == "continual"
        # A continual archive goes on changing next round: the round's end is a snapshot.
        finished = self._snapshot() if continual else self.archive
        champion = finished.best()
        # A champion that is an initial opponent or a seed (evaluated in the warm start) is no
        # work of the search: it is marked, and champion-level figures (generality) use the
        # round's best other elite instead.
        initial = {opponent.text for opponent in self.pool.initial}
        initial.update(seed.text for seed in self.seeds)
        champion_initial = champion is not None and champion.text in initial
        event = {
            "event": "round", "node": self.name, "round": self.round,
            "calls": self.completed, "stats": finished.stats().to_json(),
            "champion": champion.to_json() if champion else None,
            "champion_initial": champion_initial,
            "received": self._valid_received,
            "niche_novelty": self._novel / self._valid_received if self._valid_received else None,
            "opponents": self._opponents_fought,
            "emitter": self.emitter.name, "archive_kind": finished.kind,
            "generality": None,
        }  # fmt: skip
        if champion_initial:
            others = [elite for elite in finished if elite.text not in initial]
            best_other = max(others, key=lambda elite: elite.fitness) if others else None
            event["generality_champion"] = best_other.to_json() if best_other else None
        self.history.append(event)
        if champion is not None and not continual:
            self.pool.add_champion(Candidate(text=champion.text, source="own", node=self.name,
                                             round=self.round, operator=champion.operator))
        self.previous_cells = {elite.cell for elite in finished}
        self.round += 1
        self.started = False
        self.completed = self._warm = self._next_order = self._next_slot = 0
        self._novel = self._valid_received = 0
        self._opponents_fought = []
        if not continual:  # a continual node goes on with its archive and its emitter's memory
            self.archive = self._new_archive(self.round)
            self.emitter.reset()
        return RoundEnd(event=event, archive=finished, champion=champion)

    def _snapshot(self) -> ArchiveBase:
        """A copy of the archive as it stands (once per round: its cost is the archive's)."""
        return self._new_archive(self.round).fill_from(self.archive)

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
        outstanding = sorted([*self._asked.values(), *self._planned], key=lambda i: i.order)
        state = {
            "round": self.round, "started": self.started, "lag": self.lag,
            "completed": self.completed, "warm": self._warm, "next_order": self._next_order,
            "next_slot": self._next_slot, "novel": self._novel,
            "valid_received": self._valid_received, "opponents_fought": self._opponents_fought,
            "outstanding": [item.to_json() for item in outstanding],
            "archive": self.archive.to_json(),
            "previous_cells": [list(c) for c in sorted(self.previous_cells)],
            "pool": self.pool.to_json(), "lineage_errors": dict(self.lineage_errors),
            "history": self.history, "stopped": self.stopped,
            "emitter": self.emitter.state_json(),
        }  # fmt: skip
        if self.allocated:  # a static run's checkpoint stays as it was
            state["round_quotas"] = {str(r): q for r, q in sorted(self.round_quotas.items())}
        return state

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continues from :meth:`state_json` output."""
        self.round = state["round"]
        self.started = state["started"]
        self.lag = state["lag"]
        self.completed = state["completed"]
        self._warm = state["warm"]
        self._next_order = state["next_order"]
        self._next_slot = state["next_slot"]
        self._novel = state["novel"]
        self._valid_received = state["valid_received"]
        self._opponents_fought = list(state["opponents_fought"])
        self._planned = [WorkItem.from_json(item) for item in state["outstanding"]]
        self._asked, self._buffer = {}, {}
        self.archive = self._new_archive(self.round).fill_from_json(state["archive"])
        self.previous_cells = {tuple(c) for c in state["previous_cells"]}
        self.pool = OpponentPool.from_json(state["pool"])
        self.lineage_errors = dict(state["lineage_errors"])
        self.history = list(state["history"])
        self.stopped = state["stopped"]
        self.emitter.restore(state["emitter"])
        if "round_quotas" in state:
            self.allocated = True
            self.round_quotas = {int(r): int(q) for r, q in state["round_quotas"].items()}
