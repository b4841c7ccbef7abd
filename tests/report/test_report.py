"""Tests of ``report.md`` and the plots, for runs and experiments, including degenerate runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import toy_domain
from click.testing import CliRunner

from dei_framework import hookimpl
from dei_framework.app import cli
from dei_framework.app.cli_experiment import plan_from_flags
from dei_framework.contract.domain import DomainSpec
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.operators import Operator, OperatorReply, OperatorSpec
from dei_framework.experiment.runner import run_experiment
from dei_framework.plugin.manager import load_plugins
from dei_framework.report.plots import final_archives
from dei_framework.report.write import write_run_report
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.ensemble import run
from dei_framework.runtime.files.run_files import read_finished_run
from dei_framework.search.archives import GridArchive

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class PlainToy(toy_domain.ToyDomain):
    """The toy domain without reference programs: generality is never measured."""

    name = "toy-plain"

    def generality(self, program):
        return None


class JunkOperator(Operator):
    """Never writes a valid program: the run ends with zero elites."""

    offline = True
    label = "toy-junk"
    max_in_flight = 4

    async def propose(self, request):
        return OperatorReply(text="I cannot help with that.")


class ReportPlugins:
    @hookimpl
    def dei_domains(self):
        return [DomainSpec(name="toy-plain", factory=PlainToy, description="toy, no generality")]

    @hookimpl
    def dei_operators(self):
        return [
            OperatorSpec(
                name="toy-junk",
                factory=lambda ctx: JunkOperator(),
                domains=("toy", "toy-plain"),
                description="junk",
            ),
            OperatorSpec(
                name="toy-b",
                factory=lambda ctx: toy_domain.ToyOperator("toy-b"),
                domains=("toy", "toy-plain"),
                description="toy, second label",
            ),
            OperatorSpec(
                name="toy-any",
                factory=lambda ctx: toy_domain.ToyOperator("toy-any"),
                domains=("toy-plain",),
                description="toy operator for toy-plain",
            ),
        ]


@pytest.fixture(scope="module")
def plugins():
    return load_plugins([toy_domain, ReportPlugins()])


def toy_run(path: Path, plugins, *, domain="toy", operators=("toy-random", "toy-b"), budget=16):
    nodes = [NodeConfig(name=f"node-{i}", operator=op) for i, op in enumerate(operators)]
    config = RunConfig(domain=domain, nodes=nodes, budget=budget, rounds=2, eval_workers=0)
    run(config, path, registry=plugins)
    return path


def assert_png(path: Path, min_bytes: int = 5000) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE), path
    assert len(data) > min_bytes, (path, len(data))


def linked_images(report: Path) -> list[str]:
    text = report.read_text()
    return [part.split(")")[0] for part in text.split("](")[1:]]


def test_run_report(tmp_path, plugins):
    path = toy_run(tmp_path / "run", plugins)
    report = write_run_report(path)
    assert report == path / "report.md"
    text = report.read_text()
    for node in ("node-0", "node-1"):
        assert node in text
    for heading in (
        "## Merged archive",
        "## Nodes",
        "## Per round",
        "## Operator divergence",
        "## Budget",
    ):
        assert heading in text
    images = linked_images(report)
    assert {"plots/heatmaps.png", "plots/progress.png", "plots/generality.png"} <= set(images)
    for image in images:
        assert not Path(image).is_absolute()
        assert_png(path / image)
    summary = json.loads((path / "summary.json").read_text())
    assert f"{summary['merged']['coverage']:.1%}" in text


def test_a_received_champion_is_credited_to_its_origin(tmp_path, plugins):
    path = toy_run(tmp_path / "run", plugins)
    summary_path = path / "summary.json"
    summary = json.loads(summary_path.read_text())
    # node-1's champion is one node-0 wrote and node-1 received: recorded as "peer:node-0",
    # as the scheduler labels received champions.
    summary["nodes"]["node-1"]["champion"]["operator"] = "peer:node-0"
    summary_path.write_text(json.dumps(summary))
    text = write_run_report(path).read_text()
    champions = text.split("## Champions")[1]
    assert "<summary>node-1 (toy-b), received from node-0 (toy-random): fitness" in champions
    # node-0's champion (this seeded run) is one of the initial opponents, warm-started into
    # its archive: marked as not the search's find.
    assert summary["nodes"]["node-0"]["champion"]["operator"] == "initial"
    assert (
        "<summary>node-0 (toy-random), the run's initial program (no candidate of the "
        "search beat it): fitness"
    ) in champions


def test_nodes_on_axes_of_their_own_are_drawn_in_the_runs_grid(tmp_path, plugins):
    """One node searches over "peak" alone: its archive has another shape. The report draws
    every node and the merge in the run's grid, as the run's own merge counts them."""
    nodes = [
        NodeConfig(name="node-0", operator="toy-random"),
        NodeConfig(name="node-1", operator="toy-b", axes=("peak",)),
    ]
    config = RunConfig(
        domain="toy", nodes=nodes, budget=40, rounds=2, eval_workers=0, axes=("length", "peak")
    )
    path = tmp_path / "run"
    run(config, path, registry=plugins)
    round_file = sorted((path / "nodes" / "node-1").glob("round-*.json"))[-1]
    own = json.loads(round_file.read_text())["archive"]["space"]
    assert [axis["name"] for axis in own] == ["peak"]  # the node's own, one-axis grid
    archives = final_archives(read_finished_run(path))
    assert {a.space.names for a in archives.values()} == {("length", "peak")}
    summary = json.loads((path / "summary.json").read_text())
    merged = GridArchive.merge(archives.values())
    assert merged.stats().coverage == pytest.approx(summary["merged"]["coverage"])
    report = write_run_report(path)
    assert_png(path / "plots" / "heatmaps.png")
    assert "node-1" in report.read_text()


def test_single_node_without_generality(tmp_path, plugins):
    path = toy_run(tmp_path / "run", plugins, domain="toy-plain", operators=("toy-any",), budget=8)
    text = write_run_report(path).read_text()
    assert "node-0" in text
    assert "plots/generality.png" not in text  # nothing measured, no empty plot
    assert_png(path / "plots" / "heatmaps.png")


def test_zero_valid_elites(tmp_path, plugins):
    path = toy_run(tmp_path / "run", plugins, operators=("toy-junk",), budget=8)
    summary = json.loads((path / "summary.json").read_text())
    assert summary["invalid"] == 8
    report = write_run_report(path)
    assert "node-0" in report.read_text()
    for image in linked_images(report):
        assert_png(path / image, min_bytes=1000)


def test_a_run_whose_round_files_are_gone_is_refused_naming_the_first(tmp_path, plugins):
    path = toy_run(tmp_path / "run", plugins)
    shutil.rmtree(path / "nodes")
    with pytest.raises(
        ConfigError,
        match=r"node-0/round-000.json is missing: .*summary.json "
        "says node node-0 finished 2 rounds",
    ):
        write_run_report(path)
    assert not (path / "report.md").exists() and not (path / "plots").exists()


@pytest.fixture(scope="module")
def experiment_dir(tmp_path_factory, plugins):
    out = tmp_path_factory.mktemp("experiment")
    flags = dict(
        domain="toy",
        operators=("toy-random", "toy-b"),
        budget=16,
        rounds=2,
        repeats=3,
        seed=1,
        eval_workers=0,
        conditions="solo,homo,diverse",
    )
    run_experiment(plan_from_flags(flags, plugins), out, registry=plugins)
    return out


def test_experiment_report(experiment_dir):
    report = write_run_report(experiment_dir)
    text = report.read_text()
    for name in ("solo", "homo:toy-random", "homo:toy-b", "diverse"):
        assert f"| {name} |" in text
    # Common-ground and raw figures side by side, and the comparisons with their n.
    assert "coverage (common)" in text and "QD-score (raw)" in text
    assert "## Comparisons" in text
    for other in ("solo", "homo:toy-random", "homo:toy-b"):
        assert f"| diverse − {other} | QD-score (common) | 3 / 3 |" in text
    assert "Mann-Whitney U" in text and "Hodges–Lehmann" in text and "Holm" in text
    # n = 3 against 3 cannot reach 95 %: the interval is the widest one, at its 90 %, italic.
    assert "[90.0%]*" in text
    # Statistics pooled over nodes and repeats say their n (4 nodes x 3 repeats).
    assert "(n = 12)" in text and "nodes × repeats" in text
    assert "K = 5" in text
    for node in ("node-0", "node-1", "node-2", "node-3"):
        assert node in text
    images = linked_images(report)
    expected = {
        "plots/final.png",
        "plots/progress.png",
        "plots/generality.png",
        "plots/heatmaps.png",
    }
    assert expected <= set(images)
    for image in images:
        assert_png(experiment_dir / image)
    assert "Equal compute holds" in text
    # A verdict per common-ground comparison, none for the raw ones; with 3 against 3
    # repeats the exact test's smallest p is 2 / C(6, 3) = 0.1, and the report says so.
    verdicts = [
        line for line in text.splitlines() if line.startswith("- ") and "after Holm" in line
    ]
    assert len(verdicts) == 2 * 3  # (coverage, QD-score) x (solo, homo, homo)
    assert all("(raw)" not in line for line in verdicts)
    assert all(
        "no difference can reach p < 0.05" in line and "is 0.100" in line for line in verdicts
    )
    assert all(" leads " in line or " are level, shift " in line for line in verdicts)


def test_a_static_domains_report_does_not_repeat_its_raw_figures(tmp_path, plugins):
    # Numeric has no opponents and no noise: every raw figure is its common-ground one.
    flags = dict(
        domain="numeric",
        operators=("gaussian", "iso-line"),
        budget=40,
        rounds=2,
        repeats=2,
        seed=1,
        eval_workers=0,
        conditions="solo,diverse",
    )
    run_experiment(plan_from_flags(flags, plugins), tmp_path, registry=plugins)
    text = write_run_report(tmp_path).read_text()
    assert "(raw)" not in text and "coverage (common)" in text
    assert "are the common-ground ones in every condition here" in text
    assert "re-evaluated on its own (the domain has no opponents" in text
    assert "0 programs" not in text and "-0.00" not in text
    assert "| diverse − solo | QD-score (common) | 2 / 2 |" in text
    run_text = write_run_report(tmp_path / "diverse" / "repeat-0").read_text()
    assert "| raw = common ground |" in run_text and "0 programs" not in run_text


def test_a_verdict_names_the_leader_and_when_n_allows_significance() -> None:
    from dei_framework.report.experiment_report import _verdict

    entry = {
        "a": "diverse",
        "b": "solo",
        "shift": -0.25,
        "p_holm": 0.01,
        "a12": 0.1,
        "ci": [-0.4, -0.1],
        "ci_level": 0.96,
        "ci95": [-0.4, -0.1],
        "n_a": 10,
        "n_b": 10,
    }
    text = _verdict(entry, "QD-score (common)", ".2f")
    assert text.startswith("QD-score (common): solo leads diverse by 0.25")
    assert "significant after Holm (p = 0.010)" in text and "not significant" not in text
    assert "cannot" not in text and "no difference can reach" not in text  # n = 10 can
    level = _verdict({**entry, "shift": 0.0, "p_holm": 0.9, "n_a": 2, "n_b": 2}, "x", ".2f")
    assert "are level" in level and "not significant after Holm" in level
    assert "smallest attainable p is 0.333" in level


def test_interrupted_experiment_report(tmp_path, experiment_dir):
    copy = tmp_path / "copy"
    shutil.copytree(experiment_dir, copy)
    (copy / "summary.json").unlink()
    (copy / "homo-toy-b" / "repeat-1" / "summary.json").unlink()
    text = write_run_report(copy).read_text()
    assert "Unfinished: homo:toy-b (2/3)" in text


def test_experiment_plots_rank_conditions_as_the_common_ground_table(
    tmp_path, experiment_dir, monkeypatch
):
    # What final.png draws (bar heights) must be the common-ground means of the report's
    # conditions table, so plot and table rank the conditions alike.
    from dei_framework.report import plots as plots_module

    drawn: dict[str, list[list[float]]] = {}
    labels: dict[str, list[str]] = {}
    save = plots_module._save

    def capture(fig, path):
        drawn[path.name] = [[bar.get_height() for bar in ax.patches] for ax in fig.axes]
        labels[path.name] = [ax.get_ylabel() for ax in fig.axes]
        save(fig, path)

    copy = tmp_path / "copy"
    shutil.copytree(experiment_dir, copy)
    monkeypatch.setattr(plots_module, "_save", capture)
    text = write_run_report(copy).read_text()
    summary = json.loads((copy / "summary.json").read_text())
    names = list(summary["conditions"])
    assert labels["final.png"] == [
        "merged coverage (common ground)",
        "merged QD-score (common ground)",
    ]
    for axis, field in enumerate(("coverage", "qd_score")):
        common = [summary["conditions"][n]["merged"]["common"][field]["mean"] for n in names]
        assert drawn["final.png"][axis] == pytest.approx(common)
        ranking = sorted(names, key=lambda n: -common[names.index(n)])
        plotted = sorted(names, key=lambda n: -drawn["final.png"][axis][names.index(n)])
        assert plotted == ranking
    for name in names:
        qd = summary["conditions"][name]["merged"]["common"]["qd_score"]
        assert f"{qd['mean']:.2f} ± {qd['std']:.2f}" in text  # the table the plot agrees with
    # progress.png: the common-ground champion panel first, the archives' figures labelled raw.
    assert labels["progress.png"] == [
        "champion fitness (common ground)",
        "merged coverage (raw)",
        "merged QD-score (raw)",
    ]


def test_a_summary_from_before_the_rank_intervals_still_reports(tmp_path, experiment_dir):
    # dei report on an experiment summarised by an older version: bootstrap ci95 only, no
    # shift, A12, Holm, units or K.
    copy = tmp_path / "old"
    shutil.copytree(experiment_dir, copy)
    summary = json.loads((copy / "summary.json").read_text())
    old_keys = {"a", "b", "metric", "diff", "ci95", "p_value", "test", "n_a", "n_b"}
    summary["comparisons"] = [
        {**{k: v for k, v in e.items() if k in old_keys}, "ci95": [-1.0, 1.0]}
        for e in summary["comparisons"]
    ]
    for condition in summary["conditions"].values():
        for key in ("common_seeds", "qd_score_sem", "elite_std_mean", "selection_qd_gap"):
            condition["merged"]["common"].pop(key)
        condition["generality"].pop("unit")
    (copy / "summary.json").write_text(json.dumps(summary))
    text = write_run_report(copy).read_text()
    assert "percentile bootstrap" in text and "[-1.00, 1.00]" in text
    assert "with one seed" in text and "K = " not in text


def test_not_a_run(tmp_path):
    with pytest.raises(ConfigError, match="neither a run nor an experiment"):
        write_run_report(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="has not finished"):
        write_run_report(tmp_path)


def test_report_command(tmp_path, plugins, monkeypatch):
    monkeypatch.setattr(cli, "registry", lambda: plugins)
    path = toy_run(tmp_path / "run", plugins, budget=8)
    result = CliRunner().invoke(cli.dei, ["report", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"report: {path / 'report.md'} (plots: ")
    assert f" in {path / 'plots'})" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    failed = CliRunner().invoke(cli.dei, ["report", str(empty)])
    assert failed.exit_code == 1
    assert failed.output.startswith("error: ") and failed.output.count("\n") == 1


def test_heatmaps_label_a_bounded_number_of_bins(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt
    import numpy as np

    from dei_framework.contract.descriptors import DescriptorSpace, ThresholdAxis, UniformAxis
    from dei_framework.report import plots

    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig))
    large = DescriptorSpace([UniformAxis("a", 0.0, 1.0, 100), UniformAxis("b", 0.0, 1.0, 100)])
    small = DescriptorSpace([ThresholdAxis("c", (1, 10, 100)), ThresholdAxis("d", (2, 20))])
    for space in (large, small):
        grid = np.full(space.shape, np.nan)
        grid[1, 1] = 1.0
        plots.plot_heatmaps([("node-0", grid)], space, tmp_path / "h.png", colorbar="fitness")
    try:
        for figure, space, most in zip(figures, (large, small), (plots.MAX_TICKS, 4), strict=True):
            axes = figure.axes[0]
            for ticks, axis in (
                (axes.get_xticklabels(), space.axes[0]),
                (axes.get_yticklabels(), space.axes[1]),
            ):
                texts = [tick.get_text() for tick in ticks]
                assert 2 <= len(texts) <= most and texts[0] == axis.labels()[0], texts
                assert set(texts) <= set(axis.labels())
            if space is small:  # a small grid still labels every bin
                assert len(axes.get_xticklabels()) == 4 and len(axes.get_yticklabels()) == 3
    finally:
        for figure in figures:
            plt.close(figure)


def test_a_champion_that_is_an_initial_program_is_marked_as_such() -> None:
    from dei_framework import NodeSummary
    from dei_framework.contract.run_summary import Champion
    from dei_framework.report.run_report import _origin

    node = {"calls": 1, "attempts": 1, "quota": 1, "rounds_completed": 1}
    nodes = {"node-0": NodeSummary(operator="gp", model="gp", champion=None, stopped=None, **node)}
    assert "initial program" in _origin(Champion(text="x", operator="initial"), nodes)
    assert "seed program" in _origin(Champion(text="x", operator="seed"), nodes)
    assert _origin(Champion(text="x", operator="gp"), nodes) == ""
    assert _origin(Champion(text="x", operator="peer:node-0"), nodes) == (
        ", received from node-0 (gp)"
    )


def test_a_node_has_one_colour_in_the_plots_and_on_the_watch_page(
    tmp_path, plugins, monkeypatch
) -> None:
    from dei_framework.analysis.formatting import MERGED_COLOR, NODE_COLORS
    from dei_framework.app.watch.run import WatchedRun
    from dei_framework.report import plots

    path = toy_run(tmp_path / "run", plugins)
    drawn = []
    line_plot = plots._line_plot

    def recording(ax, series, *, ylabel, colors=None):
        drawn.append(
            {
                label.split(" (")[0]: color
                for (label, _, _), color in zip(series, colors or [None] * len(series), strict=True)
            }
        )
        return line_plot(ax, series, ylabel=ylabel, colors=colors)

    monkeypatch.setattr(plots, "_line_plot", recording)
    write_run_report(path)
    state = WatchedRun(path).state(seconds=None)
    watch = {node["name"]: node["color"] for node in state["nodes"]}
    assert len(set(watch.values())) == len(watch) >= 2  # distinct, from the one palette
    assert set(watch.values()) <= set(NODE_COLORS)
    assert drawn and all(plot for plot in drawn)
    for plot in drawn:  # every plot gives every node the watch page's colour
        assert {name: color for name, color in plot.items() if name != "merged"} == watch
        assert plot.get("merged", MERGED_COLOR) == MERGED_COLOR
