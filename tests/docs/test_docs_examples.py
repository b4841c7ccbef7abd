"""The plugin examples in the docs are real code: they run in a real two-node ensemble."""

from __future__ import annotations

import json
import re
import types
from pathlib import Path

from dei_framework import NodeConfig, RunConfig, load_plugins, run

DOCS = Path(__file__).resolve().parents[2] / "docs"


def plugin_from_doc(name: str) -> types.ModuleType:
    """The doc's Python block that implements a hook, as a module."""
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(), re.DOTALL)
    source = next(block for block in blocks if "@hookimpl" in block)
    module = types.ModuleType(name.removesuffix(".md").replace("-", "_"))
    exec(compile(source, str(DOCS / name), "exec"), module.__dict__)
    return module


def test_operator_and_transport_examples_run_together(tmp_path):
    operator, transport = (
        plugin_from_doc("writing-an-operator.md"),
        plugin_from_doc("writing-a-transport.md"),
    )
    registry = load_plugins(extra=[operator, transport])
    assert not [p for p in registry.problems if "writing" in p]
    assert registry.operators["shift"] and registry.transports["bus"]
    config = RunConfig(
        domain="symreg",
        transport="bus",
        nodes=[
            NodeConfig(name="node-0", operator="shift"),
            NodeConfig(name="node-1", operator="symreg-gp"),
        ],
        budget=40,
        rounds=2,
        eval_workers=0,
    )
    summary = run(config, tmp_path / "run", registry=registry)
    shift, gp = summary.nodes["node-0"], summary.nodes["node-1"]
    assert shift.operator == "shift" and gp.operator == "symreg-gp"
    assert shift.calls == gp.calls == 20
    for node in (shift, gp):
        assert node.sharing["published"] == 2
        assert node.sharing["transport"] == {"sent": 2, "received": 2}
    # Champions arrive at round 1's start, so each node received its peer's round-0 champion.
    assert shift.sharing["accepted"] + gp.sharing["accepted"] >= 1


def test_search_component_examples_run_in_an_ensemble(tmp_path):
    components = plugin_from_doc("writing-search-components.md")
    registry = load_plugins(extra=[components])
    assert {"pairwise", "first-axis", "cells-only"} <= (
        set(registry.emitters) | set(registry.archives) | set(registry.sharing)
    )
    config = RunConfig(
        domain="symreg",
        emitter="pairwise",
        archive="first-axis",
        sharing="cells-only",
        nodes=[
            NodeConfig(name="node-0", operator="symreg-gp"),
            NodeConfig(name="node-1", operator="symreg-gp", emitter="uniform"),
        ],
        budget=40,
        rounds=2,
        eval_workers=0,
    )
    summary = run(config, tmp_path / "run", registry=registry)
    for node in summary.nodes.values():
        assert node.calls == 20 and node.sharing["published"] == 4
    log = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").open()]
    rounds = [e for e in log if e["event"] == "round"]
    assert {(e["node"], e["emitter"], e["archive_kind"]) for e in rounds} == {
        ("node-0", "pairwise", "first-axis"),
        ("node-1", "uniform", "first-axis"),
    }
    # cells-only: received champions (if one arrived in time) seed cells, never join opponents.
    assert not [o for e in rounds for o in e["opponents"] if o["source"] == "peer"]
    peers = [e for e in log if e["event"] == "evaluated" and e["kind"] == "peer"]
    assert all("sharing policy" not in (e.get("error") or "") for e in peers)


def doc_blocks(name: str, marker: str) -> list[str]:
    """The doc's Python blocks that contain ``marker``."""
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(), re.DOTALL)
    return [block for block in blocks if marker in block]


def test_the_static_numeric_domain_example_alone_evaluates_every_call(tmp_path):
    # The page's ensemble run (four migrating nodes) runs as a script with spawned workers in
    # tests/docs/test_docs_scripts.py; here the domain is exec'd in-process for a lone node.
    [source] = doc_blocks("writing-a-domain.md", "class Sphere(Domain)")
    module = types.ModuleType("sphere_module")
    exec(compile(source, "writing-a-domain.md", "exec"), module.__dict__)
    # one node: exactly as many evaluations as calls
    lone = RunConfig(
        domain="sphere",
        budget=200,
        rounds=2,
        eval_workers=0,
        common_ground=True,
        nodes=[NodeConfig(name="node-0", operator="gaussian")],
    )
    registry = load_plugins(extra=[module])
    alone = run(lone, tmp_path / "lone", registry=registry)
    assert alone.evaluated == 200
    # Common ground of a static domain: no reference programs, the same fitness as measured.
    common = alone.merged.common
    assert common["reference"]["count"] == 0 and common["failed"] == 0
    assert (common["coverage"], common["qd_score"]) == (
        alone.merged.stats.coverage,
        alone.merged.stats.qd_score,
    )


def test_the_pyribs_page_dei_loop_runs_plain_map_elites(capsys):
    [source] = doc_blocks("for-pyribs-users.md", "from dei_framework import")
    scope: dict = {}
    exec(compile(source, "for-pyribs-users.md", "exec"), scope)
    scheduler = scope["scheduler"]
    assert scheduler.lifecycle == "continual" and scheduler.finished
    stats = scope["stats"]
    assert stats.num_elites > 20 and stats.coverage == stats.num_elites / 400
    assert stats.qd_score > 0 and scheduler.history[-1].calls == 2000
    assert capsys.readouterr().out.startswith("continual ")
