"""``dei export --best`` on a python-domain run: one runnable ``.py`` file holding the best
program of the merged archive, ranked by common-ground fitness when the run has it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from dei_framework import NodeConfig, RunConfig, load_plugins, run
from dei_framework.contract.errors import ConfigError
from dei_framework.report.export import best_program, export_best


def _run(out: Path, task: Path, *, common: bool) -> Path:
    config = RunConfig(
        domain="python",
        domain_options={"task": str(task)},
        budget=16,
        rounds=2,
        seed=5,
        eval_workers=0,
        common_ground=common,
        common_seeds=2,
        nodes=[NodeConfig(name=f"node-{i}", operator="python-ast") for i in range(2)],
    )
    run(config, out, registry=load_plugins())
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from openevolve_task import write_task

    root = tmp_path_factory.mktemp("best")
    task = write_task(root / "guess_task")
    return {
        "common": _run(root / "common", task, common=True),
        "raw": _run(root / "raw", task, common=False),
    }


def _entries(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "merged_archive.json").read_text())


@pytest.mark.timeout(600)
def test_the_best_of_a_common_ground_run_is_written_as_its_py_file(runs, tmp_path, cli) -> None:
    entries = _entries(runs["common"])
    assert len(entries) >= 2 and all(e["common_fitness"] is not None for e in entries)
    top = max(e["common_fitness"] for e in entries)
    out = tmp_path / "best.py"
    # This interpreter's `dei`, whatever PATH holds first.
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    result = cli("dei", "export", "--best", str(runs["common"]), "--out", str(out), env=env)
    chosen = next(e for e in entries if e["common_fitness"] == top)  # the first of equals
    assert out.read_text() == chosen["text"]  # the python plugin's format: the program itself
    assert "# EVOLVE-BLOCK-START" in out.read_text()
    line = result.stdout.splitlines()[0]
    # The python domain is deterministic: common ground measured each program once.
    assert line.startswith(f"best by common-ground fitness {top:.6g} (one evaluation; raw ")
    assert f"node {chosen['node']}" in line and f"wrote {out}" in result.stdout
    # The file is the program: it runs as it is.
    namespace: dict = {}
    exec(compile(out.read_text(), str(out), "exec"), namespace)  # noqa: S102
    assert isinstance(namespace["guess"](), float | int)


@pytest.mark.timeout(600)
def test_without_common_ground_raw_fitness_ranks_and_the_line_says_so(runs, tmp_path, cli) -> None:
    entries = _entries(runs["raw"])
    best = best_program(runs["raw"])
    assert best.basis == "raw" and best.samples == 1
    assert best.score == max(e["fitness"] for e in entries)
    assert "raw fitness" in best.line and "no common ground" in best.line
    folder = tmp_path / "folder"
    folder.mkdir()
    path, again = export_best(runs["raw"], folder, load_plugins())
    assert path.parent == folder and path.suffix == ".py" and again == best
    refused = cli(
        "dei",
        "export",
        "--best",
        "--what",
        "elites",
        str(runs["raw"]),
        "--out",
        str(tmp_path / "x.py"),
        check=False,
    )
    assert refused.returncode != 0 and "takes no --what" in refused.stderr


def test_an_experiment_or_an_unfinished_run_is_refused_with_a_line(runs, tmp_path) -> None:
    with pytest.raises(ConfigError, match="--best takes one run; .* holds 2"):
        best_program(runs["common"].parent)
    unfinished = tmp_path / "unfinished"
    (unfinished / "nodes" / "node-0").mkdir(parents=True)
    (unfinished / "nodes" / "node-0" / "round-000.json").write_text("{}")
    with pytest.raises(ConfigError, match="has no summary.json: the run has not finished"):
        best_program(unfinished)
