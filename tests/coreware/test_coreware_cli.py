"""Tests of ``dei coreware battle`` / ``assemble`` (click's CliRunner) against pMARS's output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from dei_coreware.assembler import assemble
from dei_coreware.cli import coreware_group

IMP = ";name Imp\n;author A. K. Dewdney\nimp mov 0, 1\n"
DWARF = ";name Dwarf\nadd #4, 3\nmov 2, @2\njmp -2\ndat #0, #0\n"


@pytest.fixture(scope="module")
def battles(corewar_dir: Path) -> list[dict]:
    """The pMARS reference battles."""
    path = corewar_dir / "reference" / "koenigstuhl-94nop-battles.json"
    return json.loads(path.read_text())


def _expected(battle: dict, folder: Path) -> str:
    warriors = [assemble((folder / f).read_text(errors="replace")) for f in battle["warriors"]]
    lines = []
    for i, w in enumerate(warriors):
        lines.append(f"{w.name} by {w.author} scores {battle['scores'][i]}")
        if len(warriors) > 2:
            lines.append("  Results: " + " ".join(map(str, battle["results"][i])))
    if len(warriors) == 2:
        lines.append("Results: " + " ".join(map(str, battle["results"][0])))
    return "\n".join(lines) + "\n"


def test_battle_prints_pmars_output(battles: list[dict], corewar_dir: Path) -> None:
    folder = corewar_dir / "warriors" / "koenigstuhl-94nop"
    runner = CliRunner()
    for battle in battles:
        args = ["battle", "-b", "-r", str(battle["rounds"]), "-F", str(battle["F"])]
        args += battle["settings"].split()
        args += [str(folder / f) for f in battle["warriors"]]
        result = runner.invoke(coreware_group, args)
        assert result.exit_code == 0, result.output
        assert result.output == _expected(battle, folder), battle["warriors"]


def test_battle_small_files(tmp_path: Path) -> None:
    (tmp_path / "imp.red").write_text(IMP)
    (tmp_path / "dwarf.red").write_text(DWARF)
    args = [
        "battle",
        "-r",
        "10",
        "-F",
        "1234",
        str(tmp_path / "imp.red"),
        str(tmp_path / "dwarf.red"),
    ]
    result = CliRunner().invoke(coreware_group, args)
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].startswith("Imp by A. K. Dewdney scores ")
    assert lines[1].startswith("Dwarf by Anonymous scores ")
    assert lines[2].startswith("Results: ")
    wins, losses, ties = map(int, lines[2].split()[1:])
    assert wins + losses + ties == 10
    again = CliRunner().invoke(coreware_group, args + ["--workers", "2"])
    assert again.output == result.output


def test_battle_bad_file_one_line(tmp_path: Path) -> None:
    (tmp_path / "imp.red").write_text(IMP)
    bad = tmp_path / "bad.red"
    bad.write_text("mov 0, 1\njmp nowhere\n")
    result = CliRunner().invoke(
        coreware_group, ["battle", "-F", "500", str(tmp_path / "imp.red"), str(bad)]
    )
    assert result.exit_code == 1
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert str(bad) in line and "line 2:" in line
    missing = CliRunner().invoke(coreware_group, ["battle", str(tmp_path / "nope.red")])
    assert missing.exit_code == 1 and "nope.red: cannot read" in missing.stderr


def test_battle_bad_settings(tmp_path: Path) -> None:
    (tmp_path / "imp.red").write_text(IMP)
    result = CliRunner().invoke(coreware_group, ["battle", "-s", "0", str(tmp_path / "imp.red")])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: coresize must be between 1 and 65535")


def test_assemble_json(tmp_path: Path) -> None:
    (tmp_path / "imp.red").write_text(IMP)
    (tmp_path / "bad.red").write_text("mov 0, 1\njmp nowhere\n")
    imp = str(tmp_path / "imp.red")
    ok = CliRunner().invoke(coreware_group, ["assemble", "--json", imp])
    assert ok.exit_code == 0
    assert json.loads(ok.output) == {imp: assemble(IMP).to_json()}
    bad = str(tmp_path / "bad.red")
    mixed = CliRunner().invoke(coreware_group, ["assemble", "--json", imp, bad])
    assert mixed.exit_code == 1
    data = json.loads(mixed.stdout)
    assert list(data) == [imp, bad]
    assert data[bad]["error"].startswith("line 2: ")


def test_assemble_takes_the_core_settings(tmp_path: Path) -> None:
    source = tmp_path / "w.red"
    source.write_text("start mov 0, CORESIZE-1\n dat #MAXLENGTH, #MINDISTANCE\n end start\n")
    result = CliRunner().invoke(
        coreware_group, ["assemble", "--json", "-s", "800", "-l", "20", "-d", "30", str(source)]
    )
    assert result.exit_code == 0, result.output
    image = json.loads(result.output)[str(source)]
    assert image["instructions"] == [["MOV", "I", "$", 0, "$", 799], ["DAT", "F", "#", 20, "#", 30]]
    default = json.loads(
        CliRunner().invoke(coreware_group, ["assemble", "--json", str(source)]).output
    )[str(source)]
    assert default["instructions"][0][5] == 7999
