"""Common-ground merging on hand-built archives: cells and winners come from common ground."""

from __future__ import annotations

import asyncio
import hashlib
import math
import statistics
import sys
from pathlib import Path

import pytest

from dei_framework import Candidate, DescriptorSpace, GridArchive, ThresholdAxis
from dei_framework.analysis.common_ground import (
    Score,
    build_reference,
    merge_common,
    raw_entries,
    reference_record,
    score_texts,
    scoring_spread,
    text_seeds,
    winners,
)
from dei_framework.contract.domain import Evaluation
from dei_framework.evaluation.local import Evaluator, Outcome

sys.path.insert(0, str(Path(__file__).parents[1] / "toy"))

import toy_domain  # noqa: E402

SPACE = DescriptorSpace([ThresholdAxis("x", (1, 2, 3))])


def elite(text: str, fitness: float, x: float, node: str) -> Candidate:
    return Candidate(
        id=f"{node}-{text}", text=text, fitness=fitness, descriptor={"x": x}, cell=(), node=node
    )


def archive(*elites: Candidate) -> GridArchive:
    built = GridArchive(space=SPACE)
    for item in elites:
        built.add(item)
    return built


def outcome(fitness: float, x: float) -> Outcome:
    return Outcome(evaluation=Evaluation(fitness=fitness, descriptor={"x": x}))


def test_the_merge_keeps_the_best_common_fitness_in_the_common_cell() -> None:
    # Raw: "big" wins cell 0 (fitness 9 against a large pool); on common ground "small" is
    # better there. "moved" sits in cell 1 raw but lands in cell 3 on common ground; "broken"
    # failed its common-ground evaluation and is left out.
    a = archive(elite("big", 9.0, 0.5, "node-0"), elite("moved", 1.0, 1.5, "node-0"))
    b = archive(elite("small", 2.0, 0.5, "node-1"), elite("broken", 5.0, 2.5, "node-1"))
    outcomes = {
        "big": outcome(0.4, 0.5),
        "small": outcome(0.9, 0.7),
        "moved": outcome(0.3, 3.5),
        "broken": Outcome(error="evaluation failed"),
    }
    merged, entries = merge_common([a, b], outcomes, SPACE, qd_offset=0.0)
    by_text = {e["text"]: e for e in entries}
    assert set(by_text) == {"small", "moved"}
    assert by_text["small"] == {
        **by_text["small"],
        "cell": [0],
        "fitness": 2.0,
        "common_fitness": 0.9,
        "node": "node-1",
        "raw_cell": [0],
    }
    assert by_text["moved"]["cell"] == [3] and by_text["moved"]["raw_cell"] == [1]
    stats = merged.stats()
    assert stats.num_elites == 2 and stats.qd_score == pytest.approx(1.2)
    # The raw merge would have kept "big" and "broken".
    raw = {e["text"] for e in raw_entries(GridArchive.merge([a, b]))}
    assert raw == {"big", "moved", "broken"}


def test_ties_keep_the_earlier_archive() -> None:
    a = archive(elite("first", 1.0, 0.5, "node-0"))
    b = archive(elite("second", 1.0, 0.5, "node-1"))
    outcomes = {"first": outcome(0.5, 0.5), "second": outcome(0.5, 0.5)}
    _, entries = merge_common([a, b], outcomes, SPACE, qd_offset=0.0)
    assert [e["text"] for e in entries] == ["first"]


def test_reference_record_is_order_free_and_separates_texts() -> None:
    one = reference_record(["b", "a"])
    assert one == reference_record(["a", "b", "a"]) and one["count"] == 2
    assert one["sha256"] == hashlib.sha256(b"a\0b\0").hexdigest()
    assert reference_record(["ab"])["sha256"] != reference_record(["a", "b"])["sha256"]


def test_the_reference_seed_depends_on_the_set_only() -> None:
    domain = toy_domain.ToyDomain()
    first, second = build_reference(domain), build_reference(toy_domain.ToyDomain())
    assert first.seed == second.seed and first.record == second.record
    assert [p.text for p in first.programs] == sorted(domain.initial_opponents())
    assert first.fitness_scale == 1.0  # the toy's fitness does not grow with battle size


