"""The ask/tell core: deterministic admission in any order, the lag rule, checkpoints, Red Queen
memory windows, sharing policies and selectors, on a small in-test domain."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

import attrs
import numpy as np
import pytest

from dei_framework import (
    AddStatus,
    Admit,
    Candidate,
    CVTArchive,
    DescriptorSpace,
    Domain,
    Evaluation,
    GridArchive,
    ImprovementSelector,
    InvalidProgram,
    OpponentPool,
    Program,
    Scheduler,
    ThresholdAxis,
    UniformAxis,
    UniformSelector,
    evaluate,
)
from dei_framework.contract.descriptors import AxisSpec
from dei_framework.contract.operators import Operator, OperatorReply, OperatorRequest
from dei_framework.evaluation.local import Evaluator
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.driver import DriverSink, SearchDriver
from dei_framework.search.scheduler import WorkItem
from dei_framework.search.sharing import BUILTIN_POLICIES


class Sums(Domain):
    """Programs are lists of small integers; fitness rewards sums near 100 and beating opponents."""

    name = "sums"
    default_axes = ("length", "peak")

    def parse(self, reply: str) -> Program:
        tokens = reply.split()
        if not tokens or not all(t.isdigit() and int(t) < 50 for t in tokens):
            raise InvalidProgram(f"line 1: not a list of integers below 50: {reply[:20]!r}")
        return Program(text=" ".join(tokens), data=[int(t) for t in tokens])

    def evaluate(self, program: Program, opponents: Sequence[Program], *, seed: int) -> Evaluation:
        total = sum(program.data)
        beaten = sum(total > sum(o.data) for o in opponents) / max(len(opponents), 1)
        return Evaluation(
            fitness=beaten + 1 - min(abs(total - 100), 100) / 100,
            descriptor={
                "length": len(program.data),
                "peak": max(program.data),
                "first": program.data[0],
            },
        )

    def descriptor_axes(self):
        return [
            AxisSpec(name="length", axis=ThresholdAxis("length", (2, 4, 6, 8))),
            AxisSpec(name="peak", axis=UniformAxis("peak", 0, 50, 5)),
            AxisSpec(name="first", axis=UniformAxis("first", 0, 50, 5)),
        ]

    def initial_opponents(self) -> list[str]:
        return ["1 1", "20 20"]

    def messages(self, kind, *, parent=None, others=(), feedback=None):
        return [{"role": "user", "content": kind}]


DOMAIN = Sums()


def propose(item) -> str:
    """A deterministic offline operator (what any seeded operator is)."""
    rng = random.Random(item.seed)
    if rng.random() < 0.1:
        return "junk"
    if item.kind == "new":
        return " ".join(str(rng.randrange(50)) for _ in range(rng.randint(1, 8)))
    numbers = item.parent.text.split()
    numbers[rng.randrange(len(numbers))] = str(rng.randrange(50))
    if rng.random() < 0.3 and len(numbers) < 8:
        numbers.append(str(rng.randrange(50)))
    return " ".join(numbers)


def work(scheduler: Scheduler, item):
    opponents = [DOMAIN.parse(o.text) for o in scheduler.opponents]
    text = propose(item) if item.needs_call else item.program.text
    return evaluate(
        DOMAIN, text, opponents, seed=item.eval_seed, axes=scheduler.space.names
    ).result(item, operator="sums-op")


def scheduler(**settings) -> Scheduler:
    return Scheduler.for_domain(
        DOMAIN, name="n", **{"calls": 90, "rounds": 3, "seed": 4, "lag": 6, **settings}
    )


def drive(s: Scheduler, rng: random.Random | None, *, concurrency: int = 4) -> list[dict]:
    """Runs to the end with ``concurrency`` slots, finishing them in ``rng``'s order."""
    in_flight, events = [], []
    while not s.finished:
        in_flight += [(item, work(s, item)) for item in s.ask(concurrency - len(in_flight))]
        assert in_flight, "the scheduler handed out nothing while nothing was in flight"
        pick = rng.randrange(len(in_flight)) if rng else 0
        _, result = in_flight.pop(pick)
        report = s.tell([result])
        events += [a.event() for a in report.admitted]
    return events


