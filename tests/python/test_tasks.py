"""The bundled tasks, in OpenEvolve's layout: their initial programs score, their features
mean what they say, and their evaluators refuse what breaks the rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dei_python.domain import PythonDomain
from dei_python.task import TASKS

from dei_framework import NodeConfig, RunConfig, load_plugins, run
from dei_framework.contract.errors import InvalidProgram

BIN_PACKING, CIRCLE_PACKING = TASKS / "bin_packing", TASKS / "circle_packing"


def _domain(task: Path) -> PythonDomain:
    return PythonDomain({"task": str(task)})


def _score(domain: PythonDomain, block: str):
    return domain.evaluate(domain.parse(block), [], seed=0)


def test_bin_packing_features_tell_best_fit_from_first_fit() -> None:
    domain = _domain(BIN_PACKING)
    best = _score(domain, domain.initial_text)
    first = _score(domain, "def priority(item, bins):\n    return -np.arange(len(bins))\n")
    assert best.descriptor["best_fit_agreement"] == 1.0
    assert first.descriptor["first_fit_agreement"] == 1.0
    assert first.descriptor["best_fit_agreement"] < 1.0
    assert best.fitness > first.fitness  # best fit packs tighter than first fit here
    assert -1.0 < first.fitness < best.fitness < 0.0  # minus an excess over the bound


def test_bin_packing_refuses_a_priority_of_the_wrong_shape() -> None:
    domain = _domain(BIN_PACKING)
    with pytest.raises(InvalidProgram, match="priority\\(\\) returned shape"):
        _score(domain, "def priority(item, bins):\n    return np.zeros(3)\n")


def test_circle_packing_scores_the_initial_packing_and_refuses_overlaps() -> None:
    domain = _domain(CIRCLE_PACKING)
    initial = _score(domain, domain.initial_text)
    assert 0 < initial.fitness < 26 * 0.5
    assert set(initial.descriptor) == {"radius_spread", "edge_share"}
    overlapping = (
        "def construct_packing():\n    centres = np.full((26, 2), 0.5)\n"
        "    return centres, np.full(26, 0.1)\n"
    )
    with pytest.raises(InvalidProgram, match="circles 0 and 1 overlap"):
        _score(domain, overlapping)
    outside = (
        "def construct_packing():\n    centres = np.random.default_rng(0).random((26, 2))\n"
        "    return centres, np.full(26, 0.6)\n"
    )
    with pytest.raises(InvalidProgram, match="leaves the unit square"):
        _score(domain, outside)


@pytest.mark.timeout(600)
def test_circle_packing_runs_on_the_offline_operator(tmp_path: Path) -> None:
    config = RunConfig(
        domain="python",
        budget=16,
        rounds=2,
        seed=4,
        eval_workers=1,
        domain_options={"task": str(CIRCLE_PACKING)},
        nodes=[NodeConfig(name=f"node-{i}", operator="python-ast") for i in range(2)],
    )
    summary = run(config, tmp_path / "run", registry=load_plugins())
    assert summary.space["axes"] == ["radius_spread", "edge_share"]
    events = [
        json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()
    ]
    seeds = [e for e in events if e["event"] == "evaluated" and e["operator"] == "seed"]
    assert len(seeds) == 2 and all(e["status"] != "invalid" for e in seeds)
