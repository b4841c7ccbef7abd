"""Tests of ``dei experiment``: equal compute, conditions, aggregation, resume and the CLI."""

from __future__ import annotations

import json
import math
import statistics

import pytest
import toy_domain
from click.testing import CliRunner

from dei_framework import hookimpl
from dei_framework.analysis.stats import holm
from dei_framework.app import cli
from dei_framework.app.cli_experiment import plan_from_flags
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.operators import OperatorSpec
from dei_framework.experiment.plan import Condition, ExperimentPlan, parse_conditions
from dei_framework.experiment.runner import run_experiment
from dei_framework.experiment.summary import describe, metric_values, summarize_condition
from dei_framework.plugin.manager import load_plugins

BUDGET = 48


class SecondToyOperator:
    """A second toy operator label, so Diverse has two different operators to cycle."""

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


def flags(**overrides):
    base = dict(
        domain="toy",
        operators=("toy-random", "toy-b"),
        budget=BUDGET,
        rounds=2,
        repeats=2,
        seed=7,
        eval_workers=0,
        conditions="solo,homo,diverse",
    )
    return {**base, **overrides}


@pytest.fixture(scope="module")
def experiment(tmp_path_factory, plugins):
    out = tmp_path_factory.mktemp("experiment")
    plan = plan_from_flags(flags(), plugins)
    summary = run_experiment(plan, out, registry=plugins)
    return out, plan, summary


def test_conditions_have_the_right_nodes_and_operators(experiment):
    _, plan, summary = experiment
    conditions = summary["conditions"]
    # Two distinct operators: one Homo condition per operator, so Diverse meets both.
    assert list(conditions) == ["solo", "homo:toy-random", "homo:toy-b", "diverse"]
    assert conditions["solo"]["operators"] == ["toy-random"]
    assert conditions["homo:toy-random"]["operators"] == ["toy-random"] * 4
    assert conditions["homo:toy-b"]["operators"] == ["toy-b"] * 4
    assert conditions["diverse"]["operators"] == ["toy-random", "toy-b", "toy-random", "toy-b"]
    for name, condition in conditions.items():
        for run in condition["runs"]:
            operators = [node["operator"] for node in run["nodes"].values()]
            assert operators == condition["operators"], name


