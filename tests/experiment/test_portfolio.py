"""``dei plan``: pilots within a stated budget, pairwise complementarity, the pick."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import toy_domain
from click.testing import CliRunner

from dei_framework import hookimpl
from dei_framework.app import cli
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.operators import OperatorSpec
from dei_framework.experiment.portfolio import Pilot, choose, pairwise, plan
from dei_framework.plugin.manager import load_plugins
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig


class _SecondToy:
    """A second random toy operator, so that two good candidates compete."""

    @hookimpl
    def dei_operators(self):
        return [
            OperatorSpec(
                name="toy-b",
                domains=("toy",),
                factory=lambda ctx: toy_domain.ToyOperator("toy-b", strength=3.0),
            )
        ]  # other mutations: other cells


@pytest.fixture(scope="module")
def plugins():
    return load_plugins([toy_domain, _SecondToy()])


def _base() -> RunConfig:
    return RunConfig(
        domain="toy",
        nodes=[NodeConfig(name="node-0", operator="toy-random")],
        budget=60,
        rounds=2,
        seed=4,
        eval_workers=0,
    )


def _pilot(name: str, cells: set, champions: tuple = (), cost: float | None = None) -> Pilot:
    return Pilot(
        operator=name,
        run_dir=Path(name),
        cells=frozenset(cells),
        champion_cells=tuple(champions),
        calls=10,
        cost_usd=cost,
        grid=10,
    )


def test_pairs_count_champions_in_the_others_empty_cells_and_the_union() -> None:
    a = _pilot("a", {(0,), (1,), (2,)}, champions=((2,), (1,)))
    b = _pilot("b", {(0,), (3,)}, champions=((3,), (0,)))
    (pair,) = pairwise([a, b])
    assert pair == {"a": "a", "b": "b", "a_into_b": 2, "b_into_a": 1, "union_coverage": 0.4}


def test_the_pick_is_the_best_union_per_unit_of_cost_ties_to_the_first() -> None:
    a, b, c = _pilot("a", {(0,), (1,)}), _pilot("b", {(0,), (1,)}), _pilot("c", {(2,)})
    choice = choose([a, b, c], 2)
    assert choice["pick"]["operators"] == ["a", "c"] and choice["per"] == "call"
    assert choice["pick"]["coverage"] == pytest.approx(0.3)
    # Priced: a cheap pair with less coverage can win per dollar.
    dear, cheap = _pilot("dear", {(0,), (1,), (2,)}, cost=10.0), _pilot("cheap", {(3,)}, cost=0.1)
    other = _pilot("other", {(4,)}, cost=0.1)
    priced = choose([dear, cheap, other], 2)
    assert priced["per"] == "cost" and priced["pick"]["operators"] == ["cheap", "other"]
    with pytest.raises(ConfigError, match="--pick 4"):
        choose([a, b, c], 4)


def test_plan_runs_pilots_within_the_budget_and_leaves_out_the_one_that_adds_nothing(
    plugins, tmp_path
) -> None:
    record = plan(
        _base(),
        ["toy-random", "toy-stuck", "toy-b"],
        pick=2,
        pilot_budget=60,
        out=tmp_path / "plan",
        registry=plugins,
    )
    assert record["pilot_spent"] == 60 == record["pilot_budget"]
    assert [p["calls"] for p in record["pilots"]] == [20, 20, 20]
    assert "toy-stuck" not in record["chosen"]["operators"]
    assert len(record["pairs"]) == 3 and len(record["ranked"]) == 3
    assert json.loads((tmp_path / "plan" / "plan.json").read_text()) == record
    for pilot in record["pilots"]:
        assert (Path(pilot["run_dir"]) / "summary.json").exists()


def test_plan_refuses_what_it_cannot_split_or_pick(plugins, tmp_path) -> None:
    with pytest.raises(ConfigError, match="use a multiple of 4"):
        plan(
            _base(),
            ["toy-random", "toy-stuck"],
            pick=1,
            pilot_budget=42,
            out=tmp_path,
            registry=plugins,
        )
    with pytest.raises(ConfigError, match="two different candidates"):
        plan(
            _base(),
            ["toy-random", "toy-random"],
            pick=1,
            pilot_budget=40,
            out=tmp_path,
            registry=plugins,
        )
    with pytest.raises(ConfigError, match="--pick 3"):
        plan(
            _base(),
            ["toy-random", "toy-stuck"],
            pick=3,
            pilot_budget=40,
            out=tmp_path,
            registry=plugins,
        )
    assert not (tmp_path / "pilots").exists()  # refused before any pilot ran


def test_dei_plan_prints_the_table_the_pick_and_the_commands(
    plugins, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(cli, "registry", lambda: plugins)
    out = tmp_path / "plan"
    args = [
        "plan",
        "--domain",
        "toy",
        "--operator",
        "toy-random",
        "--operator",
        "toy-stuck",
        "--pick",
        "1",
        "--pilot-budget",
        "40",
        "--eval-workers",
        "0",
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(cli.dei, args)
    assert result.exit_code == 0, result.output
    assert "pilots: 40 of 40 calls" in result.output
    assert "toy-random + toy-stuck:" in result.output
    assert "pick (1): toy-random" in result.output
    assert "--condition chosen=toy-random" in result.output
    # The printed experiment splits equally: Solo, Diverse (2 nodes) and the pick, 2 rounds.
    assert "--budget 80 --rounds 2 --repeats 10" in result.output
    again = CliRunner().invoke(cli.dei, args)  # one plan per directory, one line
    assert again.exit_code != 0 and "holds a plan already" in again.output
