"""A clean generality set: disjoint from the training opponents, refused or trimmed otherwise."""

from __future__ import annotations

import json

import pytest
from dei_coreware.domain import DEFAULT_OPPONENTS, CorewarDomain
from dei_coreware.generality import (
    BUNDLED_GENERALITY,
    BUNDLED_OPPONENTS,
    bundled_warrior,
    canonical,
)

from dei_framework.common import reference_record
from dei_framework.errors import ReferenceOverlap


def test_the_bundled_folders_split_opponents_from_the_generality_set() -> None:
    domain = CorewarDomain()
    opponents = {canonical(domain.parse(t).data) for t in domain.initial_opponents()}
    general = set(domain.generality_reference())
    assert len(opponents) == len(DEFAULT_OPPONENTS) and len(general) >= 6
    assert not opponents & general
    assert {p.stem for p in BUNDLED_OPPONENTS.glob("*.red")} == set(DEFAULT_OPPONENTS)
    assert not {p.stem for p in BUNDLED_OPPONENTS.glob("*.red")} & {
        p.stem for p in BUNDLED_GENERALITY.glob("*.red")}


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

    assert [n for n, _ in pickle.loads(pickle.dumps(domain)).warrior_set().warriors] == [
        "imp.red"]
    assert reference_record(domain.generality_reference())["count"] == 1


def test_a_bad_overlap_policy_is_an_option_error() -> None:
    with pytest.raises(Exception, match="generality_overlap must be one of refuse, drop"):
        CorewarDomain({"generality_overlap": "ignore"})


def test_cli_refuses_with_exit_status_2_and_records_the_reference(cli, tmp_path) -> None:
    result = cli("dei-run", "--domain", "coreware", "--operator", "gp", "--budget", "2",
                 "--rounds", "1", "--domain-option", "opponents=dwarf,imp",
                 "--domain-option", "rounds=1", "--domain-option", "cycles=200",
                 "--out", str(tmp_path / "refused"), "--progress", "quiet", check=False)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and "imp.red (= opponent imp.red)" in result.stderr
    cli("dei-run", "--domain", "coreware", "--operator", "gp", "--budget", "2", "--rounds", "1",
        "--domain-option", "rounds=1", "--domain-option", "cycles=200", "--eval-workers", "0",
        "--out", str(tmp_path / "ok"), "--progress", "quiet", "--no-report")
    summary = json.loads((tmp_path / "ok" / "summary.json").read_text())
    expected = reference_record(CorewarDomain().generality_reference())
    assert summary["generality"]["reference"] == expected
    assert expected["count"] == len(list(BUNDLED_GENERALITY.glob("*.red")))