def test_a_single_run_measures_common_ground_on_request(tmp_path) -> None:
    import json

    from dei_framework import NodeConfig, RunConfig, load_plugins, run

    registry = load_plugins([toy_domain])
    nodes = [NodeConfig(name=f"node-{i}", operator="toy-random") for i in range(2)]
    base = RunConfig(domain="toy", nodes=nodes, budget=16, rounds=2, eval_workers=0, seed=3)
    plain = run(base, tmp_path / "plain", registry=registry)
    assert plain.merged.common is None
    elites = json.loads((tmp_path / "plain" / "merged_archive.json").read_text())
    assert elites and all(e["common_fitness"] is None for e in elites)
    assert len(elites) == plain.merged.stats.num_elites

    import attrs

    common = run(attrs.evolve(base, common_ground=True), tmp_path / "common", registry=registry)
    block = common.merged.common
    assert block["reference"] == reference_record(toy_domain.ToyDomain().initial_opponents())
    elites = json.loads((tmp_path / "common" / "merged_archive.json").read_text())
    assert len(elites) == block["num_elites"]
    domain, reference = toy_domain.ToyDomain(), build_reference(toy_domain.ToyDomain())
    for item in elites:
        direct = domain.evaluate(domain.parse(item["text"]), reference.programs, seed=0)
        assert item["common_fitness"] == direct.fitness
    for node in common.nodes.values():
        rounds = node.champion_common_fitness_per_round
        assert len(rounds) == 2 and all(value is not None for value in rounds)
        assert node.champion.common_fitness == rounds[-1]


def test_kept_elites_take_the_mean_of_their_scoring_seeds() -> None:
    # Selection puts "lucky" (one high measurement) ahead of "steady" in cell 0; scoring on
    # fresh seeds gives "lucky" its real, lower value. The cell stays the selection's.
    a = archive(elite("lucky", 1.0, 0.5, "node-0"), elite("moved", 1.0, 1.5, "node-0"))
    b = archive(elite("steady", 1.0, 0.5, "node-1"))
    outcomes = {"lucky": outcome(0.9, 0.5), "steady": outcome(0.6, 0.5), "moved": outcome(0.3, 3.5)}
    scores = {"lucky": Score(values=[0.4, 0.5, 0.6]), "moved": Score(values=[0.2, 0.4], failed=1)}
    merged, entries = merge_common([a, b], outcomes, SPACE, qd_offset=0.0, scores=scores)
    by_text = {e["text"]: e for e in entries}
    assert set(by_text) == {"lucky", "moved"}
    assert by_text["lucky"]["selection_fitness"] == 0.9
    assert by_text["lucky"]["common_fitness"] == pytest.approx(0.5)
    assert by_text["lucky"]["common_fitness_std"] == pytest.approx(0.1)
    assert by_text["lucky"]["common_fitness_n"] == 3 and by_text["moved"]["cell"] == [3]
    assert merged.stats().qd_score == pytest.approx(0.8)
    spread = scoring_spread(entries)
    assert spread["qd_score_sem"] == pytest.approx(math.sqrt(0.01 / 3 + 0.02 / 2))
    assert spread["selection_qd_gap"] == pytest.approx(0.9 - 0.5 + 0.3 - 0.3)
    assert winners([a, b], outcomes, SPACE) == ["lucky", "moved"]


def test_scoring_seeds_depend_on_the_set_and_differ_from_the_selection_seed() -> None:
    reference = build_reference(toy_domain.ToyDomain(), scoring=6)
    again = build_reference(toy_domain.ToyDomain(), scoring=3)
    assert len(set(reference.scoring_seeds)) == 6
    assert reference.seed not in reference.scoring_seeds
    assert again.scoring_seeds == reference.scoring_seeds[:3]  # K more seeds extend, not reshuffle


def test_every_text_has_scoring_seeds_of_its_own_the_same_in_every_run() -> None:
    # Built twice, as two runs (or two conditions) build it: one text, the same seeds; two
    # texts, no seed in common; never its selection seed; more seeds extend the list.
    first = build_reference(toy_domain.ToyDomain(), scoring=5)
    second = build_reference(toy_domain.ToyDomain(), scoring=5)
    assert first.seeds_for("3 14 15") == second.seeds_for("3 14 15")
    assert first.selection_seed("3 14 15") == second.selection_seed("3 14 15")
    one, other = first.seeds_for("3 14 15"), first.seeds_for("3 14 16")
    assert len(set(one)) == len(one) == 5 and not set(one) & set(other)
    assert first.selection_seed("3 14 15") != first.selection_seed("3 14 16")
    assert first.selection_seed("3 14 15") not in one
    assert first.seed not in one and not set(one) & set(first.scoring_seeds)
    wider = build_reference(toy_domain.ToyDomain(), scoring=8)
    assert wider.seeds_for("3 14 15")[:5] == one
    # A collision with an excluded seed is hashed again, not repeated.
    assert text_seeds(first.scoring_seeds, "3 14 15", exclude=one[:2])[2:] == one[2:]
    assert not set(text_seeds(first.scoring_seeds, "3 14 15", exclude=one[:2])) & set(one[:2])


