"""Deterministic ensembles: virtual-time champion delivery, under load, across kills, on replay.

The ensemble tests perturb timing with the ``DEI_CHAOS_STALL`` hook (random sleeps before every
operator call and evaluation, drawn from OS randomness, so each run times out differently).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from dei_framework import NodeConfig, RunConfig, hookimpl, load_plugins, run
from dei_framework.contract.errors import OperatorError
from dei_framework.contract.operators import Operator, OperatorReply, OperatorRequest, OperatorSpec
from dei_framework.net.timeline import NEVER, NodeClock, Timeline

sys.path.insert(0, str(Path(__file__).parent))

from test_run import TOY_ARGS, events, kill_midway  # noqa: E402

# --- the delivery rule on a hand-built schedule -----------------------------------------------


def _clock(latency: float, slots: int = 1, calls: int = 2) -> NodeClock:
    return NodeClock(latency=latency, slots=slots, quota=lambda round_index: calls)


def test_virtual_clock_stamps_follow_calls_latency_and_slots() -> None:
    clock = NodeClock(latency=3.0, slots=2, quota=lambda r: [4, 2, 6][r])
    assert [clock.time(r) for r in range(4)] == [0.0, 6.0, 9.0, 18.0]
    assert clock.start(1) == (6.0, 1) and clock.publication(1) == (9.0, 1)


def test_each_round_start_takes_what_peers_published_before_it_in_virtual_time() -> None:
    slow, fast = _clock(1.0), _clock(0.5)  # rounds of 2 and 1 virtual seconds
    timeline = Timeline(["slow", "fast"])
    for r in range(4):
        timeline.post("slow", slow.publication(r), f"slow-{r}".encode())
        timeline.post("fast", fast.publication(r), f"fast-{r}".encode())
    timeline.finish("slow"), timeline.finish("fast")

    def taken(node: str, clock: NodeClock, r: int) -> list[str]:
        since = clock.start(r - 1) if r else None
        return [p.payload.decode() for p in timeline.window(node, since, clock.start(r))]

    # slow publishes at t = 2, 4, 6, 8; fast at t = 1, 2, 3, 4
    assert taken("slow", slow, 0) == []
    assert taken("slow", slow, 1) == ["fast-0"]  # t=2: fast-1 is stamped (2, 1), not < (2, 1)
    assert taken("slow", slow, 2) == ["fast-1", "fast-2"]  # (2,1) and (3,2) < (4,2)
    assert taken("slow", slow, 3) == ["fast-3"]  # (4,3) < (6,3); nothing later was published
    assert taken("fast", fast, 1) == []
    assert taken("fast", fast, 2) == ["slow-0"]  # (2,0) < (2,2): same time, earlier round
    assert taken("fast", fast, 3) == []
    # equal speeds: round r's champions are taken at round r + 1, each exactly once
    twins = Timeline(["a", "b"])
    for r in range(3):
        twins.post("a", slow.publication(r), f"a-{r}".encode())
    for r in range(1, 4):
        got = [p.payload.decode() for p in twins.window("b", slow.start(r - 1), slow.start(r))]
        assert got == [f"a-{r - 1}"]
    # a node never takes its own postings; ties are ordered by sender then sequence
    tie = Timeline(["a", "b", "c"])
    tie.post("c", (1.0, 0), b"c0"), tie.post("b", (1.0, 0), b"b0"), tie.post("b", (1.0, 0), b"b1")
    assert [p.payload for p in tie.window("b", None, (1.0, 1))] == [b"c0"]
    assert [p.payload for p in tie.window("a", None, (1.0, 1))] == [b"b0", b"b1", b"c0"]


def test_a_round_start_waits_for_peers_clocks_and_finished_peers_release_it() -> None:
    async def scenario() -> list[str]:
        timeline = Timeline(["a", "b", "c"])
        clock = _clock(1.0)
        timeline.promise("a", clock.publication(0))  # a is in round 0 until t = 2
        timeline.promise("c", clock.publication(0))
        timeline.promise("b", clock.publication(1))
        waiting = asyncio.create_task(timeline.collect("b", clock.start(0), clock.start(1)))
        await asyncio.sleep(0.01)
        assert not waiting.done() and timeline.blocking("b", clock.start(1)) == ["a", "c"]
        timeline.post("a", clock.publication(0), b"a0")
        timeline.promise("a", clock.publication(1))
        await asyncio.sleep(0.01)
        assert not waiting.done()  # c may still publish at (2, 0)
        timeline.finish("c")  # c stopped early: it publishes nothing more
        got = await asyncio.wait_for(waiting, 1)
        assert timeline.waits == {"a": 0, "b": 1, "c": 0}
        return [d.payload.decode() for d in got]

    assert asyncio.run(scenario()) == ["a0"]


def test_nodes_waiting_at_the_same_virtual_time_do_not_deadlock() -> None:
    async def scenario() -> None:
        timeline = Timeline(["a", "b"])
        clock = _clock(1.0, calls=0)  # empty rounds: every round starts and ends at t = 0
        for r in range(3):
            starts = []
            for node in ("a", "b"):
                timeline.promise(node, clock.publication(r))
                since = clock.start(r - 1) if r else None
                starts.append(timeline.collect(node, since, clock.start(r)))
            got = await asyncio.wait_for(asyncio.gather(*starts), 1)
            expected = [[], []] if r == 0 else [[f"b{r - 1}".encode()], [f"a{r - 1}".encode()]]
            assert [[d.payload for d in deliveries] for deliveries in got] == expected
            for node in ("a", "b"):
                timeline.post(node, clock.publication(r), f"{node}{r}".encode())
        assert not timeline.ready("a", NEVER)  # b has promised nothing beyond its round 2
        timeline.finish("b")
        assert timeline.ready("a", NEVER)

    asyncio.run(scenario())


def test_a_posting_before_the_promise_is_refused() -> None:
    timeline = Timeline(["a", "b"])
    timeline.promise("a", (5.0, 2))
    with pytest.raises(ValueError, match="before its promise"):
        timeline.post("a", (4.0, 1), b"late")


# --- whole runs -------------------------------------------------------------------------------


def _outcome(path: Path) -> dict:
    """Everything a seeded run decides: summary figures, every node's round archives (the full
    merged archive among them), every candidate, and what each node received when."""
    summary = json.loads((path / "summary.json").read_text())
    log = events(path)
    archives = {
        file.relative_to(path).as_posix(): json.loads(file.read_text())["archive"]
        for file in sorted((path / "nodes").glob("*/round-*.json"))
    }
    return {
        "merged": summary["merged"],
        "champions": {n: node["champion"] for n, node in summary["nodes"].items()},
        "calls": summary["budget"]["calls"],
        "archives": archives,
        "evaluated": sorted(
            (e["id"], e["fitness"], e["status"], e["cell"])
            for e in log
            if e["event"] == "evaluated"
        ),
        # per node and round, in the order taken (nodes log concurrently, so the interleaving
        # of different nodes' lines in the file follows the wall clock)
        "received": sorted(
            (
                (e["node"], e["round"], e["from"], e["from_round"], e["program"])
                for e in log
                if e["event"] == "received"
            ),
            key=lambda r: (r[0], r[1]),
        ),
    }


@pytest.mark.slow  # two 400-call Core War ensembles
def test_a_seeded_coreware_ensemble_is_identical_whatever_the_stalls(cli, tmp_path) -> None:
    # The command at a quarter of its budget and half its rounds (test time); the full
    # command (--budget 1600 --rounds 10) was checked by hand, see docs/architecture.md.
    args = [
        "--domain",
        "coreware",
        "--seed",
        "0",
        "--budget",
        "400",
        "--rounds",
        "5",
        "--progress",
        "quiet",
        "--no-report",
    ]
    outcomes = []
    for index, stall in enumerate(("0.002", "0.03")):
        out = tmp_path / f"run{index}"
        env = {**__import__("os").environ, "DEI_CHAOS_STALL": stall}
        cli("dei-run", *args, "--out", str(out), env=env)
        outcomes.append(_outcome(out))
    first, second = outcomes
    assert first["received"], "the nodes shared nothing: the test would prove little"
    assert {r[0] for r in first["received"]} == {"node-0", "node-1", "node-2", "node-3"}
    assert first == second


@pytest.mark.parametrize("lifecycle", ["reset", "continual"])
def test_a_killed_and_resumed_ensemble_ends_as_an_uninterrupted_one(
    toy_env, cli, tmp_path, lifecycle
):
    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "toy"\nnodes = 3\nbudget = 180\nrounds = 5\nseed = 4\n'
        f'checkpoint_seconds = 0.05\neval_workers = 0\nlifecycle = "{lifecycle}"\n'
        "[operator_options]\ndelay = 0.01\n"
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
    env = {**toy_env, "DEI_CHAOS_STALL": "0.03"}
    clean = tmp_path / "clean"
    cli("dei-run", *common, "--out", str(clean), env=env)
    killed = tmp_path / "killed"
    kill_midway([*common, "--out", str(killed)], killed, env, min_events=90)
    checkpoint = json.loads((killed / "checkpoint.json").read_text())
    cli("dei-run", "--resume", str(killed), "--progress", "quiet", "--no-report", env=env)
    assert _outcome(killed) == _outcome(clean)
    assert _outcome(clean)["received"]
    assert checkpoint["timeline"], "the kill came before any champion was published"
    assert json.loads((killed / "summary.json").read_text())["lifecycle"] == lifecycle
    # The sharing counters count on across the resume (they restarted at 0 before).
    assert _sharing(killed) == _sharing(clean)
    assert any(counts["published"] and counts["accepted"] for counts in _sharing(clean).values())
    assert any(counts["published"] for counts in checkpoint["sharing"].values())


def _sharing(run_dir: Path) -> dict[str, dict]:
    """Each node's sharing counters (a timeline's round-start waits depend on timing: left
    out)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    return {
        name: {**node["sharing"], "transport": node["sharing"]["transport"].get("posted")}
        for name, node in summary["nodes"].items()
    }