def test_equal_compute_holds_exactly(experiment):
    _, _, summary = experiment
    assert summary["equal_compute"] is True
    for condition in summary["conditions"].values():
        assert condition["budget"]["calls"] == [BUDGET, BUDGET]
        assert condition["budget"]["limits"] == [BUDGET, BUDGET]
        assert condition["budget"]["per_node"] * condition["nodes"] == BUDGET
        for run in condition["runs"]:
            quotas = {node["quota"] for node in run["nodes"].values()}
            assert quotas == {BUDGET // condition["nodes"]}


def test_repeats_share_seeds_across_conditions(experiment):
    out, _, summary = experiment
    assert summary["seeds"] == [7, 8]
    for name, condition in summary["conditions"].items():
        assert [run["seed"] for run in condition["runs"]] == [7, 8]
        for k, run in enumerate(condition["runs"]):
            # Folders are valid file names everywhere: "homo:toy-b" runs in "homo-toy-b/".
            assert run["dir"] == f"{name.replace(':', '-')}/repeat-{k}"
            assert (out / run["dir"] / "summary.json").exists()
    assert json.loads((out / "summary.json").read_text()) == summary


def test_aggregates_match_the_runs(experiment):
    _, _, summary = experiment
    for condition in summary["conditions"].values():
        coverage = [run["merged"]["coverage"] for run in condition["runs"]]
        stats = condition["merged"]["coverage"]
        assert stats["values"] == coverage
        assert stats["mean"] == pytest.approx(statistics.fmean(coverage))
        assert stats["std"] == pytest.approx(statistics.stdev(coverage))
        qd = [run["merged"]["qd_score"] for run in condition["runs"]]
        assert condition["merged"]["qd_score"]["mean"] == pytest.approx(statistics.fmean(qd))
        assert len(condition["merged"]["per_round"]) == 2
        last = condition["merged"]["per_round"][-1]["coverage"]["values"]
        assert last == [run["merged"]["per_round"][-1]["coverage"] for run in condition["runs"]]
        generality = [
            run["nodes"][node]["generality"]
            for run in condition["runs"]
            for node in condition["per_node"]
        ]
        assert condition["generality"]["mean"] == pytest.approx(statistics.fmean(generality))
        # Pooled over nodes and repeats, and it says so: n is nodes x repeats, not repeats.
        assert condition["generality"]["n"] == condition["nodes"] * 2 == len(generality)
        assert condition["generality"]["unit"] == "nodes x repeats"
        assert condition["merged"]["coverage"]["unit"] == "repeats"
        for node, stats in condition["per_node"].items():
            assert stats["generality"]["values"] == [
                run["nodes"][node]["generality"] for run in condition["runs"]
            ]
            assert len(stats["generality_per_round"]) == 2


def test_every_condition_has_common_ground_figures_and_merged_archives(experiment):
    out, plan, summary = experiment
    references = set()
    for condition in summary["conditions"].values():
        common = condition["merged"]["common"]
        assert common["coverage"]["n"] == 2 and common["qd_score"]["n"] == 2
        assert 0.0 < common["coverage"]["mean"] <= 1.0
        assert set(common["reference"]) == {"count", "sha256"}
        references.add(common["reference"]["sha256"])
        # The toy's reference set is its two initial opponents.
        assert common["reference"]["count"] == 2
        for run in condition["runs"]:
            elites = json.loads((out / run["dir"] / "merged_archive.json").read_text())
            keys = {"text", "cell", "fitness", "common_fitness", "node"}
            assert elites and keys <= set(elites[0])
            # merged.common describes exactly this archive.
            assert len(elites) == run["merged"]["common"]["num_elites"]
            assert sum(e["common_fitness"] for e in elites) == pytest.approx(
                run["merged"]["common"]["qd_score"]
            )
            assert len({tuple(e["cell"]) for e in elites}) == len(elites)
    assert len(references) == 1
    assert summary["common_reference"]["sha256"] in references


def test_the_same_text_gets_the_same_common_fitness_in_every_condition(experiment, plugins):
    out, plan, summary = experiment
    seen: dict[str, dict[str, float]] = {}
    for name, condition in summary["conditions"].items():
        for k, run in enumerate(condition["runs"]):
            for elite in json.loads((out / run["dir"] / "merged_archive.json").read_text()):
                seen.setdefault(elite["text"], {})[f"{name}/{k}"] = elite["common_fitness"]
    shared = {
        text: found
        for text, found in seen.items()
        if len({key.split("/")[0] for key in found}) >= 2
    }
    assert shared, "no program was found by two conditions"
    for text, found in shared.items():
        assert len(set(found.values())) == 1, (text, found)
    # And it is the mean fitness against the reference set over the text's own K scoring
    # seeds (derived from the reference set and the text: the same in every run).
    from dei_framework.analysis.common_ground import build_reference

    domain = toy_domain.ToyDomain()
    reference = build_reference(domain, scoring=plan.base.common_seeds)
    for text, found in shared.items():
        direct = [
            domain.evaluate(domain.parse(text), reference.programs, seed=seed).fitness
            for seed in reference.seeds_for(text)
        ]
        assert next(iter(found.values())) == pytest.approx(statistics.fmean(direct))


def test_comparisons_put_diverse_against_every_other_condition(experiment):
    _, _, summary = experiment
    pairs = {(c["b"], c["metric"]) for c in summary["comparisons"]}
    others = ["solo", "homo:toy-random", "homo:toy-b"]
    metrics = [
        "merged.common.coverage",
        "merged.common.qd_score",
        "merged.coverage",
        "merged.qd_score",
    ]
    assert pairs == {(b, m) for b in others for m in metrics}
    for entry in summary["comparisons"]:
        assert entry["a"] == "diverse" and entry["n_a"] == entry["n_b"] == 2
        assert entry["unit"] == "repeats"
        a = summary["conditions"]["diverse"]
        b = summary["conditions"][entry["b"]]
        path = entry["metric"].split(".")
        mean_a, mean_b = (c[path[0]] if len(path) == 2 else c[path[0]][path[1]] for c in (a, b))
        key = path[-1]
        assert entry["diff"] == pytest.approx(mean_a[key]["mean"] - mean_b[key]["mean"])
        # n = 2 against 2 cannot reach 95 %: the widest rank interval (the extreme pairwise
        # differences) is given at its exact level 1 - 2/6, and ci95 stays empty.
        low, high = entry["ci"]
        assert low <= entry["shift"] <= high
        assert entry["ci95"] is None and entry["ci_level"] == pytest.approx(2 / 3)
        values = [
            metric_values(summary["conditions"][c], entry["metric"])
            for c in ("diverse", entry["b"])
        ]
        differences = [x - y for x in values[0] for y in values[1]]
        assert (low, high) == (pytest.approx(min(differences)), pytest.approx(max(differences)))
        assert entry["a12"] == pytest.approx(
            sum((x > y) + 0.5 * (x == y) for x in values[0] for y in values[1]) / 4
        )
        # n = 2 against 2: the exact test can only give p = 1/3, 2/3 or 1.
        assert any(entry["p_value"] == pytest.approx(p) for p in (1 / 3, 2 / 3, 1.0))
        assert "Mann-Whitney" in entry["test"]
    # Holm within each metric: the three comparisons of one metric form the family.
    for metric in metrics:
        family = [e for e in summary["comparisons"] if e["metric"] == metric]
        assert [e["p_holm"] for e in family] == pytest.approx(holm([e["p_value"] for e in family]))
        assert all(e["p_holm"] >= e["p_value"] and e["holm_family"] == 3 for e in family)


def test_homo_stays_one_condition_with_one_operator():
    conditions = parse_conditions(["solo", "homo"], [], ["a"], 3)
    assert [(c.name, c.operators) for c in conditions] == [
        ("solo", ("a",)),
        ("homo", ("a", "a", "a")),
    ]
    expanded = parse_conditions(["homo"], [], ["a", "openai/m", "a"], 2)
    assert [(c.name, c.folder) for c in expanded] == [
        ("homo:a", "homo-a"),
        ("homo:openai/m", "homo-openai_m"),
    ]


def test_describe_by_hand():
    stats = describe([1.0, 2.0, None, 4.0])
    assert stats["mean"] == pytest.approx(7 / 3)
    assert stats["std"] == pytest.approx(math.sqrt(7 / 3))  # sample std of 1, 2, 4
    assert stats["n"] == 3
    assert stats["values"] == [1.0, 2.0, None, 4.0]
    assert describe([0.5]) == {"mean": 0.5, "std": None, "n": 1, "unit": "repeats", "values": [0.5]}
    assert describe([0.5, 1.0], unit="nodes x repeats")["unit"] == "nodes x repeats"
    assert describe([None, float("nan")])["mean"] is None


def fake_run(coverage, qd, generality, novelty):
    nodes = {
        f"node-{i}": {
            "operator": "x",
            "calls": 4,
            "generality": g,
            "generality_peak": g,
            "generality_per_round": [None, g],
            "niche_novelty": n,
            "champion": {"fitness": 1.0},
        }
        for i, (g, n) in enumerate(zip(generality, novelty, strict=True))
    }
    return {
        "merged": {
            "coverage": coverage,
            "qd_score": qd,
            "num_elites": 1,
            "obj_max": 1.0,
            "per_round": [
                {"coverage": coverage / 2, "qd_score": qd / 2},
                {"coverage": coverage, "qd_score": qd},
            ],
        },
        "nodes": nodes,
        "operator_divergence": {"mean": None},
        "budget": {"calls": 8, "limit": 8, "attempts": 8, "cost_usd": 0.0},
    }


def test_summarize_condition_hand_checked():
    runs = [
        fake_run(0.2, 3.0, [0.5, None], [0.1, 0.3]),
        fake_run(0.4, 5.0, [0.7, 0.9], [None, 0.5]),
    ]
    condition = summarize_condition(Condition(name="c", operators=["x", "x"]), runs, 8)
    assert condition["merged"]["coverage"]["mean"] == pytest.approx(0.3)
    assert condition["merged"]["coverage"]["std"] == pytest.approx(math.sqrt(0.02))
    assert condition["merged"]["qd_score"] == {
        "mean": 4.0,
        "std": pytest.approx(math.sqrt(2)),
        "n": 2,
        "unit": "repeats",
        "values": [3.0, 5.0],
    }
    assert condition["merged"]["per_round"][0]["coverage"]["mean"] == pytest.approx(0.15)
    # Generality: over nodes and repeats, the missing value left out: (0.5 + 0.7 + 0.9) / 3.
    assert condition["generality"]["mean"] == pytest.approx(0.7)
    assert condition["generality"]["values"] == [0.5, None, 0.7, 0.9]
    assert condition["generality"]["n"] == 3
    assert condition["generality"]["unit"] == "nodes x repeats"
    assert condition["niche_novelty"]["mean"] == pytest.approx(0.3)
    assert condition["per_node"]["node-1"]["generality"]["values"] == [None, 0.9]
    assert condition["per_node"]["node-0"]["generality_per_round"][0]["mean"] is None
    assert condition["per_node"]["node-0"]["generality_per_round"][1]["mean"] == pytest.approx(0.6)
    assert condition["budget"]["equal_compute"] is True
    short = summarize_condition(Condition(name="c", operators=["x", "x"]), runs[:1], 16)
    assert short["budget"]["equal_compute"] is False


@pytest.mark.parametrize(
    ("budget", "rounds", "match"),
    [(50, 2, "across the 4 nodes"), (44, 2, "across 2 rounds"), (3, 1, "across the 4 nodes")],
)
def test_budget_must_split_equally(plugins, budget, rounds, match):
    with pytest.raises(ConfigError, match=match):
        plan_from_flags(flags(budget=budget, rounds=rounds), plugins)


def test_condition_errors(plugins):
    with pytest.raises(ConfigError, match="at least two different operators"):
        plan_from_flags(flags(operators=("toy-random",)), plugins)
    with pytest.raises(ConfigError, match="unknown condition 'duo'"):
        plan_from_flags(flags(conditions="solo,duo"), plugins)
    with pytest.raises(ConfigError, match="NAME=op1,op2"):
        parse_conditions([], ["justaname"], ["a"], 4)
    with pytest.raises(ConfigError, match="unknown operator"):
        plan_from_flags(flags(conditions="", condition=("mix=toy-random,nope",)), plugins)
    with pytest.raises(ConfigError, match="--budget"):
        plan_from_flags(flags(iterations=5), plugins)


def test_custom_conditions(plugins):
    plan = plan_from_flags(
        flags(
            conditions="solo",
            nodes=2,
            budget=8,
            condition=("mix=toy-b,toy-b,toy-random,toy-random",),
        ),
        plugins,
    )
    assert [(c.name, c.operators) for c in plan.conditions] == [
        ("solo", ("toy-random",)),
        ("mix", ("toy-b", "toy-b", "toy-random", "toy-random")),
    ]
    only_custom = plan_from_flags(
        flags(conditions=None, budget=4, rounds=1, condition=("pair=toy-b,toy-random",)), plugins
    )
    assert [c.name for c in only_custom.conditions] == ["pair"]


def test_resume_skips_finished_and_resumes_unfinished(tmp_path, plugins):
    plan = plan_from_flags(flags(conditions="solo,diverse", repeats=1, budget=8), plugins)
    first = run_experiment(plan, tmp_path, registry=plugins)
    finished = tmp_path / "solo" / "repeat-0" / "summary.json"
    stamp = finished.stat().st_mtime_ns
    interrupted = tmp_path / "diverse" / "repeat-0" / "summary.json"
    interrupted.unlink()  # as if it had stopped after its last checkpoint
    lines: list[str] = []
    more = ExperimentPlan(base=plan.base, conditions=plan.conditions, budget=8, repeats=2)
    summary = run_experiment(more, tmp_path, registry=plugins, announce=lines.append)
    assert finished.stat().st_mtime_ns == stamp
    assert any("solo repeat 0" in line and "already finished" in line for line in lines)
    assert any("diverse repeat 0" in line and "resuming" in line for line in lines)
    assert interrupted.exists()
    diverse = summary["conditions"]["diverse"]
    assert diverse["repeats_completed"] == 2
    assert diverse["budget"]["calls"] == [8, 8]
    assert diverse["runs"][0]["merged"] == first["conditions"]["diverse"]["runs"][0]["merged"]
    other = plan_from_flags(flags(conditions="solo", repeats=1, budget=16), plugins)
    with pytest.raises(ConfigError, match="different experiment"):
        run_experiment(other, tmp_path, registry=plugins)


@pytest.fixture
def cli_plugins(monkeypatch, plugins):
    monkeypatch.setattr(cli, "registry", lambda: plugins)


def test_cli_runs_an_experiment_and_writes_the_report(tmp_path, cli_plugins):
    out = tmp_path / "exp"
    args = [
        "experiment",
        "--domain",
        "toy",
        "--operator",
        "toy-random",
        "--operator",
        "toy-b",
        "--nodes",
        "2",
        "--budget",
        "8",
        "--rounds",
        "2",
        "--repeats",
        "1",
        "--eval-workers",
        "0",
        "--progress",
        "quiet",
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(cli.dei, args)
    assert result.exit_code == 0, result.output
    assert "solo" in result.output and "diverse" in result.output
    assert (out / "summary.json").exists() and (out / "report.md").exists()
    _assert_table_aligned(result.output, {"solo", "homo:toy-random", "homo:toy-b", "diverse"})
    again = CliRunner().invoke(cli.dei, args)
    assert again.exit_code == 1
    assert "--resume" in again.output
    resumed = CliRunner().invoke(
        cli.dei,
        [
            "experiment",
            "--resume",
            str(out),
            "--repeats",
            "2",
            "--progress",
            "quiet",
            "--no-report",
        ],
    )
    assert resumed.exit_code == 0, resumed.output
    _assert_table_aligned(resumed.output, {"solo", "homo:toy-random", "homo:toy-b", "diverse"})
    summary = json.loads((out / "summary.json").read_text())
    assert summary["conditions"]["homo:toy-random"]["budget"]["calls"] == [8, 8]
    assert (out / "homo-toy-b" / "repeat-1" / "merged_archive.json").exists()


def _assert_table_aligned(output: str, conditions: set[str]) -> None:
    """The end-of-run table: one line per condition, every column starting at one offset."""
    lines = [line for line in output.splitlines() if " node(s)  " in line]
    assert {line.split()[0] for line in lines} == conditions, output
    for column in (" node(s)", "common ground:", "QD-score", "(raw:", "calls"):
        assert len({line.index(column) for line in lines}) == 1, (column, output)


def test_cli_errors_are_one_line(tmp_path, cli_plugins):
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
            "--budget",
            "10",
            "--out",
            str(tmp_path / "x"),
        ],
    )
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0
    assert result.output.startswith("error: --budget 10 does not split equally")
    missing = CliRunner().invoke(cli.dei, ["experiment", "--resume", str(tmp_path)])
    assert missing.exit_code == 1
    assert "not an experiment directory" in missing.output


def test_config_file_budget_and_iterations(tmp_path, plugins):
    config = tmp_path / "dei.toml"
    config.write_text('domain = "toy"\noperators = ["toy-random", "toy-b"]\nbudget = 16\n')
    plan = plan_from_flags({"config_file": str(config), "rounds": 2, "conditions": "solo"}, plugins)
    assert plan.budget == 16
    assert plan.base.domain == "toy"
    config.write_text('domain = "toy"\noperators = ["toy-random"]\niterations = 4\n')
    with pytest.raises(ConfigError, match="not --iterations"):
        plan_from_flags({"config_file": str(config)}, plugins)
