"""Archive lifecycles: ``reset`` (Red Queen rounds) and ``continual`` (one archive per node, a
round is a migration interval), at the scheduler, on a static domain, and from the command
line."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

import pytest
from test_scheduler import DOMAIN, Sums, propose

from dei_framework import (
    AddStatus,
    Candidate,
    Domain,
    Evaluation,
    NodeConfig,
    Program,
    RunConfig,
    RunSummary,
    Scheduler,
    ThresholdAxis,
    UniformAxis,
    evaluate,
    run,
)
from dei_framework.contract.descriptors import AxisSpec
from dei_framework.contract.errors import ConfigError
from dei_framework.runtime.config.resolve import build_nodes
from dei_framework.search.sharing import BUILTIN_POLICIES


class Static(Sums):
    """A static objective without opponents: sums near 100, descriptors length and peak (the
    scheduler tests' programs, parser and prompts)."""

    name = "static-sums"

    def evaluate(self, program: Program, opponents: Sequence[Program], *, seed: int) -> Evaluation:
        total = sum(program.data)
        return Evaluation(
            fitness=1 - min(abs(total - 100), 100) / 100,
            descriptor={"length": len(program.data), "peak": max(program.data)},
        )

    def descriptor_axes(self):
        return [
            AxisSpec(name="length", axis=ThresholdAxis("length", (2, 4, 6, 8))),
            AxisSpec(name="peak", axis=UniformAxis("peak", 0, 50, 5)),
        ]

    initial_opponents = Domain.initial_opponents  # the contract's default: no opponents


STATIC = Static()


def static_scheduler(**settings) -> Scheduler:
    return Scheduler.for_domain(
        STATIC, name="n", **{"calls": 90, "rounds": 3, "seed": 4, "lag": 6, **settings}
    )


def static_work(scheduler: Scheduler, item):
    text = propose(item) if item.needs_call else item.program.text
    return evaluate(STATIC, text, [], seed=item.eval_seed, axes=scheduler.space.names).result(
        item, operator="op"
    )


def drive_static(s: Scheduler, rng: random.Random | None, concurrency: int = 4) -> list[dict]:
    in_flight, events = [], []
    while not s.finished:
        in_flight += [(i, static_work(s, i)) for i in s.ask(concurrency - len(in_flight))]
        _, result = in_flight.pop(rng.randrange(len(in_flight)) if rng else 0)
        events += [a.event() for a in s.tell([result]).admitted]
    return events


def test_a_domain_without_opponents_defaults_to_continual_and_one_with_them_to_reset() -> None:
    assert STATIC.initial_opponents() == ()
    assert STATIC.default_lifecycle() == "continual"
    assert DOMAIN.default_lifecycle() == "reset"  # the adversarial test domain of the scheduler
    assert static_scheduler().lifecycle == "continual"
    assert static_scheduler(lifecycle="reset").lifecycle == "reset"
    with pytest.raises(ValueError, match="lifecycle must be one of reset, continual"):
        static_scheduler(lifecycle="forever")


def test_a_continual_archive_persists_and_grows_across_rounds() -> None:
    continual = static_scheduler()
    events = drive_static(continual, None)
    coverage = [e.stats.coverage for e in continual.history]
    assert coverage == sorted(coverage) and coverage[-1] > coverage[0]
    # Nothing is re-evaluated at a round start: every candidate is an operator's.
    assert {e.kind for e in events} <= {"new", "mutate"}
    assert all(e.opponents == () for e in continual.history)
    assert len(continual.pool) == 0  # the champions never join an opponent pool
    reset = static_scheduler(lifecycle="reset")
    drive_static(reset, None)
    # A reset node warms each round with its past champions: they are its pool.
    assert [len(e.opponents) for e in reset.history] == [0, 1, 2]
    assert reset.history[-1].stats.coverage < coverage[-1]


def test_continual_parents_come_from_earlier_rounds_elites() -> None:
    s = static_scheduler()
    events = drive_static(s, None)
    made_in = {e.id: e.round for e in events}
    later = [e for e in events if e.round > 0 and e.kind == "mutate"]
    assert any(made_in[e.parent] < e.round for e in later)


def test_a_continual_run_is_the_same_in_any_order_and_resumes_exactly_mid_round() -> None:
    reference = static_scheduler()
    reference_events = drive_static(reference, None)
    other = static_scheduler()
    assert drive_static(other, random.Random(3), concurrency=5) == reference_events
    interrupted = static_scheduler()
    events, in_flight = [], []
    for _ in range(45):  # into round 1, work in flight and results buffered
        in_flight += [(i, static_work(interrupted, i)) for i in interrupted.ask(4 - len(in_flight))]
        _, result = in_flight.pop(len(in_flight) - 1)
        events += [a.event() for a in interrupted.tell([result]).admitted]
    assert interrupted.round == 1 and len(interrupted.archive) > 0
    resumed = static_scheduler()
    resumed.restore(json.loads(json.dumps(interrupted.state_json())))
    events += drive_static(resumed, random.Random(7))
    assert events == reference_events
    assert resumed.history == reference.history


def test_continual_migrants_compete_for_their_cells_and_never_join_the_pool() -> None:
    s = static_scheduler(calls=20, rounds=2)
    drive_round(s)
    elite = max(s.archive, key=lambda e: e.fitness)
    occupied = elite.cell
    # A migrant fitter than the elite of an occupied cell replaces it (an island model); a
    # reset archive would only have taken it into an empty cell.
    better = _better_in_cell(elite)
    received = s.start_round([Candidate(text=better, node="peer", round=0, operator="op")])
    assert [c.text for c in received] == [better]
    assert len(s.pool) == 0
    [item] = s.ask(1)
    assert item.kind == "peer"
    [admission] = s.tell([static_work(s, item)]).admitted
    assert admission.status is AddStatus.IMPROVE_EXISTING
    assert s.archive.elite_at(occupied).text == better


def _better_in_cell(elite: Candidate) -> str:
    """A program in ``elite``'s cell with a sum of exactly 100 (fitness 1), unless it has it."""
    numbers = [int(t) for t in elite.text.split()]
    peak = max(numbers)
    rest = len(numbers) - 1
    assert elite.fitness < 1.0 and rest >= 0
    others = [0] * rest
    left = 100 - peak
    for index in range(rest):
        others[index] = min(peak, left)
        left -= others[index]
    assert left == 0, "the elite's cell cannot reach a sum of 100: pick another seed"
    return " ".join(map(str, [peak, *others]))


def drive_round(s: Scheduler) -> None:
    round_index = s.round
    while s.round == round_index:
        for item in s.ask(8):
            s.tell([static_work(s, item)])


def test_migrants_option_of_the_builtin_policies() -> None:
    specs = {spec.name: spec for spec in BUILTIN_POLICIES}
    assert specs["champion"].factory({}).top_k == 1
    assert specs["champion"].factory({"migrants": 4}).top_k == 4
    assert specs["top-k"].factory({"migrants": 2}).top_k == 2
    assert specs["top-k"].factory({"k": 5}).top_k == 5
    assert specs["opponents-only"].factory({"migrants": 3}).top_k == 3
    for bad in (0, -1, "2", True):
        with pytest.raises(ConfigError, match="migrants must be a positive integer"):
            specs["champion"].factory({"migrants": bad})
    with pytest.raises(ConfigError, match="name the same count"):
        specs["top-k"].factory({"k": 2, "migrants": 3})


def test_node_tables_set_their_own_selector_and_archive_options() -> None:
    nodes = build_nodes(
        count=2,
        operators=["gp"],
        common_options={},
        node_tables=[
            {"selector": "improvement", "selector_options": {"prior": 0.5}},
            {"archive": "cvt", "archive_options": {"cells": 16}},
        ],
    )
    assert nodes[0].selector_options == {"prior": 0.5} and nodes[0].archive_options is None
    assert nodes[1].archive_options == {"cells": 16} and nodes[1].selector_options is None
    assert "prior" not in nodes[0].options  # search options are not operator options
    with pytest.raises(ConfigError, match="selector_options must be a table"):
        build_nodes(
            count=1, operators=["gp"], common_options={}, node_tables=[{"selector_options": 3}]
        )


def test_run_config_checks_and_records_the_lifecycle() -> None:
    node = NodeConfig(name="node-0", operator="gp")
    with pytest.raises(ConfigError, match="lifecycle must be one of reset, continual"):
        RunConfig(domain="x", nodes=[node], budget=4, lifecycle="sometimes")
    config = RunConfig(domain="x", nodes=[node], budget=4, lifecycle="continual")
    assert RunConfig.from_json(config.to_json()).lifecycle == "continual"
    legacy = config.to_json()
    del legacy["lifecycle"]  # recorded before lifecycles were a choice: Red Queen rounds
    assert RunConfig.from_json(legacy).lifecycle == "reset"


# --- whole runs on the symbolic-regression example ----------------------------------------------


def _symreg(rounds: int, out: Path, **settings) -> RunSummary:
    config = RunConfig(
        domain="symreg",
        nodes=[NodeConfig(name=f"node-{i}", operator="symreg-gp") for i in range(4)],
        budget=240,
        rounds=rounds,
        seed=2,
        eval_workers=0,
        **settings,
    )
    return run(config, out)


def test_continual_rounds_keep_the_coverage_and_champions_cross_every_round(tmp_path) -> None:
    one = _symreg(1, tmp_path / "one")
    four = _symreg(4, tmp_path / "four")
    assert one.lifecycle == four.lifecycle == "continual"  # symreg's default
    recorded = json.loads((tmp_path / "four" / "config.json").read_text())
    assert recorded["lifecycle"] == "continual"
    assert four.merged.stats.coverage >= one.merged.stats.coverage
    log = [json.loads(line) for line in (tmp_path / "four" / "events.jsonl").open()]
    received = [e for e in log if e["event"] == "received"]
    # Every node takes in its peers' champions at every round start after the first.
    assert {(e["node"], e["round"]) for e in received} == {
        (f"node-{n}", r) for n in range(4) for r in (1, 2, 3)
    }
    assert all(e["from"] != e["node"] for e in received)
    peers = [e for e in log if e["event"] == "evaluated" and e["kind"] == "peer"]
    assert len(peers) == len(received)  # each migrant is evaluated by its receiver
    # No warm start after the first round: the seeds are evaluated once per node.
    warm = [e for e in log if e["event"] == "evaluated" and e["kind"] == "warm"]
    assert {e["round"] for e in warm} == {0}
    for node in four.nodes.values():
        coverage = node.coverage_per_round
        assert list(coverage) == sorted(coverage)  # an archive that persists never shrinks
        assert node.sharing["published"] == 4
    reset = _symreg(4, tmp_path / "reset", lifecycle="reset")
    assert reset.lifecycle == "reset"
    assert four.merged.stats.coverage > reset.merged.stats.coverage


# --- per-node search settings and the flags ------------------------------------------------------


def test_nodes_with_different_selector_options_run_in_one_ensemble(tmp_path) -> None:
    from dei_framework.runtime.ensemble import Ensemble
    from dei_framework.runtime.files.run_dir import RunDir

    config = RunConfig(
        domain="symreg",
        budget=40,
        rounds=2,
        eval_workers=0,
        selector="improvement",
        selector_options={"prior": 2.0},
        nodes=[
            NodeConfig(name="node-0", operator="symreg-gp"),
            NodeConfig(name="node-1", operator="symreg-gp", selector_options={"prior": 0.25}),
            # the run's options would be refused by the uniform selector: it takes none
            NodeConfig(
                name="node-2", operator="symreg-gp", selector="uniform", selector_options={}
            ),
            NodeConfig(
                name="node-3", operator="symreg-gp", archive="cvt", archive_options={"cells": 12}
            ),
        ],
    )
    ensemble = Ensemble(config, RunDir(tmp_path / "run"))
    summary = ensemble.run()
    selectors = {name: driver.scheduler.selector for name, driver in ensemble.drivers.items()}
    assert selectors["node-0"].prior == 2.0 and selectors["node-1"].prior == 0.25
    assert selectors["node-2"].name == "uniform"
    assert ensemble.drivers["node-3"].scheduler.archive.cells == 12
    assert all(node.calls == 10 for node in summary.nodes.values())


def test_a_seeded_ensemble_with_the_tournament_selector_is_reproducible(tmp_path) -> None:
    from dei_framework.runtime.ensemble import Ensemble
    from dei_framework.runtime.files.run_dir import RunDir

    def once(name: str) -> tuple[Ensemble, list]:
        config = RunConfig(
            domain="symreg",
            budget=40,
            rounds=2,
            eval_workers=0,
            seed=11,
            selector="tournament",
            selector_options={"size": 4},
            nodes=[
                NodeConfig(name="node-0", operator="symreg-gp"),
                NodeConfig(
                    name="node-1", operator="symreg-gp", selector="uniform", selector_options={}
                ),
            ],
        )
        ensemble = Ensemble(config, RunDir(tmp_path / name))
        ensemble.run()
        merged = json.loads((tmp_path / name / "merged_archive.json").read_text())
        return ensemble, merged

    first, merged = once("a")
    selectors = {name: driver.scheduler.selector for name, driver in first.drivers.items()}
    assert selectors["node-0"].name == "tournament" and selectors["node-0"].size == 4
    assert selectors["node-1"].name == "uniform"
    _, again = once("b")
    assert again == merged and merged


def test_lifecycle_and_new_fraction_flags_reach_the_run_config() -> None:
    from dei_framework import load_plugins
    from dei_framework.runtime.config.resolve import resolve_config

    plugins = load_plugins()
    flags = {"domain": "symreg", "operators": ("symreg-gp",), "budget": 8}
    default = resolve_config(flags, plugins)
    assert default.lifecycle == "" and default.new_fraction == 0.1  # "": the domain's
    chosen = resolve_config({**flags, "lifecycle": "reset", "new_fraction": 0.5}, plugins)
    assert chosen.lifecycle == "reset" and chosen.new_fraction == 0.5
