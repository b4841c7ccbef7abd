"""``dei export`` on Core War runs: ``.red`` files that load, with comments naming their origin."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from dei_coreware.assembler import assemble, assemble_file
from dei_coreware.cli import coreware_group
from dei_coreware.export import export_text

from dei_framework.app.cli import dei
from dei_framework.contract.records import ExportedProgram
from dei_framework.plugin.manager import load_plugins
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.ensemble import run


@pytest.fixture(scope="module")
def coreware_run(tmp_path_factory) -> Path:
    """A small two-node gp run (2 rounds)."""
    path = tmp_path_factory.mktemp("export") / "run"
    nodes = [NodeConfig(name=f"node-{i}", operator="gp") for i in range(2)]
    config = RunConfig(domain="coreware", nodes=nodes, budget=16, rounds=2, eval_workers=0)
    run(config, path, registry=load_plugins())
    return path


def _export(source: Path, out: Path, *extra: str):
    result = CliRunner().invoke(dei, ["export", str(source), "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return result


def test_champions_and_elites_become_red_files_naming_their_origin(coreware_run, tmp_path):
    out = tmp_path / "out"
    result = _export(coreware_run, out)
    records = [json.loads(line) for line in (out / "programs.jsonl").read_text().splitlines()]
    assert f"exported {len(records)} programs to {out}" in result.output
    champions = [r for r in records if r["kind"] == "champion"]
    elites = [r for r in records if r["kind"] == "elite"]
    # Every round's champion of each node; the elites of each node's last round.
    assert sorted((r["node"], r["round"]) for r in champions) == [
        ("node-0", 0),
        ("node-0", 1),
        ("node-1", 0),
        ("node-1", 1),
    ]
    assert elites and {r["round"] for r in elites} == {1}
    summary = json.loads((coreware_run / "summary.json").read_text())
    for node, data in summary["nodes"].items():
        final = next(r for r in champions if r["node"] == node and r["round"] == 1)
        assert final["text"] == data["champion"]["text"]
    for record in records:
        path = out / record["file"]
        assert path.suffix == ".red" and record["domain"] == "coreware"
        warrior = assemble(path.read_text())
        assert warrior.name.startswith(f"run {record['node']} round {record['round']}")
        assert record["operator"] in warrior.author
        text = path.read_text()
        assert (
            f";strategy exported by dei export: run run, node {record['node']}, operator "
            f"{record['operator']}, round {record['round']}, fitness "
            f"{record['fitness']:.6g}, cell {record['cell']}"
        ) in text
        # The code is the run's: the same load image as the recorded text.
        assert assemble(text).instructions == assemble(record["text"]).instructions


def test_what_selects_champions_or_elites(coreware_run, tmp_path):
    _export(coreware_run, tmp_path / "champions", "--what", "champions")
    _export(coreware_run, tmp_path / "elites", "--what", "elites")
    assert {
        p.name.split("-r")[1].split("-")[1] for p in (tmp_path / "champions").glob("*.red")
    } == {"champion.red"}
    assert all("-elite-" in p.name for p in (tmp_path / "elites").glob("*.red"))


def test_exported_warriors_battle(coreware_run, tmp_path):
    out = tmp_path / "out"
    _export(coreware_run, out, "--what", "champions")
    files = sorted(out.glob("*.red"))[:2]
    result = CliRunner().invoke(coreware_group, ["battle", "-r", "3", *map(str, files)])
    assert result.exit_code == 0, result.output
    for path in files:
        assert assemble_file(path).name in result.output


def test_an_experiment_is_exported_run_by_run(coreware_run, tmp_path):
    experiment = tmp_path / "experiment"
    for name in ("solo/repeat-0", "homo/repeat-0"):
        shutil.copytree(coreware_run, experiment / name)
    out = tmp_path / "out"
    _export(experiment, out, "--what", "champions")
    runs = {json.loads(line)["run"] for line in (out / "programs.jsonl").read_text().splitlines()}
    assert runs == {"homo/repeat-0", "solo/repeat-0"}
    assert len(list(out.glob("homo_repeat-0-node-0-*.red"))) == 2


def test_a_directory_without_runs_is_one_clear_error(tmp_path):
    result = CliRunner().invoke(dei, ["export", str(tmp_path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert "holds no run" in result.output and "Traceback" not in result.output


def test_the_header_changes_nothing_pmars_loads(corewar_dir):
    """pMARS's reference load images of real warriors are unchanged by the exported header
    (placed after ``;redcode``, where pMARS reads comments, replacing ``;name``/``;author``)."""
    reference = json.loads(
        (corewar_dir / "reference" / "koenigstuhl-94nop-assembled.json").read_text()
    )
    folder = corewar_dir / "warriors" / "koenigstuhl-94nop"
    for name in sorted(reference)[:40]:
        text = (folder / name).read_text(errors="replace")
        program = ExportedProgram(
            text=text,
            run="r",
            node="node-0",
            operator="gp",
            round=0,
            fitness=1.0,
            cell=(1, 2),
            id="x",
            kind="champion",
        )
        warrior = assemble(export_text(program))
        got = {"start": warrior.start, "instructions": [i.as_list() for i in warrior.instructions]}
        expected = reference[name]
        assert got == {"start": expected["start"], "instructions": expected["instructions"]}, name
        assert warrior.name == "r node-0 round 0 champion"