def test_a_seed_that_is_easy_for_everyone_does_not_move_every_elite_together() -> None:
    # The toy's ``seed_effect`` adds noise that depends on the seed only: the same for every
    # program measured with that seed, as a Core War seed fixes everyone's placements. Scored
    # on K shared seeds, every program would carry the same error (their mean over the K
    # seeds); scored on seeds of their own, the errors are independent, so they spread over
    # programs and their sum (the QD-score's error) stays within a few of its standard errors.
    noisy = toy_domain.ToyDomain({"seed_effect": 1.0})
    clean = toy_domain.ToyDomain()
    reference = build_reference(noisy, scoring=5)
    texts = [f"{a} {b}" for a in range(10, 90, 8) for b in range(5, 95, 15)]  # 60 programs
    evaluator = Evaluator(noisy, workers=0)
    try:
        scores = asyncio.run(score_texts(evaluator, texts, reference))
    finally:
        evaluator.close()
    truth = {
        text: clean.evaluate(clean.parse(text), reference.programs, seed=0).fitness
        for text in texts
    }
    errors = [scores[text].mean - truth[text] for text in texts]
    # Independent errors of a mean of 5 unit-variance draws: sd 1/sqrt(5) ~ 0.45 over programs
    # (shared seeds: sd 0).
    assert 0.3 < statistics.stdev(errors) < 0.6
    entries = [
        {
            "common_fitness": scores[t].mean,
            "common_fitness_std": scores[t].std,
            "common_fitness_n": 5,
            "selection_fitness": 0.0,
        }
        for t in texts
    ]
    sem = scoring_spread(entries)["qd_score_sem"]
    assert sem == pytest.approx(math.sqrt(60 / 5), rel=0.25)
    assert abs(sum(errors)) <= 3 * sem


def test_fresh_seeds_agree_with_the_reported_common_qd(tmp_path) -> None:
    # A noisy domain: every measurement carries Gaussian noise (sd 0.5), half of it from the
    # seed alone (the same for every program measured with it). Eight nodes offer
    # several elites per common cell, so the best of their selection measurements is biased
    # upward (the winner's curse). The reported common QD, scored on K = 5 fresh seeds, must
    # agree with a re-measurement of the same elites on 20 further seeds; the selection
    # measurement must not (else this test could not tell the designs apart).
    import json

    import attrs

    from dei_framework import NodeConfig, RunConfig, load_plugins, run

    registry = load_plugins([toy_domain])
    nodes = [NodeConfig(name=f"node-{i}", operator="toy-random") for i in range(8)]
    config = RunConfig(
        domain="toy",
        nodes=nodes,
        budget=320,
        rounds=1,
        eval_workers=0,
        seed=11,
        domain_options={"noise": 0.35, "seed_effect": 0.35},
        common_ground=True,
    )
    summary = run(config, tmp_path / "run", registry=registry)
    block = summary.merged.common
    assert block["common_seeds"] == 5 and len(block["scoring_seeds"]) == 5
    elites = json.loads((tmp_path / "run" / "merged_archive.json").read_text())
    assert len(elites) == block["num_elites"] >= 8
    assert all(e["common_fitness_n"] == 5 and e["common_fitness_std"] > 0 for e in elites)
    assert sum(e["common_fitness"] for e in elites) == pytest.approx(block["qd_score"])

    domain = toy_domain.ToyDomain(config.domain_options)
    reference = build_reference(domain)
    assert block["scoring_seeds"] == list(reference.scoring_seeds)
    fresh_bases = list(range(1000, 1020))
    fresh = []
    for item in elites:
        program = domain.parse(item["text"])
        own = (reference.selection_seed(item["text"]), *reference.seeds_for(item["text"]))
        values = [
            domain.evaluate(program, reference.programs, seed=s).fitness
            for s in text_seeds(fresh_bases, item["text"], exclude=own)
        ]
        fresh.append(values)
    fresh_qd = sum(sum(values) / len(values) for values in fresh)
    fresh_sem = math.sqrt(sum(statistics.variance(v) / len(v) for v in fresh))
    tolerance = 3 * math.sqrt(block["qd_score_sem"] ** 2 + fresh_sem**2)
    assert abs(fresh_qd - block["qd_score"]) <= tolerance
    selection_qd = sum(e["selection_fitness"] for e in elites)
    assert selection_qd - fresh_qd > tolerance
    assert block["selection_qd_gap"] == pytest.approx(selection_qd - block["qd_score"])
    # benchmarks/common_remeasure.py does the same check on any finished run or experiment.
    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    from common_remeasure import remeasure

    check = remeasure(tmp_path / "run", 20, registry=registry)
    assert check["elites"] == len(elites) and check["reported_qd"] == block["qd_score"]
    assert abs(check["z"]) <= 3
    spread = math.sqrt(check["reported_sem"] ** 2 + check["fresh_sem"] ** 2)
    assert check["selection_qd"] - check["fresh_qd"] > 3 * spread
    # The same text, scored again in another run, gets the same common fitness.
    other = run(attrs.evolve(config, seed=12), tmp_path / "other", registry=registry)
    assert other.merged.common["scoring_seeds"] == block["scoring_seeds"]
    first = {e["text"]: e["common_fitness"] for e in elites}
    second = json.loads((tmp_path / "other" / "merged_archive.json").read_text())
    shared = [e for e in second if e["text"] in first]
    assert all(e["common_fitness"] == first[e["text"]] for e in shared)


