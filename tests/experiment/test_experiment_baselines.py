"""The baselines that could explain a Diverse win away, as ``dei experiment`` conditions:
``sample`` (every call from scratch), ``homo-temp`` (one operator, a strength or temperature
ladder across nodes) and ``adaptive`` (Diverse with ``--allocation bandit``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import toy_domain
from click.testing import CliRunner

from dei_framework import hookimpl
from dei_framework.app import cli
from dei_framework.app.cli_experiment import plan_from_flags
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.operators import OperatorSpec
from dei_framework.experiment.plan import (
    BUILTIN_CONDITIONS,
    Condition,
    ExperimentPlan,
    ladder,
    parse_conditions,
)
from dei_framework.experiment.runner import run_experiment
from dei_framework.plugin.manager import load_plugins

ALL = "solo,homo,homo-temp,sample,diverse,adaptive"


class SecondToyOperator:
    """A second toy operator (no ladder option), so Diverse has two operators to cycle."""

    @hookimpl
    def dei_operators(self):
        return [
            OperatorSpec(
                name="toy-b",
                domains=("toy",),
                description="toy, second label",
                factory=lambda ctx: toy_domain.ToyOperator("toy-b"),
            )
        ]


@pytest.fixture(scope="module")
def plugins():
    return load_plugins([toy_domain, SecondToyOperator()])


def _flags(**overrides):
    base = dict(
        domain="toy",
        operators=("toy-random", "toy-b"),
        budget=96,
        rounds=3,
        repeats=2,
        seed=11,
        eval_workers=0,
        nodes=4,
        conditions=ALL,
    )
    return {**base, **overrides}


def _events(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def experiment(tmp_path_factory, plugins):
    out = tmp_path_factory.mktemp("baselines")
    plan = plan_from_flags(_flags(), plugins)
    return out, plan, run_experiment(plan, out, registry=plugins)


def test_the_new_conditions_are_built_as_documented(plugins) -> None:
    conditions = {
        c.name: c
        for c in parse_conditions(
            ["sample", "homo-temp", "adaptive"], (), ["toy-random", "toy-b"], 4, registry=plugins
        )
    }
    assert conditions["sample"].operators == ("toy-random", "toy-b") * 2
    assert conditions["sample"].settings == {"new_fraction": 1.0}
    assert conditions["adaptive"].operators == ("toy-random", "toy-b") * 2
    assert conditions["adaptive"].settings == {"allocation": "bandit"}
    temp = conditions["homo-temp"]
    assert temp.operators == ("toy-random",) * 4  # the first operator only
    assert [o["strength"] for o in temp.node_options] == [0.5, 1.0, 1.5, 2.0]
    assert ladder(0.4, 1.3, 4) == [0.4, 0.7, 1.0, 1.3] and ladder(0.5, 2.0, 1) == [1.25]
    # recorded in experiment.json and read back as they were
    assert Condition.from_json(json.loads(json.dumps(temp.to_json()))) == temp
    assert Condition(name="solo", operators=["toy-random"]).to_json() == {
        "name": "solo",
        "operators": ["toy-random"],
    }  # older plans are unchanged


def test_conditions_that_cannot_be_built_are_refused_with_one_line(plugins) -> None:
    with pytest.raises(ConfigError, match="no temperature or strength option"):
        parse_conditions(["homo-temp"], (), ["toy-b"], 4, registry=plugins)
    with pytest.raises(ConfigError, match="adaptive"):
        parse_conditions(["adaptive"], (), ["toy-random"], 4, registry=plugins)
    with pytest.raises(ConfigError, match="may not set"):
        Condition(name="x", operators=["toy-random"], settings={"budget": 4})
    with pytest.raises(ConfigError, match="tokens"):
        plan_from_flags(
            _flags(conditions="adaptive", compute_axis="tokens", iterations=4, budget=400), plugins
        )


def test_the_help_lists_every_built_in_condition_and_each_listed_one_builds(plugins) -> None:
    result = CliRunner().invoke(
        cli.dei, ["experiment", "--help"], terminal_width=2000, max_content_width=2000
    )
    (line,) = [line for line in result.output.splitlines() if "--conditions LIST" in line]
    listed = line.split("built-in conditions:", 1)[1]
    assert len(BUILTIN_CONDITIONS) == 6
    for name, what in BUILTIN_CONDITIONS.items():
        assert f" {name} ({what})" in listed
        built = parse_conditions([name], (), ["toy-random", "toy-b"], 4, registry=plugins)
        assert built and {c.name.split(":")[0] for c in built} == {name}
    assert "(default: solo,homo,diverse unless --condition is given)" in listed
    with pytest.raises(ConfigError, match="built-in: solo, homo, diverse, sample, homo-temp, adap"):
        parse_conditions(["nosuch"], (), ["toy-random"], 4, registry=plugins)


def test_every_condition_gets_exactly_the_budget_and_is_compared_with_diverse(experiment) -> None:
    out, plan, summary = experiment
    names = ["solo", "homo:toy-random", "homo:toy-b", "homo-temp", "sample", "diverse", "adaptive"]
    assert [c.name for c in plan.conditions] == names
    assert summary["equal_compute"] is True
    for name in names:
        assert summary["conditions"][name]["budget"]["calls"] == [96, 96], name
    compared = {entry["b"] for entry in summary["comparisons"]}
    assert compared == set(names) - {"diverse"}
    for entry in summary["comparisons"]:
        assert {"shift", "ci", "a12", "p_value", "p_holm"} <= set(entry)


def test_each_condition_runs_what_it_says(experiment) -> None:
    out, plan, _ = experiment
    sample = out / "sample" / "repeat-0"
    kinds = {e["kind"] for e in _events(sample) if e["event"] == "evaluated"}
    assert "mutate" not in kinds and "new" in kinds  # no parent, ever
    assert json.loads((sample / "config.json").read_text())["new_fraction"] == 1.0
    temp = json.loads((out / "homo-temp" / "repeat-0" / "config.json").read_text())
    assert [n["options"]["strength"] for n in temp["nodes"]] == [0.5, 1.0, 1.5, 2.0]
    assert {n["operator"] for n in temp["nodes"]} == {"toy-random"}
    adaptive = out / "adaptive" / "repeat-0"
    decisions = [e for e in _events(adaptive) if e["event"] == "allocation"]
    assert [d["round"] for d in sorted(decisions, key=lambda d: d["round"])] == [1, 2]
    assert json.loads((adaptive / "config.json").read_text())["allocation"] == "bandit"
    diverse = json.loads((out / "diverse" / "repeat-0" / "config.json").read_text())
    assert "allocation" not in diverse and diverse["new_fraction"] == 0.1


def test_the_plan_reads_back_from_experiment_json(experiment) -> None:
    out, plan, _ = experiment
    again = ExperimentPlan.from_json(json.loads((out / "experiment.json").read_text()))
    assert again == plan


def test_the_cli_runs_all_six_conditions_with_the_statistics(
    tmp_path, monkeypatch, plugins
) -> None:
    monkeypatch.setattr(cli, "registry", lambda: plugins)
    out = tmp_path / "exp"
    result = CliRunner().invoke(
        cli.dei,
        [
            "experiment",
            "--domain",
            "toy",
            "--operator",
            "toy-random",
            "--operator",
            "toy-b",
            "--conditions",
            ALL,
            "--nodes",
            "2",
            "--budget",
            "24",
            "--rounds",
            "2",
            "--repeats",
            "2",
            "--eval-workers",
            "0",
            "--progress",
            "quiet",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    for name in ("homo-temp", "sample", "adaptive"):
        assert name in result.output
    report = (out / "report.md").read_text()
    assert "adaptive" in report and "homo-temp" in report and "sample" in report
    summary = json.loads((out / "summary.json").read_text())
    assert summary["equal_compute"] is True


def test_homo_temp_of_a_model_spreads_its_sampling_temperature() -> None:
    registry = load_plugins()  # the installed plugins: the llm one claims provider/model strings
    (condition,) = parse_conditions(
        ["homo-temp"], (), ["openai/gpt-4.1-mini"], 4, registry=registry
    )
    assert condition.operators == ("openai/gpt-4.1-mini",) * 4
    assert [o["temperature"] for o in condition.node_options] == [0.4, 0.7, 1.0, 1.3]
