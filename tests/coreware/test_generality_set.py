"""A clean generality set: disjoint from the training opponents, refused or trimmed otherwise."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from dei_coreware.assembler import AssemblerSettings, assemble, assemble_file
from dei_coreware.domain import DEFAULT_OPPONENTS, CorewarDomain
from dei_coreware.generality import (
    BUNDLED_GENERALITY,
    BUNDLED_OPPONENTS,
    NEAR_DUPLICATE,
    bundled_warrior,
    canonical,
    generality,
    load_warrior_set,
    near_duplicates,
    shape_similarity,
)
from dei_coreware.mars import MarsSettings

from dei_framework.analysis.common_ground import reference_record
from dei_framework.contract.errors import ReferenceOverlap


def test_the_bundled_folders_split_opponents_from_the_generality_set() -> None:
    domain = CorewarDomain()
    opponents = {canonical(domain.parse(t).data) for t in domain.initial_opponents()}
    general = set(domain.generality_reference())
    assert len(opponents) == len(DEFAULT_OPPONENTS) and len(general) >= 6
    assert not opponents & general
    assert {p.stem for p in BUNDLED_OPPONENTS.glob("*.red")} == set(DEFAULT_OPPONENTS)
    assert not {p.stem for p in BUNDLED_OPPONENTS.glob("*.red")} & {
        p.stem for p in BUNDLED_GENERALITY.glob("*.red")
    }


#: pMARS's '94 hill settings, the ones the reference load images were made with.
HILL = AssemblerSettings(
    coresize=8000, maxprocesses=8000, maxcycles=80000, maxlength=100, mindistance=100
)
GENERALITY_FILES = sorted(BUNDLED_GENERALITY.glob("*.red"))
OPPONENT_FILES = sorted(BUNDLED_OPPONENTS.glob("*.red"))
#: An old bundled generality warrior: a dwarf with a SPL bomb (one line more, other step).
STUNNER = """;redcode-94
step    equ     5
loop    add.ab  #step, ptr
        mov.i   bomb, @ptr
        jmp     loop
ptr     dat     #0, #0
bomb    spl     #0, 0
        end     loop