class _GivesUp(Operator):
    """Answers a few calls, then fails beyond retrying (its node stops early)."""

    label = "gives-up"

    def __init__(self, calls: int) -> None:
        self.left = calls

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        self.left -= 1
        if self.left < 0:
            raise OperatorError("gives-up: the provider went away")
        return OperatorReply(text="1")


class _GivesUpPlugin:
    @hookimpl
    def dei_operators(self):
        return [
            OperatorSpec(
                name="gives-up", factory=lambda ctx: _GivesUp(int(ctx.options.get("calls", 5)))
            )
        ]


@pytest.mark.parametrize("calls", [0, 25])
def test_a_node_that_stops_early_releases_its_peers(toy_env, tmp_path, calls) -> None:
    import toy_domain

    config = RunConfig(
        domain="toy",
        budget=120,
        rounds=4,
        seed=2,
        eval_workers=0,
        nodes=[
            NodeConfig(name="steady", operator="toy-random"),
            NodeConfig(name="quitter", operator="gives-up", options={"calls": calls}),
            NodeConfig(name="other", operator="toy-random"),
        ],
    )
    registry = load_plugins([toy_domain, _GivesUpPlugin()])
    summary = asyncio.run(
        asyncio.wait_for(asyncio.to_thread(run, config, tmp_path / "run", registry=registry), 120)
    )
    assert summary.nodes["quitter"].stopped
    assert summary.nodes["steady"].rounds_completed == 4
    assert summary.nodes["other"].rounds_completed == 4
    got = {(e["node"], e["from"]) for e in events(tmp_path / "run") if e["event"] == "received"}
    assert ("steady", "other") in got and ("other", "steady") in got


