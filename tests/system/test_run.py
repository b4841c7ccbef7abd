"""The whole loop on the toy domain: dei-run end to end, resume after kill -9, replay, errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from midway import events, kill_midway

from dei_framework import NodeConfig, RunConfig, load_plugins, run

TOY_ARGS = [
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


def test_toy_ensemble_end_to_end(toy_env, cli, tmp_path) -> None:
    out = tmp_path / "run"
    result = cli(
        "dei-run",
        *TOY_ARGS,
        "--nodes",
        "3",
        "--budget",
        "90",
        "--rounds",
        "3",
        "--seed",
        "7",
        "--out",
        str(out),
        env=toy_env,
    )
    assert f"summary: {out / 'summary.json'}" in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["budget"]["calls"] == 90 and summary["budget"]["limit"] == 90
    assert [n["calls"] for n in summary["nodes"].values()] == [30, 30, 30]
    assert 0 < summary["merged"]["coverage"] <= 1
    assert summary["merged"]["qd_score"] > 0
    assert len(summary["merged"]["per_round"]) == 3
    log = events(out)
    evaluated = [e for e in log if e["event"] == "evaluated" and e["kind"] in ("new", "mutate")]
    assert len(evaluated) == 90
    assert all(
        set(e)
        >= {
            "id",
            "node",
            "round",
            "operator",
            "parent",
            "fitness",
            "descriptor",
            "cell",
            "status",
            "timings",
        }
        for e in evaluated
    )
    assert Counter(e["status"] for e in evaluated)["invalid"] > 0  # toy operator writes junk
    assert all(e["error"].startswith("line 1:") for e in evaluated if e["status"] == "invalid")
    rounds = [e for e in log if e["event"] == "round"]
    assert len(rounds) == 9
    # every node received the other nodes' champions through the in-memory GossipSub
    received = [e for e in log if e["event"] == "received"]
    assert {e["node"] for e in received} == {"node-0", "node-1", "node-2"}
    for node in summary["nodes"].values():
        assert node["niche_novelty"] is not None and 0 <= node["niche_novelty"] <= 1
        assert node["generality"] is not None
    assert (out / "nodes" / "node-0" / "round-002.json").exists()
    assert json.loads((out / "config.json").read_text())["budget"] == 90


def _config(**overrides) -> RunConfig:
    values = dict(
        domain="toy",
        nodes=[NodeConfig(name="solo", operator="toy-random")],
        budget=40,
        rounds=2,
        seed=3,
        eval_workers=0,
        sharing="none",
    )
    values.update(overrides)
    return RunConfig(**values)


def test_same_seed_same_run_different_seed_different_run(toy_env, tmp_path) -> None:
    registry = load_plugins()
    a = run(_config(), tmp_path / "a", registry=registry)
    b = run(_config(), tmp_path / "b", registry=registry)
    c = run(_config(seed=4), tmp_path / "c", registry=registry)

    def candidates(path: Path) -> list:
        return [
            (e["id"], e.get("fitness"), e.get("cell"))
            for e in events(path)
            if e["event"] == "evaluated"
        ]

    assert candidates(tmp_path / "a") == candidates(tmp_path / "b")
    assert candidates(tmp_path / "a") != candidates(tmp_path / "c")
    assert a.merged == b.merged
    assert c.budget["calls"] == 40


def test_lag_in_the_config_sets_how_far_parent_choice_runs_ahead(toy_env, tmp_path) -> None:
    registry = load_plugins()
    for name, lag in (("default", None), ("zero", 0), ("zero-again", 0)):
        run(_config(lag=lag, new_fraction=0.0), tmp_path / name, registry=registry)

    def recorded_lag(path: Path) -> int:
        return json.loads((path / "checkpoint.json").read_text())["nodes"]["solo"]["lag"]

    def parents(path: Path) -> list:
        return [(e["id"], e["parent"]) for e in events(path) if e["event"] == "evaluated"]

    assert recorded_lag(tmp_path / "zero") == 0 and recorded_lag(tmp_path / "default") > 0
    # With lag 0 every parent is chosen from an archive holding all earlier children: other
    # plans than the default's, the same ones again for the same seed.
    assert parents(tmp_path / "zero") != parents(tmp_path / "default")
    assert parents(tmp_path / "zero") == parents(tmp_path / "zero-again")


@pytest.mark.parametrize("lag", [-1, 1.5, True])
def test_a_bad_lag_is_refused(lag) -> None:
    from dei_framework.contract.errors import ConfigError

    with pytest.raises(ConfigError, match="--lag must be a(t least 0| whole number)"):
        _config(lag=lag)


def test_a_seeded_run_twice_gives_identical_final_archives_whatever_the_timing(
    toy_env, tmp_path
) -> None:
    """Replies finish in a random order (unseeded latency), evaluation runs in a worker process
    with each round's opponents installed once, and the next round's calls start while a
    round drains: the archives, events and summaries are still identical."""
    registry = load_plugins()
    config = _config(
        nodes=[NodeConfig(name="solo", operator="toy-random", options={"jitter": 0.02})],
        budget=150,
        rounds=3,
        eval_workers=1,
        new_fraction=0.3,
    )
    summaries = [run(config, tmp_path / name, registry=registry) for name in "ab"]

    def archives(path: Path) -> list:
        rounds = sorted((path / "nodes" / "solo").glob("round-*.json"))
        return [json.loads(round_file.read_text()) for round_file in rounds]

    def timeless(path: Path) -> list:
        return [{k: v for k, v in e.items() if k != "timings"} for e in events(path)]

    def call_order(path: Path) -> list:
        return [json.loads(line)["key"] for line in (path / "calls.jsonl").read_text().splitlines()]

    assert len(archives(tmp_path / "a")) == 3
    assert archives(tmp_path / "a") == archives(tmp_path / "b")
    assert timeless(tmp_path / "a") == timeless(tmp_path / "b")
    assert summaries[0].merged == summaries[1].merged
    assert summaries[0].budget["calls"] == 150
    assert call_order(tmp_path / "a") != call_order(tmp_path / "b")  # the timing did differ


def test_replay_reproduces_a_multi_node_run_exactly(toy_env, cli, tmp_path) -> None:
    out = tmp_path / "orig"
    cli(
        "dei-run",
        *TOY_ARGS,
        "--nodes",
        "2",
        "--budget",
        "40",
        "--rounds",
        "3",
        "--out",
        str(out),
        env=toy_env,
    )
    replay = tmp_path / "replay"
    cli(
        "dei-run",
        "--replay",
        str(out),
        "--out",
        str(replay),
        "--progress",
        "quiet",
        "--no-report",
        env=toy_env,
    )
    original, again = (json.loads((p / "summary.json").read_text()) for p in (out, replay))
    assert again["merged"] == original["merged"]
    for name in original["nodes"]:
        assert again["nodes"][name]["champion"] == original["nodes"][name]["champion"]
        assert again["nodes"][name]["calls"] == original["nodes"][name]["calls"]

    def key(path: Path) -> list:
        return sorted(
            (e["id"], e.get("fitness"), e.get("status"))
            for e in events(path)
            if e["event"] == "evaluated"
        )

    assert key(replay) == key(out)


def test_resume_after_kill_9_finishes_the_budget_without_repeating_work(toy_env, cli, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "toy"\nnodes = 2\nbudget = 200\nrounds = 4\nseed = 11\n'
        "checkpoint_seconds = 0.05\neval_workers = 0\n"
        "[operator_options]\ndelay = 0.02\n"
    )
    out = tmp_path / "run"
    kill_midway(
        [
            "--config",
            str(config),
            "--operator",
            "toy-random",
            "--out",
            str(out),
            "--progress",
            "quiet",
            "--no-report",
        ],
        out,
        toy_env,
        min_events=60,
    )
    # The checkpoint carries the wall time so far; pretend the first session ran 1000 s longer
    # so that a ledger whose clock restarted from zero could not pass.
    checkpoint = json.loads((out / "checkpoint.json").read_text())
    before = checkpoint["wall_seconds"]
    assert before > 0
    checkpoint["wall_seconds"] = before + 1000
    (out / "checkpoint.json").write_text(json.dumps(checkpoint))

    cli("dei-run", "--resume", str(out), "--progress", "quiet", "--no-report", env=toy_env)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["budget"]["wall_seconds"] >= before + 1000
    assert summary["budget"]["calls"] == 200
    assert [n["calls"] for n in summary["nodes"].values()] == [100, 100]
    ids = [e["id"] for e in events(out) if e["event"] == "evaluated"]
    assert len(ids) == len(set(ids)), "a candidate was evaluated twice in the event log"
    made = [e for e in events(out) if e["event"] == "evaluated" and e["kind"] in ("new", "mutate")]
    assert len(made) == 200
    assert sum(1 for e in events(out) if e["event"] == "round") == 8


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--domain", "nosuch"], "unknown domain 'nosuch'"),
        (["--domain", "toy", "--operator", "nosuch"], "unknown operator 'nosuch'"),
        (
            ["--domain", "toy", "--operator", "toy-random", "--nodes", "3", "--budget", "100"],
            "does not split equally",
        ),
        (["--domain", "toy", "--operator", "toy-random", "--rounds", "0"], "at least 1"),
        (
            ["--domain", "toy", "--operator", "toy-random", "--config", "/nonexistent.toml"],
            "not found",
        ),
        (
            ["--domain", "toy", "--operator", "toy-random", "--sharing", "gossip-all"],
            "unknown sharing policy",
        ),
        (
            ["--domain", "toy", "--operator", "toy-random", "--axes", "length,nope"],
            "no descriptor axis nope",
        ),
    ],
)
def test_bad_options_give_one_clear_line(toy_env, cli, tmp_path, args, message) -> None:
    result = cli(
        "dei-run",
        *args,
        "--out",
        str(tmp_path / "x"),
        "--progress",
        "quiet",
        env=toy_env,
        check=False,
    )
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len([line for line in result.stderr.splitlines() if line.startswith("error:")]) == 1


def test_config_file_sets_options_and_flags_override(toy_env, cli, tmp_path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "toy"\nbudget = 20\nrounds = 2\nseed = 5\neval_workers = 0\n'
        '[[node]]\noperator = "toy-random"\nname = "alpha"\n'
        '[[node]]\noperator = "toy-random"\nname = "beta"\n'
    )
    out = tmp_path / "run"
    cli(
        "dei-run",
        "--config",
        str(config),
        "--rounds",
        "1",
        "--out",
        str(out),
        "--progress",
        "quiet",
        "--no-report",
        env=toy_env,
    )
    resolved = json.loads((out / "config.json").read_text())
    assert [n["name"] for n in resolved["nodes"]] == ["alpha", "beta"]
    assert resolved["rounds"] == 1 and resolved["seed"] == 5 and resolved["budget"] == 20


def test_a_resumed_run_ends_exactly_as_an_uninterrupted_one(toy_env, cli, tmp_path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "toy"\nbudget = 120\nrounds = 4\nseed = 21\nsharing = "none"\n'
        "checkpoint_seconds = 0.05\neval_workers = 0\n"
        "[operator_options]\ndelay = 0.03\n"
    )
    common = [
        "--config",
        str(config),
        "--operator",
        "toy-random",
        "--progress",
        "quiet",
        "--no-report",
    ]
    clean = tmp_path / "clean"
    cli("dei-run", *common, "--out", str(clean), env=toy_env)
    killed = tmp_path / "killed"
    kill_midway([*common, "--out", str(killed)], killed, toy_env, min_events=50, hold_after=50)
    cli("dei-run", "--resume", str(killed), "--progress", "quiet", "--no-report", env=toy_env)

    def outcome(path: Path) -> tuple:
        summary = json.loads((path / "summary.json").read_text())
        made = sorted(
            (e["id"], e["fitness"], e["status"]) for e in events(path) if e["event"] == "evaluated"
        )
        rounds = [
            json.loads((path / "nodes" / "node-0" / f"round-{r:03d}.json").read_text())["archive"]
            for r in range(4)
        ]
        # The event figures too: a resumed run counts the events its checkpoint kept.
        figures = (summary["evaluated"], summary["invalid"], summary["operator_divergence"])
        return summary["merged"], summary["budget"]["calls"], made, rounds, figures

    assert outcome(killed) == outcome(clean)