def test_any_completion_order_gives_the_same_run() -> None:
    reference = scheduler()
    reference_events = drive(reference, None)
    for trial in range(4):
        other = scheduler()
        assert drive(other, random.Random(trial), concurrency=1 + trial * 2) == reference_events
        assert other.history == reference.history
    assert [e.round for e in reference.history] == [0, 1, 2]
    assert sum(e.calls for e in reference.history) == 90
    made = [e for e in reference_events if e.kind in ("new", "mutate")]
    assert len(made) == 90 and [e.slot for e in made[:3]] == [2, 3, 4]
    assert any(e.status == "invalid" for e in made)
    assert {e.status for e in made} >= {"new", "not_added"}


def test_a_different_seed_or_lag_gives_a_different_run() -> None:
    base = drive(scheduler(), None)
    assert drive(scheduler(seed=5), None) != base
    assert drive(scheduler(lag=0), None) != base


def test_ask_waits_for_the_lag_and_tell_admits_in_slot_order() -> None:
    s = scheduler(lag=2)
    warm = s.ask(10)
    assert [i.kind for i in warm] == ["warm", "warm"]  # calls wait for the warmed archive
    assert s.ask(1) == []
    report = s.tell([work(s, warm[1])])
    assert report.admitted == ()  # slot 1 waits for slot 0
    report = s.tell([work(s, warm[0])])
    assert [a.result.item.order for a in report.admitted] == [0, 1]
    calls = s.ask(10)
    assert [i.key for i in calls] == ["n/r0/s0", "n/r0/s1", "n/r0/s2"]  # slots 0 .. lag
    s.tell([work(s, calls[2]), work(s, calls[1])])
    assert s.ask(10) == []  # slot 3 needs slot 0 admitted
    s.tell([work(s, calls[0])])
    assert [i.key for i in s.ask(10)] == ["n/r0/s3", "n/r0/s4", "n/r0/s5"]
    with pytest.raises(ValueError, match="not asked or was already told"):
        s.tell([work(s, calls[0])])


def test_a_checkpoint_taken_mid_round_resumes_exactly() -> None:
    reference = scheduler()
    reference_events = drive(reference, None)
    interrupted = scheduler()
    events, in_flight = [], []
    for _ in range(40):  # stop somewhere in round 1 with work in flight and results buffered
        in_flight += [(i, work(interrupted, i)) for i in interrupted.ask(4 - len(in_flight))]
        _, result = in_flight.pop(len(in_flight) - 1)
        events += [a.event() for a in interrupted.tell([result]).admitted]
    assert interrupted.round == 1 and interrupted.in_flight > 1
    resumed = scheduler()
    resumed.restore(interrupted.state_json())
    events += drive(resumed, random.Random(7))
    assert events == reference_events
    assert resumed.history == reference.history


def test_red_queen_memory_keeps_separate_windows() -> None:
    pool = OpponentPool(["1 1"], own_window=2, peer_window=3)
    for r in range(4):
        assert pool.add_champion(Candidate(text=f"{r} 9", source="own", node="a", round=r))
    for r in range(5):
        pool.add_champion(Candidate(text=f"{r} 8", source="peer", node="b", round=r))
    assert not pool.add_champion(Candidate(text="1 1", source="peer", node="b", round=9))
    assert [(o["source"], o["round"]) for o in pool.describe()] == [
        ("initial", -1),
        ("own", 2),
        ("own", 3),
        ("peer", 2),
        ("peer", 3),
        ("peer", 4),
    ]
    # A flood of received champions never evicts the node's own memory.
    assert OpponentPool.from_json(pool.to_json()).describe() == pool.describe()