def test_a_wallclock_run_is_replayed_from_its_arrival_record(toy_env, cli, tmp_path) -> None:
    # Wall-clock delivery (as over AXL): what arrives when depends on timing; the run's
    # `received` events record it, and --replay must take exactly those at each round start.
    out = tmp_path / "live"
    env = {**toy_env, "DEI_CHAOS_STALL": "0.02"}
    cli(
        "dei-run",
        *TOY_ARGS,
        "--nodes",
        "3",
        "--budget",
        "120",
        "--rounds",
        "4",
        "--seed",
        "8",
        "--delivery",
        "wallclock",
        "--out",
        str(out),
        env=env,
    )
    summary = json.loads((out / "summary.json").read_text())
    assert "delivery" not in summary["nodes"]["node-0"]["sharing"]["transport"]  # the hub ran
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
        env=env,
    )
    original, again = _outcome(out), _outcome(replay)
    assert original["received"], "nothing arrived: the test would prove little"
    assert again == original


def test_a_champion_arriving_after_the_last_round_began_is_logged_late(toy_env, tmp_path) -> None:
    # One round, wall-clock delivery: "fast" is done long before "slow", whose only round
    # started before fast's champion existed. It is drained once at slow's end, logged and
    # counted as late, and never fought.
    import toy_domain

    registry = load_plugins(extra=[toy_domain])
    nodes = [
        NodeConfig(name="fast", operator="toy-random"),
        NodeConfig(name="slow", operator="toy-random", options={"delay": 0.2}),
    ]
    config = RunConfig(
        domain="toy", nodes=nodes, budget=32, rounds=1, seed=3, eval_workers=0, delivery="wallclock"
    )
    summary = run(config, tmp_path / "run", registry=registry)
    log = events(tmp_path / "run")
    assert not [e for e in log if e["event"] == "received"]  # no round started after round 0
    late = [e for e in log if e["event"] == "received_late"]
    assert [(e["node"], e["from"], e["from_round"]) for e in late] == [("slow", "fast", 0)]
    assert late[0]["after_round"] == 0  # the index of slow's last (only) round
    assert late[0]["program"] == summary.nodes["fast"].champion.text
    sharing = {name: node.sharing for name, node in summary.nodes.items()}
    assert (sharing["slow"]["late"], sharing["slow"]["accepted"]) == (1, 0)
    assert (sharing["fast"]["late"], sharing["fast"]["accepted"]) == (0, 0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--delivery", "virtual", "--transport", "axl"], "needs an in-process transport"),
        (["--transport-option", "loss=0.2"], "add --delivery wallclock"),
    ],
)
def test_delivery_misuse_gives_one_clear_line(toy_env, cli, tmp_path, args, message) -> None:
    result = cli(
        "dei-run",
        "--domain",
        "toy",
        "--operator",
        "toy-random",
        "--nodes",
        "2",
        *args,
        "--out",
        str(tmp_path / "x"),
        "--progress",
        "quiet",
        env=toy_env,
        check=False,
    )
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr
