"""Whole runs of the python domain: the bundled bin-packing task with the offline python-ast
operator on four nodes (evaluations in this process and in two workers, the sandbox at its
default level), and an OpenEvolve task folder through `dei-run --task` with its features as
the grid's axes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dei_framework import NodeConfig, RunConfig, load_plugins, run

FEATURES = ["best_fit_agreement", "first_fit_agreement"]
BUDGET = 40


def _events(out: Path) -> list[dict]:
    lines = (out / "events.jsonl").read_text().splitlines()
    return [event for event in map(json.loads, lines) if event["event"] == "evaluated"]


def _run(out: Path, workers: int) -> dict:
    config = RunConfig(
        domain="python",
        budget=BUDGET,
        rounds=2,
        seed=7,
        eval_workers=workers,
        nodes=[NodeConfig(name=f"node-{i}", operator="python-ast") for i in range(4)],
    )
    return run(config, out, registry=load_plugins())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """The same seeded run with evaluations in this process (0) and in two workers (2)."""
    root = tmp_path_factory.mktemp("python-runs")
    outs = {}
    for workers in (0, 2):
        outs[workers] = root / f"workers-{workers}"
        _run(outs[workers], workers)
    return outs


@pytest.mark.timeout(600)
@pytest.mark.parametrize("workers", [0, 2])
def test_four_nodes_on_the_bundled_task_use_its_features_as_axes(runs, workers) -> None:
    out = runs[workers]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["space"]["axes"] == FEATURES
    assert summary["lifecycle"] == "continual"  # the initial program is a seed, not an opponent
    assert summary["budget"]["calls"] == BUDGET
    events = _events(out)
    seeds = [e for e in events if e["operator"] == "seed"]
    assert len(seeds) == 4 and all(e["status"] != "invalid" for e in seeds)  # the scaffold runs
    # A seed program, not an opponent: no round fought anyone, and common ground (if asked)
    # would need no reference set.
    rounds = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    rounds = [e for e in rounds if e["event"] == "round"]
    assert len(rounds) == 8 and all(e["opponents"] == [] for e in rounds)
    made = [e for e in events if e["kind"] in ("new", "mutate")]
    assert len(made) == BUDGET
    assert sum(e["status"] != "invalid" for e in made) > BUDGET // 2
    for event in made:
        if event["status"] == "invalid":
            assert event["error"]  # every invalid child says why
        else:
            assert set(event["descriptor"]) == set(FEATURES)


@pytest.mark.timeout(600)
def test_the_run_does_not_depend_on_where_evaluations_run(runs) -> None:
    def archive(out: Path) -> list[dict]:
        return json.loads((out / "merged_archive.json").read_text())

    assert archive(runs[0]) == archive(runs[2])
    assert len(archive(runs[0])) >= 1


@pytest.mark.timeout(600)
def test_dei_run_takes_an_openevolve_task_folder(cli, task: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = cli(
        "dei-run",
        "--domain",
        "python",
        "--task",
        str(task),
        "--operator",
        "python-ast",
        "--nodes",
        "2",
        "--budget",
        "16",
        "--rounds",
        "2",
        "--eval-workers",
        "2",
        "--out",
        str(out),
        "--progress",
        "quiet",
        "--no-report",
        timeout=600,
    )
    # --operator gives the nodes: the task's models are not used, and a line says so.
    assert (
        "config.yaml: llm.models, llm.temperature are not used: --operator gives the nodes"
        in result.stderr
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["space"]["axes"] == ["distance", "magnitude"]
    assert summary["space"]["shape"] == [5, 5]
    assert json.loads((out / "config.json").read_text())["domain_options"]["task"] == str(task)
    elites = json.loads((out / "merged_archive.json").read_text())
    assert all("# EVOLVE-BLOCK-START" in elite["text"] for elite in elites)
    assert max(elite["fitness"] for elite in elites) >= -4.0  # the seed's, or better


@pytest.mark.timeout(600)
def test_dei_export_writes_runnable_python_files(cli, runs, tmp_path: Path) -> None:
    out = tmp_path / "exported"
    cli("dei", "export", str(runs[0]), "--out", str(out), timeout=600)
    files = sorted(out.glob("*.py"))
    assert files and not list(out.glob("*.txt"))
    namespace: dict = {}
    exec(compile(files[0].read_text(), str(files[0]), "exec"), namespace)  # our own elite
    assert 2 <= len(namespace["pack"]([50, 50, 60], 100)) <= 3  # the scaffold's harness runs