def test_round_events_list_the_pool_fought_and_received_champions_enter_by_policy() -> None:
    solo, flooded = scheduler(own_window=20), scheduler(own_window=20, peer_window=1)
    drive(solo, None)
    while not flooded.finished:
        flooded.start_round(
            [
                Candidate(
                    text=f"{flooded.round} 4 {k}", node="peer-x", round=flooded.round, operator="op"
                )
                for k in range(3)
            ]
        )
        drive_round(flooded)
    own = [[o for o in e.opponents if o.source == "own"] for e in flooded.history]
    assert own == [[o for o in e.opponents if o.source == "own"] for e in solo.history]
    assert [o.to_json() for o in own[2]] == [
        {"source": "own", "round": 0, "node": "n"},
        {"source": "own", "round": 1, "node": "n"},
    ]
    assert [o.to_json() for o in flooded.history[2].opponents if o.source == "peer"] == [
        {"source": "peer", "round": 2, "node": "peer-x"}
    ]
    assert flooded.history[0].received == 3


def drive_round(s: Scheduler) -> None:
    round_index = s.round
    while s.round == round_index and not s.finished:
        items = s.ask(4)
        s.tell([work(s, item) for item in items])


def test_builtin_sharing_policies() -> None:
    policies = {spec.name: spec.factory({}) for spec in BUILTIN_POLICIES}
    champion = Candidate(text="1 2", node="p", round=0)
    assert {name: p.on_receive(champion) for name, p in policies.items()} == {
        "champion": Admit.OPPONENTS | Admit.CELLS,
        "top-k": Admit.OPPONENTS | Admit.CELLS,
        "opponents-only": Admit.OPPONENTS,
        "none": Admit.NOTHING,
    }
    s = scheduler()
    drive_round(s)
    champion = s.history[0].champion
    assert champion is not None
    finished = GridArchive(space=s.space).fill_from_json({"elites": [champion.to_json()]})
    assert [e.text for e in policies["champion"].select(finished)] == [champion.text]
    assert policies["none"].select(finished) == [] and not policies["none"].shares
    # opponents-only: the received champion is evaluated (novelty) but fills no cell.
    s = scheduler(sharing=policies["opponents-only"])
    s.start_round([Candidate(text="30 30 30", node="p", round=0, operator="op")])
    drive_round(s)
    assert s.history[0].received == 1
    assert {"source": "peer", "round": 0, "node": "p"} in s.history[0].to_json()["opponents"]


def test_improvement_selector_favours_parents_whose_children_improved() -> None:
    selector = ImprovementSelector(prior=1.0)
    good, bad = Candidate(text="1", id="good"), Candidate(text="2", id="bad")
    for _ in range(5):
        selector.tell(good, None, AddStatus.NEW)
        selector.tell(bad, None, AddStatus.NOT_ADDED)
    assert selector.weight(good) == 1.0 and selector.weight(bad) == pytest.approx(1 / 6)
    restored = ImprovementSelector()
    restored.restore(selector.state_json())
    assert restored.weight(bad) == selector.weight(bad)
    s = scheduler(selector=ImprovementSelector())
    assert drive(s, random.Random(1)) == drive(scheduler(selector=ImprovementSelector()), None)


def test_cvt_archive_has_seeded_cells_over_three_axes() -> None:
    space = DescriptorSpace([spec.axis for spec in DOMAIN.descriptor_axes()])
    a, b = CVTArchive(space=space, cells=20, seed=3), CVTArchive(space=space, cells=20, seed=9)
    assert (a.centroids == b.centroids).all() and a.cells == 20  # cells do not move per round
    other = CVTArchive(space=space, cells=20, centroid_seed=4)
    assert (other.centroids != a.centroids).any()
    first = Candidate(text="x", fitness=1.0, descriptor={"length": 3, "peak": 10, "first": 40})
    assert a.add(first) == AddStatus.NEW and str(AddStatus.NEW) == "NEW"
    assert a.add(first.__class__(**{**first.to_json(), "fitness": 0.5})) == AddStatus.NOT_ADDED
    s = Scheduler(
        name="n",
        space=space,
        initial_opponents=DOMAIN.initial_opponents(),
        calls=60,
        archive=lambda **kw: CVTArchive(cells=30, **kw),
    )
    drive(s, random.Random(2))
    assert all(e.archive_kind == "cvt" and e.stats.cells == 30 for e in s.history)


