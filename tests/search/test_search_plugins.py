"""Search components as plugins: selectors, archives and sharing policies registered through
entry points by a third-party distribution, selected by flag and per node; and domain output
that breaks the contract becoming invalid candidates."""

from __future__ import annotations

import json
from pathlib import Path

TOY = [
    "--domain",
    "toy",
    "--operator",
    "toy-random",
    "--eval-workers",
    "0",
    "--progress",
    "quiet",
    "--no-report",
]


def events(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def test_dei_plugins_lists_builtin_and_third_party_search_components(searchplug_env, cli):
    listing = json.loads(cli("dei", "plugins", "--json", env=searchplug_env).stdout)
    plugin_of = {
        kind: {row["name"]: row["plugin"] for row in listing[kind]}
        for kind in ("selectors", "archives", "sharing")
    }
    assert plugin_of["selectors"]["uniform"] == plugin_of["archives"]["grid"] == "dei_framework"
    assert {"improvement"} <= set(plugin_of["selectors"]) and "cvt" in plugin_of["archives"]
    assert plugin_of["selectors"]["best-first"].startswith("dei-searchplug")
    assert plugin_of["archives"]["coarse"].startswith("dei-searchplug")
    assert plugin_of["sharing"]["peers-as-opponents"].startswith("dei-searchplug")


def test_dei_run_selects_third_party_components_by_flag(searchplug_env, cli, tmp_path):
    out = tmp_path / "run"
    cli(
        "dei-run",
        *TOY,
        "--nodes",
        "2",
        "--budget",
        "60",
        "--rounds",
        "3",
        "--selector",
        "best-first",
        "--archive",
        "coarse",
        "--sharing",
        "peers-as-opponents",
        "--out",
        str(out),
        env=searchplug_env,
    )
    log = events(out)
    rounds = [e for e in log if e["event"] == "round"]
    assert len(rounds) == 6
    assert {(e["selector"], e["archive_kind"], e["stats"]["cells"]) for e in rounds} == {
        ("best-first", "coarse", 5)
    }  # the toy's length axis alone: 5 bins
    # best-first: every mutation's parent was the best elite of the archive at planning time,
    # so parents are few; peers-as-opponents: received champions fight but never fill cells.
    peers = [e for e in log if e["event"] == "evaluated" and e["kind"] == "peer"]
    assert peers and all(e["status"] == "invalid" and "sharing policy" in e["error"] for e in peers)
    assert any(o["source"] == "peer" for e in rounds for o in e["opponents"])
    published = json.loads((out / "summary.json").read_text())["nodes"]["node-0"]["sharing"]
    assert published["published"] == 2 * 3  # two per round


def test_config_file_selects_components_per_node(searchplug_env, cli, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "toy"\nbudget = 40\nrounds = 2\neval_workers = 0\n'
        '[[node]]\noperator = "toy-random"\n'
        '[[node]]\noperator = "toy-random"\nselector = "improvement"\narchive = "cvt"\n'
        'sharing = "none"\naxes = "peak"\n'
        "[archive_options]\n"
    )
    out = tmp_path / "run"
    cli(
        "dei-run",
        "--config",
        str(config),
        "--progress",
        "quiet",
        "--no-report",
        "--out",
        str(out),
        env=searchplug_env,
    )
    kinds = {
        (e["node"], e["selector"], e["archive_kind"]) for e in events(out) if e["event"] == "round"
    }
    assert kinds == {("node-0", "uniform", "grid"), ("node-1", "improvement", "cvt")}
    summary = json.loads((out / "summary.json").read_text())
    # node-1 searched the peak axis alone; the merge maps its elites into the run's grid.
    assert summary["space"]["cells"] == 25 and 0 < summary["merged"]["coverage"] <= 1
    node_1 = json.loads((out / "nodes" / "node-1" / "round-001.json").read_text())["archive"]
    assert [axis["name"] for axis in node_1["space"]] == ["peak"]
    assert all({"length", "peak"} <= set(e["descriptor"]) for e in node_1["elites"])


def test_unknown_component_names_give_one_clear_line(searchplug_env, cli, tmp_path):
    for flag, kind in (("--selector", "parent selector"), ("--archive", "archive")):
        result = cli(
            "dei-run",
            *TOY,
            "--budget",
            "8",
            flag,
            "nosuch",
            "--out",
            str(tmp_path / flag),
            env=searchplug_env,
            check=False,
        )
        assert result.returncode == 1
        assert f"unknown {kind} 'nosuch'" in result.stderr and "Traceback" not in result.stderr


def test_a_domain_omitting_a_descriptor_key_gives_invalid_candidates_and_the_run_finishes(
    toy_env, cli, tmp_path
):
    out = tmp_path / "run"
    cli(
        "dei-run",
        *TOY,
        "--budget",
        "20",
        "--rounds",
        "2",
        "--domain-option",
        "omit_axis=peak",
        "--out",
        str(out),
        env=toy_env,
    )
    evaluated = [e for e in events(out) if e["event"] == "evaluated"]
    assert evaluated and all(e["status"] == "invalid" for e in evaluated)
    errors = {e["error"] for e in evaluated if not e["error"].startswith("line 1:")}
    assert errors == {"evaluation failed: domain returned no descriptor value for axis 'peak'"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["budget"]["calls"] == 20 and summary["evaluated"] == len(evaluated)
