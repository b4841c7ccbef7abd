"""A node's generality leaves out every generality warrior it fought or produced."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from dei_coreware.domain import CorewarDomain
from dei_coreware.generality import bundled_warrior, canonical

from dei_framework import NodeConfig, RunConfig, run
from dei_framework.contract.errors import InvalidProgram
from dei_framework.runtime.files.run_dir import read_jsonl

DEI_RUN = [sys.executable, "-c", "from dei_framework.app.cli import dei_run_main; dei_run_main()"]


def _images_by_warrior(domain: CorewarDomain) -> dict[str, str]:
    return {canonical(warrior): name for name, warrior in domain.warrior_set().warriors}


def _met(run_dir: Path, domain: CorewarDomain) -> dict[str, set[str]]:
    """Per node, the generality warriors whose load image it fought or produced, read back from
    the run's own records: initial opponents, champions received, operator replies, round
    archives and champions."""
    images = _images_by_warrior(domain)
    texts: dict[str, list[str]] = {}
    initial = domain.initial_opponents()
    for event in read_jsonl(run_dir / "events.jsonl"):
        if event.get("event") == "received":
            texts.setdefault(event["node"], []).append(event["program"])
    for call in read_jsonl(run_dir / "calls.jsonl"):
        if call.get("reply"):
            texts.setdefault(call["node"], []).append(call["reply"]["text"])
    for path in sorted((run_dir / "nodes").glob("*/round-*.json")):
        data = json.loads(path.read_text())
        node = path.parent.name
        texts.setdefault(node, []).extend(elite["text"] for elite in data["archive"]["elites"])
    met = {}
    for node, node_texts in texts.items():
        found = set()
        for text in [*initial, *node_texts]:
            try:
                image = canonical(domain.parse(text).data)
            except InvalidProgram:
                continue
            if image in images:
                found.add(images[image])
        met[node] = found
    return met


def test_reference_matches_compare_load_images_not_texts() -> None:
    domain = CorewarDomain()
    spiral = bundled_warrior("spiral").read_text()
    renamed = spiral.replace("Triple Ring", "Someone Else's Ring").replace("first", "one")
    assert domain.reference_matches(domain.parse(renamed)) == ["spiral.red"]
    dwarf = domain.parse(bundled_warrior("dwarf").read_text())
    assert domain.reference_matches(dwarf) == []


def test_outcomes_agree_with_the_share() -> None:
    domain = CorewarDomain({"generality_rounds": 2})
    program = domain.parse(bundled_warrior("dwarf").read_text())
    outcomes = domain.generality_outcomes(program)
    assert set(outcomes) == {name for name, _ in domain.warrior_set().warriors}
    assert sum(outcomes.values()) / len(outcomes) == domain.generality(program)


def test_a_node_that_meets_a_generality_warrior_leaves_it_out(tmp_path) -> None:
    # The summary's exclusions are exactly the generality warriors found again, by load image,
    # in what the run recorded the node fighting or writing; every round's share has the
    # remaining warriors as its denominator.
    config = RunConfig(
        domain="coreware",
        nodes=[NodeConfig(name="solo", operator="templates")],
        budget=24,
        rounds=2,
        seed=5,
        eval_workers=0,
        domain_options={"rounds": 2, "generality_rounds": 2},
    )
    summary = run(config, tmp_path / "run")
    domain = CorewarDomain()
    met = _met(tmp_path / "run", domain)
    node = summary.nodes["solo"]
    assert node.generality_excluded  # with this seed `templates` writes an imp and a ring
    assert list(node.generality_excluded) == sorted(met.get("solo", set()))
    assert summary.generality["excluded"] == {"solo": len(node.generality_excluded)}
    kept = len(domain.warrior_set().warriors) - len(node.generality_excluded)
    for share in node.generality_per_round:
        assert share is None or round(share * kept) == pytest.approx(share * kept)
    # The exclusions are part of the checkpoint: a resumed run restores them from there (this
    # one has nothing left to do, so the checkpoint is its only source).
    checkpoint = json.loads((tmp_path / "run" / "checkpoint.json").read_text())
    assert tuple(checkpoint["nodes"]["solo"]["generality_excluded"]) == node.generality_excluded
    (tmp_path / "run" / "summary.json").unlink()
    resumed = run(config, tmp_path / "run", resume=True)
    assert resumed.nodes["solo"].generality_excluded == node.generality_excluded
    assert resumed.generality == summary.generality


@pytest.mark.slow
def test_the_main_job_spreads_generality_and_excludes_what_nodes_met(tmp_path) -> None:
    """`dei-run --domain coreware` with its defaults: the issue's done-when."""
    out = tmp_path / "main"
    done = subprocess.run(
        [*DEI_RUN, "--domain", "coreware", "--out", str(out), "--progress", "quiet", "--no-report"],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    nodes = summary["nodes"]
    assert len(nodes) == 4
    values = [node["generality"] for node in nodes.values()]
    assert len(set(values)) > 1, values
    domain = CorewarDomain()
    met = _met(out, domain)
    for name, node in nodes.items():
        # Exactly the generality warriors the node met are left out of its reference...
        assert node["generality_excluded"] == sorted(met.get(name, set())), name
        assert summary["generality"]["excluded"][name] == len(node["generality_excluded"])
        # ... and a round whose champion is an initial opponent is marked as such.
        assert len(node["champion_initial_per_round"]) == node["rounds_completed"]
    initial = set(domain.initial_opponents())
    for event in read_jsonl(out / "events.jsonl"):
        if event.get("event") == "round" and event["champion"] is not None:
            assert event["champion_initial"] == (event["champion"]["text"] in initial)
            if event["champion_initial"]:
                other = event["generality_champion"]
                assert other is None or other["text"] not in initial


def test_an_initial_opponent_as_champion_is_marked_and_not_measured(tmp_path) -> None:
    # Twelve gp calls do not beat the warm start's stone: the round's champion is an initial
    # opponent, and its generality is that of the best elite gp wrote.
    config = RunConfig(
        domain="coreware",
        nodes=[NodeConfig(name="solo", operator="gp")],
        budget=12,
        rounds=1,
        seed=2,
        eval_workers=0,
        domain_options={"rounds": 2, "generality_rounds": 2},
    )
    summary = run(config, tmp_path / "run")
    domain = CorewarDomain({"generality_rounds": 2})
    (event,) = [
        e for e in read_jsonl(tmp_path / "run" / "events.jsonl") if e.get("event") == "round"
    ]
    assert event["champion_initial"] is True
    assert event["champion"]["text"] in domain.initial_opponents()
    other = event["generality_champion"]
    assert other["operator"] == "gp" and other["text"] not in domain.initial_opponents()
    node = summary.nodes["solo"]
    assert node.champion_initial_per_round == (True,)
    expected = domain.generality_outcomes(domain.parse(other["text"]))
    kept = [beaten for name, beaten in expected.items() if name not in node.generality_excluded]
    assert node.generality_per_round == (sum(kept) / len(kept),)
    assert node.generality != domain.generality(domain.parse(event["champion"]["text"]))
