"""One OS process per node over real AXL nodes: the launcher, dei node, and faults across processes.

``dei-run --transport axl`` (no AXL flags) starts one AXL node and one ``dei node`` process per
node on loopback and merges their directories. The faults: a node process killed with SIGKILL
mid-run (the launcher resumes it from its checkpoint), an AXL node killed mid-run (the launcher
restarts it), a node joining late (``dei node`` by hand, then ``dei merge``), a node that fails
(reported, the others finish), and Ctrl-C (every child stopped; ``--resume`` finishes the run).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from midway import events
from toy_domain import HOLD_AFTER, HOLD_UNTIL

pytestmark = pytest.mark.axl

NAMES = ("a", "b", "c")
ROUNDS = 5
CALLS_PER_ROUND = 12


def write_config(path: Path, *, delay: float = 1.0, names=NAMES, rounds: int = ROUNDS) -> Path:
    """A toy run: each round of a node lasts about 3 s (12 calls of 1 s, 4 in flight)."""
    nodes = "".join(f'[[node]]\nname = "{n}"\noperator = "toy-random"\n' for n in names)
    path.write_text(
        f'domain = "toy"\ntransport = "axl"\nbudget = {len(names) * rounds * CALLS_PER_ROUND}\n'
        f"rounds = {rounds}\nseed = 3\neval_workers = 0\ncheckpoint_seconds = 0.5\n{nodes}"
        f"[operator_options]\ndelay = {delay}\n[transport_options]\nheartbeat = 0.2\n"
    )
    return path


@pytest.fixture
def axl_env(toy_env: dict[str, str], axl_binary: str) -> dict[str, str]:
    """The toy plugin plus the AXL binary the fixtures built (the launcher uses it)."""
    return {**toy_env, "DEI_AXL_BIN": axl_binary}


def launch(config: Path, out: Path, env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        ["dei-run", "--config", str(config), "--out", str(out), "--no-report", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as in a terminal, even when pytest itself runs as a background job (which
        # inherits an ignored SIGINT, and dei-run respects that).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def finish(process: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        raise AssertionError(f"launcher hung:\n{stderr[-3000:]}") from None
    return process.returncode, stdout, stderr


def wait_for(condition: Callable[[], object], timeout: float = 120, what: str = "") -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def rounds_done(out: Path, name: str) -> int:
    return sum(1 for e in events(out / "processes" / name) if e.get("event") == "round")


def processes(out: Path) -> dict:
    try:
        return json.loads((out / "processes.json").read_text())
    except (OSError, ValueError):
        return {}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of the launcher counts as gone
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def assert_exact_ledger(out: Path, summary: dict, names=NAMES, rounds: int = ROUNDS) -> None:
    """Every node used exactly its quota, and each paid call is logged exactly once."""
    quota = rounds * CALLS_PER_ROUND
    assert summary["budget"]["calls"] == summary["budget"]["limit"] == quota * len(names)
    calls = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    per_node = Counter(c["node"] for c in calls)
    assert per_node == {name: quota for name in names}
    assert len({(c["node"], c["key"]) for c in calls}) == len(calls)
    for name in names:
        node = summary["nodes"][name]
        assert node["calls"] == quota and node["rounds_completed"] == rounds, node
        assert not node.get("stopped"), node


def test_headline_run_one_process_per_node_over_axl(axl_binary, tmp_path, cli) -> None:
    """`dei-run --domain coreware --transport axl --nodes 3` with nothing else set up."""
    out = tmp_path / "run"
    result = cli(
        "dei-run",
        "--domain",
        "coreware",
        "--transport",
        "axl",
        "--nodes",
        "3",
        "--budget",
        "120",
        "--rounds",
        "2",
        "--out",
        str(out),
        "--common-ground",
        env={**os.environ, "DEI_AXL_BIN": axl_binary},
        timeout=600,
    )
    summary = json.loads((out / "summary.json").read_text())
    nodes = summary["nodes"]
    pids = {name: node["pid"] for name, node in nodes.items()}
    assert len(set(pids.values())) == 3 and os.getpid() not in pids.values()
    axl_pids = {node["transport_process"]["axl_pid"] for node in nodes.values()}
    assert len(axl_pids) == 3 and not axl_pids & set(pids.values())
    config = json.loads((out / "config.json").read_text())
    # The launcher closes the run to its keys, each bound to its node's name.
    assert sorted(config["members"]) == sorted(
        f"{name}={n['transport_process']['axl_key']}" for name, n in nodes.items()
    )
    assert summary["budget"]["calls"] == 120 and summary["evaluated"] > 0
    assert (out / "report.md").exists()
    # One merged run, like an in-memory one: its files and the same summary sections.
    memory = tmp_path / "memory"
    cli(
        "dei-run",
        "--domain",
        "coreware",
        "--nodes",
        "3",
        "--budget",
        "12",
        "--rounds",
        "1",
        "--out",
        str(memory),
        "--no-report",
        "--common-ground",
    )
    reference = json.loads((memory / "summary.json").read_text())
    assert set(summary) == set(reference)
    assert set(next(iter(reference["nodes"].values()))) <= set(next(iter(nodes.values())))
    # Common ground measured by the merge over every node's elites, as an in-memory run does.
    common = summary["merged"]["common"]
    assert common["reference"] == reference["merged"]["common"]["reference"]
    merged_archive = json.loads((out / "merged_archive.json").read_text())
    assert common["num_elites"] == len(merged_archive) > 0
    assert {e["node"] for e in merged_archive} <= set(nodes)
    for node in nodes.values():
        assert len(node["champion_common_fitness_per_round"]) == 2
        assert node["champion"]["common_fitness"] == node["champion_common_fitness_per_round"][-1]
    for name in nodes:
        assert len(list((out / "nodes" / name).glob("round-*.json"))) == 2
    merged = events(out)
    assert len(merged) == sum(len(events(out / "processes" / n)) for n in nodes)
    # Champions went between distinct OS processes, and the log says so. Nodes never wait for
    # each other: with two rounds a champion may come after its receiver's last round began,
    # and is then logged as received_late (delivered, not fought).
    received = [e for e in merged if e["event"] in ("received", "received_late")]
    assert received and all(pids[e["from"]] != pids[e["node"]] for e in received)
    assert "received over axl" in result.stderr
    assert "champions delivered between OS processes over axl" in result.stderr
    assert all(alive(pid) is False for pid in [*pids.values(), *axl_pids])
    # dei watch reads the launched run as one run, each event once.
    from dei_framework.app.watch.run import WatchedRun

    state = WatchedRun(out).state(seconds=None)
    assert sorted(n["name"] for n in state["nodes"]) == sorted(nodes)
    assert state["run"]["calls"] == 120 and state["run"]["status"] == "finished"
    assert {n["name"]: n["pid"] for n in state["nodes"]} == pids


def test_node_process_killed_with_sigkill_is_resumed_and_catches_up(axl_env, tmp_path) -> None:
    out = tmp_path / "run"
    launcher = launch(write_config(tmp_path / "run.toml"), out, axl_env)
    wait_for(lambda: rounds_done(out, "b") >= 1, what="node b's first round")
    victim = processes(out)["b"]["pid"]
    killed_round = rounds_done(out, "b")
    os.kill(victim, signal.SIGKILL)
    code, _, stderr = finish(launcher)
    assert code == 0, stderr[-3000:]
    assert f"b (pid {victim}) was killed by signal 9; resuming it" in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["nodes"]["b"]["pid"] != victim
    assert_exact_ledger(out, summary)
    log = events(out)
    # After its resume, b received the others' champions, and they received b's.
    late = [
        e
        for e in log
        if e["event"] == "received" and e["node"] == "b" and e["round"] > killed_round
    ]
    assert {e["from"] for e in late} == {"a", "c"}, late
    assert any(
        e["event"] == "received" and e["from"] == "b" and e["from_round"] >= killed_round
        for e in log
    )


def test_axl_node_killed_mid_run_is_restarted_and_nothing_is_lost(axl_env, tmp_path) -> None:
    """c's AXL node is killed with SIGKILL after c's first round; the launcher restarts it.

    Champions must flow both ways again: c receives a champion its peers finished after the
    restart, and a peer receives one c finished after the restart. Eight rounds of about 3 s
    leave some 20 s after the restart; recovery takes a few seconds (docs/transports.md).
    """
    rounds = 8
    out = tmp_path / "run"
    launcher = launch(write_config(tmp_path / "run.toml", rounds=rounds), out, axl_env)
    wait_for(lambda: rounds_done(out, "c") >= 1, what="node c's first round")
    axl_pid = processes(out)["c"]["axl_pid"]
    dei_pid = processes(out)["c"]["pid"]
    os.kill(axl_pid, signal.SIGKILL)
    wait_for(
        lambda: processes(out).get("c", {}).get("axl_pid") not in (None, axl_pid),
        what="the launcher to restart c's AXL node",
    )
    # Rounds finished by now ended before this moment, so before or at the restart: only
    # champions of later rounds count as published after it.
    after = {name: rounds_done(out, name) for name in NAMES}
    code, _, stderr = finish(launcher)
    assert code == 0, stderr[-3000:]
    assert f"c: its AXL node (pid {axl_pid}) exited" in stderr
    summary = json.loads((out / "summary.json").read_text())
    node = summary["nodes"]["c"]
    assert node["pid"] == dei_pid  # the DEI node process lived through it
    assert node["transport_process"]["axl_restarts"] == 1
    assert node["transport_process"]["axl_pid"] != axl_pid
    assert_exact_ledger(out, summary, rounds=rounds)
    assert max(after.values()) < rounds - 2, after  # the restart left rounds to flow in
    received = [e for e in events(out) if e["event"] == "received"]
    inbound = [e for e in received if e["node"] == "c" and e["from_round"] >= after[e["from"]]]
    outbound = [e for e in received if e["from"] == "c" and e["from_round"] >= after["c"]]
    assert inbound, (
        "c received no champion published after its AXL node restarted",
        after,
        [(e["from"], e["from_round"]) for e in received if e["node"] == "c"],
    )
    assert outbound, (
        "no peer received a champion c published after its AXL node restarted",
        after,
        [(e["node"], e["from_round"]) for e in received if e["from"] == "c"],
    )


def test_late_joining_node_gets_and_gives_champions(axl_cluster, toy_env, tmp_path, cli) -> None:
    apis = {name: node.api for name, node in zip(NAMES, axl_cluster(3), strict=True)}
    config = write_config(tmp_path / "run.toml")
    out = tmp_path / "run"

    # a and b hold after three rounds until c has published a champion, so that they are still
    # running to receive it however slowly c starts (an event, not a head start in seconds).
    gate = tmp_path / "c-published"
    held = {**toy_env, HOLD_UNTIL: str(gate), HOLD_AFTER: str(3 * CALLS_PER_ROUND)}

    def start(name: str, env: dict[str, str]) -> subprocess.Popen:
        return subprocess.Popen(
            [
                "dei",
                "node",
                "--config",
                str(config),
                "--name",
                name,
                "--out",
                str(out),
                "--axl-api",
                apis[name],
                "--progress",
                "quiet",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    early = [start("a", held), start("b", held)]

    def a_two_rounds_in() -> bool:
        for process in early:
            if process.poll() is not None:
                raise AssertionError(f"a node process ended early: {process.communicate()}")
        return rounds_done(out, "a") >= 2

    wait_for(a_two_rounds_in, what="node a's second round")
    late = start("c", toy_env)

    def c_published() -> bool:
        if late.poll() is not None:
            raise AssertionError(f"node c ended early: {late.communicate()}")
        return rounds_done(out, "c") >= 1

    wait_for(c_published, what="node c's first round")
    gate.touch()
    for process in [*early, late]:
        code, stdout, stderr = finish(process)
        assert code == 0, stderr[-3000:]
    assert "done: node c" in stdout
    log = {name: events(out / "processes" / name) for name in NAMES}
    assert {e["from"] for e in log["c"] if e["event"] == "received"} == {"a", "b"}
    # c's champion reaches a or b in a round (received) or after their last one (received_late).
    assert any(
        e["event"] in ("received", "received_late") and e["from"] == "c"
        for e in log["a"] + log["b"]
    )
    result = cli("dei", "merge", str(out), "--no-report", env=toy_env)
    assert "merged: 3 nodes" in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert_exact_ledger(out, summary)
    assert len({node["pid"] for node in summary["nodes"].values()}) == 3


def test_a_failing_node_is_reported_and_the_others_finish(axl_env, tmp_path) -> None:
    out = tmp_path / "run"
    launcher = launch(write_config(tmp_path / "run.toml", rounds=3), out, axl_env)
    wait_for(
        lambda: (
            (out / "processes" / "a" / "checkpoint.json").exists() and rounds_done(out, "a") >= 1
        ),
        what="node a's checkpoint",
    )
    pid = processes(out)["a"]["pid"]
    # A damaged checkpoint: the resumed process fails with an error, and is not retried.
    os.kill(pid, signal.SIGSTOP)
    (out / "processes" / "a" / "checkpoint.json").write_text("{torn")
    os.kill(pid, signal.SIGKILL)
    code, _, stderr = finish(launcher)
    assert code == 3, stderr[-700:]  # a partial run: some nodes stopped early
    assert "a (pid" in stderr and "failed with exit status 1" in stderr
    assert "checkpoint.json is damaged" in stderr
    assert "Traceback" not in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["nodes"]["a"]["stopped"] and summary["nodes"]["a"]["failed"]
    for name in ("b", "c"):
        assert summary["nodes"][name]["rounds_completed"] == 3
        assert not summary["nodes"][name]["stopped"]


def test_ctrl_c_stops_every_child_and_resume_finishes_the_run(axl_env, tmp_path) -> None:
    out = tmp_path / "run"
    config = write_config(tmp_path / "run.toml", rounds=ROUNDS)
    launcher = launch(config, out, axl_env)
    wait_for(lambda: all(rounds_done(out, n) >= 1 for n in NAMES), what="every first round")
    children = processes(out)
    pids = [p for entry in children.values() for p in (entry["pid"], entry["axl_pid"])]
    started = time.monotonic()
    launcher.send_signal(signal.SIGINT)
    code, _, stderr = finish(launcher, timeout=60)
    assert code == 130, stderr[-2000:]
    assert "dei-run --resume" in stderr and "Traceback" not in stderr
    assert time.monotonic() - started < 45
    assert not [pid for pid in pids if alive(pid)]
    resumed = subprocess.run(
        ["dei-run", "--resume", str(out), "--no-report"],
        env=axl_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert_exact_ledger(out, summary)


def test_children_do_not_outlive_a_launcher_killed_with_sigkill(axl_env, tmp_path) -> None:
    out = tmp_path / "run"
    launcher = launch(write_config(tmp_path / "run.toml"), out, axl_env)
    children = wait_for(
        lambda: len(processes(out)) == 3 and processes(out), what="three node processes"
    )
    pids = [p for entry in children.values() for p in (entry["pid"], entry["axl_pid"])]
    assert all(alive(pid) for pid in pids)
    launcher.kill()
    launcher.communicate(timeout=30)
    wait_for(
        lambda: not [pid for pid in pids if alive(pid)],
        timeout=45,
        what="the children to stop with their launcher",
    )


@pytest.mark.slow
def test_a_terminal_ctrl_c_restarts_no_axl_node(axl_env, tmp_path) -> None:
    # A terminal's Ctrl-C goes to its whole foreground process group: the launcher and, unless
    # they are kept out of it, the AXL nodes it started, which the launcher then "repaired".
    out = tmp_path / "run"
    config = write_config(tmp_path / "run.toml", rounds=ROUNDS)
    launcher = subprocess.Popen(
        ["dei-run", "--config", str(config), "--out", str(out), "--no-report"],
        env=axl_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, the test's stand-in for the terminal's
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    wait_for(lambda: all(rounds_done(out, n) >= 1 for n in NAMES), what="every first round")
    children = processes(out)
    pids = [p for entry in children.values() for p in (entry["pid"], entry["axl_pid"])]
    os.killpg(launcher.pid, signal.SIGINT)
    code, _, stderr = finish(launcher, timeout=60)
    assert code == 130, stderr[-2000:]
    assert "restarted it as pid" not in stderr, stderr[-3000:]
    assert "exited with status" not in stderr
    assert not [pid for pid in pids if alive(pid)]