class Sink(DriverSink):
    """Keeps the driver's events (``keep`` takes each batch) and hands out ``receive``'s
    champions."""

    def __init__(self, keep, receive=lambda round_index: ()) -> None:
        self.keep, self.receive = keep, receive

    def record(self, events, calls) -> None:
        self.keep(events)


class JunkAwareOperator(Operator):
    label = "sums-op"
    max_in_flight = 3

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        await asyncio.sleep(random.Random(request.seed).random() * 0.01)  # out-of-order replies
        return OperatorReply(text="10 20 30" if request.kind == "new" else request.parent.text)


def test_the_driver_validates_received_champions_before_they_enter_the_pool() -> None:
    received = [
        Candidate(text="not a program", node="evil", round=0, operator="x"),
        Candidate(text="49 49 49", node="friend", round=0, operator="y"),
    ]
    s = scheduler(calls=12, rounds=2)
    events: list[dict] = []
    driver = SearchDriver(
        scheduler=s,
        domain=DOMAIN,
        operator=JunkAwareOperator(),
        evaluator=Evaluator(DOMAIN, workers=0),
        ledger=BudgetLedger(quotas={"n": 12}),
        sink=Sink(events.extend, receive=lambda r: received if r == 1 else []),
    )
    asyncio.run(driver.run())
    rounds = [e for e in events if e["event"] == "round"]
    assert [o["node"] for o in rounds[1]["opponents"] if o["source"] == "peer"] == ["friend"]
    assert [e["from"] for e in events if e["event"] == "received"] == ["friend"]
    assert len([e for e in events if e["event"] == "evaluated" and e["kind"] == "mutate"]) > 0
    assert [r["calls"] for r in rounds] == [6, 6]


def test_next_round_calls_are_exactly_the_new_calls_the_next_round_hands_out() -> None:
    s = scheduler(new_fraction=0.3)
    early = s.next_round_calls()
    assert early and all(item.round == 1 and item.kind == "new" for item in early)
    seen = []
    while not s.finished:  # drive to the end, collecting what every round hands out
        if s.round == 1 and not s.started:
            assert s.next_round_calls() != early  # now it is round 2's
        items = s.ask(4)
        seen += items
        s.tell([work(s, item) for item in items])
    handed = {i.key: i for i in seen if i.round == 1 and i.kind == "new"}
    assert {i.key for i in early} <= set(handed)
    for item in early:
        twin = handed[item.key]
        assert (item.id, item.seed, item.eval_seed) == (twin.id, twin.seed, twin.eval_seed)
        assert item.request(DOMAIN) == twin.request(DOMAIN)
    assert scheduler(rounds=1).next_round_calls() == []


class TimedOperator(Operator):
    """Seeded replies after random delays (a different completion order every run)."""

    label = "sums-op"

    def __init__(self, log: list | None = None, max_in_flight: int = 4) -> None:
        self.log = log if log is not None else []
        self.max_in_flight = max_in_flight
        self.in_flight = self.most = 0

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        self.log.append(("call", request.key))
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(random.random() * 0.01)
        finally:
            self.in_flight -= 1
        item = attrs.evolve(ITEM, seed=request.seed, kind=request.kind, parent=request.parent)
        return OperatorReply(text=propose(item))


ITEM = WorkItem(id="x", key="x", node="n", round=0, order=0, kind="new", seed=0, eval_seed=0)


def test_the_driver_makes_next_round_calls_while_a_round_drains_and_stays_reproducible() -> None:
    runs = []
    for _ in range(2):
        log: list = []
        operator = TimedOperator(log)
        driver = SearchDriver(
            scheduler=scheduler(new_fraction=0.3),
            domain=DOMAIN,
            operator=operator,
            evaluator=Evaluator(DOMAIN, workers=0),
            ledger=BudgetLedger(quotas={"n": 90}),
            sink=Sink(lambda evs, log=log: log.extend(("event", e) for e in evs)),
        )
        asyncio.run(driver.run())
        assert operator.most <= operator.max_in_flight
        order = [
            entry[1] if entry[0] == "call" else ("round", entry[1]["round"])
            for entry in log
            if entry[0] == "call" or entry[1]["event"] == "round"
        ]
        first_round_end = order.index(("round", 0))
        assert any(key.startswith("n/r1/") for key in order[:first_round_end])  # made early
        assert sum(1 for key in order if isinstance(key, str)) == 90  # and not made twice
        timeless = [
            {k: v for k, v in e.items() if k != "timings"} for kind, e in log if kind == "event"
        ]
        runs.append((timeless, driver.history))
    assert runs[0] == runs[1]