"""


def test_the_generality_set_is_large_documented_and_written_by_the_project() -> None:
    assert len(GENERALITY_FILES) >= 30
    for file in GENERALITY_FILES:
        text = file.read_text()
        assert text.startswith(";redcode-94\n"), file.name
        assert re.search(r"^;name \S", text, re.MULTILINE), file.name
        assert re.search(r"^;author DEI project$", text, re.MULTILINE), file.name
        assert re.search(r"^;strategy \S", text, re.MULTILINE), file.name


def test_the_docs_list_every_generality_warrior() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "coreware.md").read_text()
    assert f"{len(GENERALITY_FILES)} warriors, the default generality set" in docs
    table = docs.split("### The bundled generality set", 1)[1].split("*Near duplicate*", 1)[0]
    listed = set(re.findall(r"`([a-z0-9-]+)`", table))
    assert {f.stem for f in GENERALITY_FILES} <= listed


def test_every_generality_warrior_loads_in_pmars_form_and_in_the_mars() -> None:
    # The assembler reproduces pMARS's load images (test_assembler checks it on 892 warriors
    # when ../shared/corewar is there); here every warrior must assemble under pMARS's hill
    # settings within its length limit, and fight in the project's MARS.
    loaded = load_warrior_set(BUNDLED_GENERALITY, HILL)
    assert not loaded.skipped
    assert len(loaded.warriors) == len(GENERALITY_FILES)
    for name, warrior in loaded.warriors:
        assert 1 <= len(warrior.instructions) <= HILL.maxlength, name
        assert 0 <= warrior.start < len(warrior.instructions), name
    dwarf = assemble_file(bundled_warrior("dwarf"), settings=HILL)
    result = generality(dwarf, loaded.warriors, MarsSettings(), rounds=2)
    assert result.used == len(GENERALITY_FILES)
    assert all(mine + theirs > 0 for _, mine, theirs in result.outcomes)  # each round scored


def test_no_two_bundled_warriors_share_a_load_image_or_are_near_duplicates() -> None:
    warriors = {
        f"{f.parent.name}/{f.name}": assemble_file(f, settings=HILL)
        for f in GENERALITY_FILES + OPPONENT_FILES
    }
    images = {canonical(w) for w in warriors.values()}
    assert len(images) == len(warriors)
    close = [
        (a, b, round(shape_similarity(warriors[a], warriors[b]), 2))
        for a, b in itertools.combinations(sorted(warriors), 2)
        if a.startswith("generality/") and near_duplicates(warriors[a], warriors[b])
    ]
    assert close == []


def test_the_near_duplicate_check_catches_the_same_code_with_other_constants() -> None:
    dwarf = assemble_file(bundled_warrior("dwarf"), settings=HILL)
    other_step = assemble(
        bundled_warrior("dwarf").read_text().replace("equ     4", "equ  2666"), settings=HILL
    )
    assert canonical(other_step) != canonical(dwarf)
    assert shape_similarity(other_step, dwarf) == 1.0 and near_duplicates(other_step, dwarf)
    stunner = assemble(STUNNER, settings=HILL)
    assert NEAR_DUPLICATE <= shape_similarity(stunner, dwarf) < 1.0
    assert near_duplicates(stunner, dwarf)
    imp = assemble_file(bundled_warrior("imp"), settings=HILL)
    assert not near_duplicates(imp, dwarf)


def test_the_set_tells_very_different_warriors_apart() -> None:
    # An imp, bombers, a clear and a scanner score differently against the set: it
    # discriminates (the old six-warrior set gave most of them 1.0).
    domain = CorewarDomain({"generality_rounds": 4})
    shares = {}
    for name in ("imp", "dwarf", "stone", "clear"):
        shares[name] = domain.generality(domain.parse(bundled_warrior(name).read_text()))
    cmp_scanner = domain.parse(bundled_warrior("cmp-scanner").read_text())
    shares["cmp-scanner"] = domain.generality(cmp_scanner)
    assert len(set(shares.values())) >= 3, shares
    assert max(shares.values()) - min(shares.values()) >= 0.2, shares


def test_an_overlapping_generality_set_is_refused_naming_the_shared_warriors(tmp_path) -> None:
    # Same code under another name and other comments: still the same program.
    text = bundled_warrior("dwarf").read_text().replace("Little Dwarf", "Renamed")
    (tmp_path / "copy.red").write_text(text)
    (tmp_path / "imp.red").write_text(bundled_warrior("imp").read_text())
    with pytest.raises(ReferenceOverlap, match=r"copy\.red \(= opponent dwarf\.red\)") as caught:
        CorewarDomain({"human_set": str(tmp_path)})
    assert "generality_overlap=drop" in str(caught.value)
    assert caught.value.exit_code == 2


def test_drop_leaves_the_shared_warriors_out_with_a_warning(tmp_path, caplog) -> None:
    (tmp_path / "copy.red").write_text(bundled_warrior("dwarf").read_text())
    (tmp_path / "imp.red").write_text(bundled_warrior("imp").read_text())
    domain = CorewarDomain({"human_set": str(tmp_path), "generality_overlap": "drop"})
    assert "copy.red" in caplog.text
    assert [name for name, _ in domain.warrior_set().warriors] == ["imp.red"]
    # Workers get a pickled domain and rebuild the set: the drop must survive that.
    import pickle

    assert [n for n, _ in pickle.loads(pickle.dumps(domain)).warrior_set().warriors] == ["imp.red"]
    assert reference_record(domain.generality_reference())["count"] == 1


def test_a_bad_overlap_policy_is_an_option_error() -> None:
    with pytest.raises(Exception, match="generality_overlap must be one of refuse, drop"):
        CorewarDomain({"generality_overlap": "ignore"})


def test_cli_refuses_with_exit_status_2_and_records_the_reference(cli, tmp_path) -> None:
    result = cli(
        "dei-run",
        "--domain",
        "coreware",
        "--operator",
        "gp",
        "--budget",
        "2",
        "--rounds",
        "1",
        "--domain-option",
        "opponents=dwarf,imp",
        "--domain-option",
        "rounds=1",
        "--domain-option",
        "cycles=200",
        "--out",
        str(tmp_path / "refused"),
        "--progress",
        "quiet",
        check=False,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and "imp.red (= opponent imp.red)" in result.stderr
    cli(
        "dei-run",
        "--domain",
        "coreware",
        "--operator",
        "gp",
        "--budget",
        "2",
        "--rounds",
        "1",
        "--domain-option",
        "rounds=1",
        "--domain-option",
        "cycles=200",
        "--eval-workers",
        "0",
        "--out",
        str(tmp_path / "ok"),
        "--progress",
        "quiet",
        "--no-report",
    )
    summary = json.loads((tmp_path / "ok" / "summary.json").read_text())
    expected = reference_record(CorewarDomain().generality_reference())
    assert summary["generality"]["reference"] == expected
    assert expected["count"] == len(list(BUNDLED_GENERALITY.glob("*.red")))