class CountingToy(toy_domain.ToyDomain):
    """The toy domain (a deterministic objective: the seed changes nothing) counting its
    evaluations per text; ``deterministic`` is set per instance."""

    def __init__(self, deterministic: bool) -> None:
        super().__init__()
        self.deterministic = deterministic
        self.calls: list[str] = []

    def evaluate(self, program, opponents, *, seed):
        self.calls.append(program.text)  # list.append: safe from the evaluator's threads
        return super().evaluate(program, opponents, seed=seed)


def _measured(deterministic: bool) -> tuple[CountingToy, dict, list[dict], list[str]]:
    from dei_framework.runtime.merge import RunMerge

    domain = CountingToy(deterministic)
    space = DescriptorSpace([ThresholdAxis("length", (2, 4, 6)), ThresholdAxis("peak", (50,))])
    merge = RunMerge(domain, space, ["node-0", "node-1"])
    texts = {"node-0": ["10 20", "90 90 90", "5 5 5 5 5"], "node-1": ["99 99", "1 2 3 4 5 6 7"]}
    for node, programs in texts.items():
        node_archive = GridArchive(space=space)
        for text in programs:
            program = domain.parse(text)
            found = domain.evaluate(program, [], seed=0)
            node_archive.add(
                Candidate(
                    id=f"{node}-{text}",
                    text=text,
                    fitness=found.fitness,
                    descriptor=found.descriptor,
                    node=node,
                )
            )
        merge.add_round(node, 0, node_archive)
    domain.calls.clear()  # only what common ground evaluates from here on
    merge.reference = build_reference(domain, scoring=4)
    champions = ["90 90 90", "99 99"]  # also elites: a champion is measured once with them
    evaluator = Evaluator(domain, workers=0)
    try:
        asyncio.run(merge.measure_common(evaluator, champions))
    finally:
        evaluator.close()
    merged = merge.merged()
    return domain, merged, merge.merged_entries, [t for p in texts.values() for t in p]


def test_a_deterministic_domain_is_scored_once_per_program_with_the_multi_seed_result() -> None:
    once, merged, entries, texts = _measured(deterministic=True)
    assert len(entries) >= 3
    assert sorted(once.calls) == sorted(texts)  # each program evaluated exactly once
    seeded, merged_k, entries_k, _ = _measured(deterministic=False)
    # K = 4: every kept elite and champion is evaluated on 4 fresh seeds after its selection.
    scored = {e["text"] for e in entries_k} | {"90 90 90", "99 99"}
    assert len(seeded.calls) == len(texts) + 4 * len(scored)
    # The objective ignores the seed, so the one evaluation gives the multi-seed figures.
    assert [(e["text"], e["cell"], e["common_fitness"]) for e in entries] == [
        (e["text"], e["cell"], e["common_fitness"]) for e in entries_k
    ]
    assert all(e["common_fitness_n"] == 1 for e in entries)
    assert all(e["common_fitness_n"] == 4 for e in entries_k)
    for key in ("coverage", "qd_score", "num_elites"):
        assert merged.common[key] == merged_k.common[key]
    assert merged.common["deterministic"] is True and merged.common["common_seeds"] == 1
    # Other domains' records do not gain the key (the golden runs stay as recorded).
    assert "deterministic" not in merged_k.common and merged_k.common["common_seeds"] == 4


def test_the_python_domain_is_deterministic_and_core_war_is_not() -> None:
    from dei_framework import Domain, load_plugins

    registry = load_plugins()
    assert Domain.deterministic is False
    assert registry.domain("python").factory({}).deterministic is True
    assert registry.domain("coreware").factory({}).deterministic is False