def _ranked_archive(cells: int = 40) -> GridArchive:
    """One elite per cell, elite ``i`` with fitness ``i / cells`` (so fitness is its rank)."""
    archive = GridArchive(space=DescriptorSpace([UniformAxis("x", 0, cells, cells)]))
    for i in range(cells):
        archive.add(Candidate(text=str(i), fitness=i / cells, descriptor={"x": i + 0.5}))
    return archive


def test_tournament_selector_picks_fitter_parents_than_uniform_on_a_fixed_archive() -> None:
    from dei_framework import TournamentSelector
    from dei_framework.search.slot_random import SlotGenerator, initial_states

    archive = _ranked_archive()
    states = initial_states(range(500))  # 500 slots, as the scheduler seeds them

    def mean_parent_fitness(selector) -> float:
        parents = [selector.select(archive, SlotGenerator(*state), 3)[0] for state in states]
        return sum(p.fitness for p in parents) / len(parents)

    uniform, tournament = (
        mean_parent_fitness(UniformSelector()),
        mean_parent_fitness(TournamentSelector()),
    )
    # Expected ranks: uniform (n-1)/2n ~ 0.49, the best of three uniform draws ~ 0.74; the
    # standard error over 500 draws is about 0.013, so 0.15 apart is no accident of the seed.
    assert uniform < 0.55 and tournament > uniform + 0.15
    assert mean_parent_fitness(TournamentSelector(size=1)) == uniform  # size 1 is uniform
    assert mean_parent_fitness(TournamentSelector(size=8)) > tournament
    # The scheduler's fast generator and numpy's own draw the same tournaments.
    for seed, state in zip(range(20), states, strict=False):
        fast = TournamentSelector().select(archive, SlotGenerator(*state), 4)
        numpy_ = TournamentSelector().select(archive, np.random.default_rng(seed), 4)
        assert [e.text for e in fast] == [e.text for e in numpy_]


def test_tournament_selector_options_are_checked_and_a_seeded_run_is_reproducible() -> None:
    from dei_framework import ConfigError, TournamentSelector
    from dei_framework.search.selectors import BUILTIN_SELECTORS

    factory = {spec.name: spec.factory for spec in BUILTIN_SELECTORS}["tournament"]
    assert factory({}).size == 3 and factory({"size": 5}).size == 5
    for bad in ({"size": 0}, {"size": 2.5}, {"size": True}, {"k": 3}):
        with pytest.raises(ConfigError, match="tournament selector"):
            factory(bad)
    reference = drive(scheduler(selector=TournamentSelector()), None)
    assert drive(scheduler(selector=TournamentSelector()), random.Random(3)) == reference
    assert drive(scheduler(selector=TournamentSelector(), seed=5), None) != reference
    assert drive(scheduler(), None) != reference  # it chose other parents than uniform


class SeededSums(Sums):
    """Sums with seed programs; ``opponents`` says whether it also has initial opponents."""

    def __init__(self, opponents: bool) -> None:
        self.has_opponents = opponents

    def initial_opponents(self) -> list[str]:
        return super().initial_opponents() if self.has_opponents else []

    def seed_programs(self) -> list[str]:
        return ["30 30 30", "49 49 49 3", "20 20"]  # the last is also an opponent of Sums


def _warm_items(s: Scheduler) -> list[dict]:
    """Round by round, the warm items' (id, text, operator), and the opponents fought."""
    rounds = []
    while not s.finished:
        round_index = s.round
        items = s.ask(100)
        warm = [(i.id, i.program.text, i.program.operator) for i in items if i.kind == "warm"]
        report = s.tell([work(s, item) for item in items])
        statuses = {a.result.item.id: str(a.status) for a in report.admitted}
        rounds.append(
            {
                "warm": warm,
                "opponents": [o.text for o in s.opponents],
                "status": [statuses.get(item_id) for item_id, *_ in warm],
            }
        )
        while s.round == round_index and not s.finished:
            s.tell([work(s, item) for item in s.ask(4)])
    return rounds


def test_seed_programs_start_a_static_domains_archive_without_becoming_opponents() -> None:
    domain = SeededSums(opponents=False)
    assert domain.default_lifecycle() == "continual"  # seeds do not make it adversarial
    s = Scheduler.for_domain(domain, name="n", calls=30, rounds=3, seed=4, lag=6)
    rounds = _warm_items(s)
    # Round 0 warms the archive with the seeds; the continual archive keeps them after.
    assert rounds[0]["warm"] == [
        ("n-r0-w0", "30 30 30", "seed"),
        ("n-r0-w1", "49 49 49 3", "seed"),
        ("n-r0-w2", "20 20", "seed"),
    ]
    assert [r["warm"] for r in rounds[1:]] == [[], []]
    assert all(r["opponents"] == [] for r in rounds)  # they never fight anyone
    assert all(e.opponents == () for e in s.history)
    # The first round's champion is a seed: no work of the search, marked as such.
    first = s.history[0]
    assert first.champion_initial == (first.champion.text in domain.seed_programs())
    # Each seed was offered to the archive (they differ in length and peak: three cells).
    assert rounds[0]["status"] == ["NEW", "NEW", "NEW"]


def test_seed_programs_of_an_adversarial_domain_warm_every_fresh_archive() -> None:
    domain = SeededSums(opponents=True)
    assert domain.default_lifecycle() == "reset"
    s = Scheduler.for_domain(domain, name="n", calls=30, rounds=2, seed=4, lag=6)
    rounds = _warm_items(s)
    for index, r in enumerate(rounds):
        texts = [text for _, text, _ in r["warm"]]
        # The pool first (initial opponents, then own champions), then the seeds; "20 20" is
        # an opponent already and is warmed once, as the opponent.
        assert texts[:2] == ["1 1", "20 20"] and texts[-2:] == ["30 30 30", "49 49 49 3"]
        assert len(texts) == len(set(texts))  # a seed that is an opponent is warmed once
        assert [op for *_, op in r["warm"]][-2:] == ["seed"] * 2
        assert "30 30 30" not in r["opponents"] and "49 49 49 3" not in r["opponents"]
        assert len({item_id for item_id, *_ in r["warm"]}) == len(r["warm"])  # ids unique
        assert all(item_id.startswith(f"n-r{index}-w") for item_id, *_ in r["warm"])
    # Without seeds the warm start is the pool alone, as before.
    plain = _warm_items(Scheduler.for_domain(DOMAIN, name="n", calls=30, rounds=2, seed=4, lag=6))
    assert [text for _, text, _ in plain[0]["warm"]] == ["1 1", "20 20"]


def test_a_seed_that_became_the_champion_is_warmed_once_as_an_opponent() -> None:
    # With seed 6 the seed "30 30 30" wins round 0 (no child beat it): it joins the pool as
    # this node's champion, so round 1 warms it once, as that opponent, and marks round 0's
    # champion as no work of the search.
    s = Scheduler.for_domain(
        SeededSums(opponents=True), name="n", calls=30, rounds=2, seed=6, lag=6
    )
    rounds = _warm_items(s)
    assert s.history[0].champion.text == "30 30 30" and s.history[0].champion_initial
    assert [(text, operator) for _, text, operator in rounds[1]["warm"]] == [
        ("1 1", "initial"),
        ("20 20", "initial"),
        ("30 30 30", "own:n"),
        ("49 49 49 3", "seed"),
    ]
    assert "30 30 30" in rounds[1]["opponents"]  # as a champion, not as a seed
