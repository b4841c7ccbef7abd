"""Faults lose nothing: lossy, partitioned and crashing networks, failing providers, floods."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from dei_framework.contract.transport import Delivery, Transport
from dei_framework.net.envelope import ChampionEnvelope, NodeIdentity
from dei_framework.net.node import Node

TOY = ["--domain", "toy", "--eval-workers", "0", "--progress", "quiet", "--no-report"]


def _log(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def test_loss_partition_and_crash_still_deliver_every_champion(toy_env, cli, tmp_path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "toy"\nnodes = 3\nbudget = 240\nrounds = 8\nseed = 2\neval_workers = 0\n'
        'delivery = "wallclock"\n'
        "[operator_options]\ndelay = 0.25\n"
        "[transport_options]\nloss = 0.3\nheartbeat = 0.1\nseed = 5\n"
        'partition = "node-0|node-1,node-2@0.2-1.6"\noutage = "node-2@1.8-2.8"\n'
    )
    out = tmp_path / "run"
    cli(
        "dei-run",
        "--config",
        str(config),
        "--operator",
        "toy-random",
        "--out",
        str(out),
        "--progress",
        "quiet",
        "--no-report",
        env=toy_env,
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["budget"]["calls"] == 240
    log = _log(out)
    nodes = ["node-0", "node-1", "node-2"]
    got = {
        n: {
            (e["from"], e["from_round"]) for e in log if e["event"] == "received" and e["node"] == n
        }
        for n in nodes
    }
    for receiver in nodes:
        for sender in set(nodes) - {receiver}:
            # Rounds 0 and 1 were published across the partition (and before node-2's crash):
            # gossip catch-up must bring them to everyone before the receivers' last rounds
            # (each round lasts about 0.75 s, so 3-4 rounds start after the last fault ends).
            assert {(sender, 0), (sender, 1)} <= got[receiver], (receiver, sender, got[receiver])
    links = [n["sharing"]["transport"]["link"] for n in summary["nodes"].values()]
    assert sum(link["lost"] for link in links) > 0  # the faults really happened


def test_a_provider_down_for_a_while_stalls_only_its_node(toy_env, tmp_path) -> None:
    from dei_framework import NodeConfig, RunConfig, load_plugins, run

    # The flaky node's provider is down until the steady node has finished its last round:
    # an event, not a clock, so a loaded machine cannot reorder what the test checks. Were the
    # steady node held up by the flaky one, the provider would never come back, the flaky node
    # would give up after its failures in a row, and its quota check below would fail.
    back_up = tmp_path / "provider-back-up"
    config = RunConfig(
        domain="toy",
        budget=80,
        rounds=2,
        seed=1,
        eval_workers=0,
        # Virtual-time delivery (the default) would make "steady" wait for "flaky"'s clock at
        # its round start: the price of determinism. Wall-clock delivery never waits.
        delivery="wallclock",
        nodes=[
            NodeConfig(name="steady", operator="toy-random"),
            NodeConfig(name="flaky", operator="toy-random", options={"down_until": str(back_up)}),
        ],
    )
    work: list[tuple[str, str]] = []  # candidates and rounds (not status or resumed totals)

    def progress(kind: str, data: dict) -> None:
        if kind in ("evaluated", "round"):
            work.append((kind, data["node"]))
        if kind == "round" and data["node"] == "steady" and data["round"] == config.rounds - 1:
            back_up.touch()

    summary = run(config, tmp_path / "run", registry=load_plugins(), progress=progress)
    assert summary.nodes["steady"].calls == 40
    assert summary.nodes["flaky"].calls == 40  # it recovered and finished its quota
    assert summary.nodes["flaky"].attempts > 40  # failed attempts counted as attempts
    assert summary.nodes["steady"].attempts == 40
    steady_done = max(i for i, (_, node) in enumerate(work) if node == "steady")
    flaky_first = min(i for i, (_, node) in enumerate(work) if node == "flaky")
    assert steady_done < flaky_first  # the steady node finished while the flaky one waited


class _FloodTransport(Transport):
    """Delivers whatever the test queued: floods, forgeries, junk."""

    peer_id = "victim"

    def __init__(self, deliveries: list[Delivery]) -> None:
        self.deliveries = deliveries

    async def publish(self, payload: bytes) -> None:
        pass

    def drain(self) -> list[Delivery]:
        out, self.deliveries = self.deliveries, []
        return out


def test_hostile_peers_are_dropped_counted_and_bounded() -> None:
    attacker, honest = NodeIdentity.generate(), NodeIdentity.generate()

    def envelope(node: str, round_: int, program: str, identity=None, key: str = "") -> bytes:
        return ChampionEnvelope(
            domain="toy",
            node=node,
            key=key,
            round=round_,
            operator="x",
            program=program,
            fitness=9e9,
            descriptor={"length": 1},
        ).encode(identity)

    good = envelope("honest", 0, "1 2 3", honest)
    forged = bytearray(envelope("honest", 1, "4 5 6", honest))
    forged[forged.index(b"4 5 6")] = ord("9")  # tampered program, original signature
    impersonation = envelope("honest", 2, "7", attacker)  # signed by the wrong key...
    impersonation = impersonation.replace(
        attacker.public_key_hex.encode(), honest.public_key_hex.encode()
    )  # ...claiming honest
    # Distinct programs: repeated ones would be dropped as duplicates before the rate limit.
    flood = [envelope("attacker", r, f"{r}", attacker) for r in range(5000)]
    junk = [b"\x00\xff" * 10, b"{}", b'{"dei": 2}', b"[" * 100000, b"x" * (1 << 20)]
    # The honest peer's messages arrive last, behind a flood from another peer.
    deliveries = [Delivery(p, "evil") for p in [bytes(forged), impersonation, *junk, *flood]]
    deliveries += [Delivery(good, "good"), Delivery(good, "good")]

    node = Node(
        name="victim", transport=_FloodTransport(deliveries), policy=None, domain_name="toy"
    )
    started = time.monotonic()
    received = node.receive(0)
    elapsed = time.monotonic() - started
    senders = [r.node for r in received]
    assert senders.count("honest") == 1  # not crowded out by the flood; the duplicate dropped
    # Flood capped by the per-sender bucket: a burst of 60, refilled at 120 per minute.
    assert senders.count("attacker") <= 60 + 2 * elapsed + 1
    dropped = node.inbox.dropped
    assert dropped["forged"] == 2
    assert dropped["replay"] == 1
    assert dropped["inbox_overflow"] == len(deliveries) - 2000  # examined at most 2000
    assert dropped["rate_limited"] >= 2000 - 60 - 2 * elapsed - len(junk) - 5, dict(dropped)
    assert dropped["malformed"] + dropped["version"] + dropped["oversize"] == len(junk)
    assert len(node.inbox._seen) <= node.inbox.max_seen


def test_assembler_fuzzing_raises_only_the_documented_error() -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_assembler.py"
    result = subprocess.run(
        [sys.executable, str(script), "--seconds", "5", "--seed", "7"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(result.stdout)
    assert report["inputs"] > 100
    assert report["other_exceptions"] == 0, report["failures"]
    assert report["assembly_errors"] > 0 and report["assembled"] > 0
    assert report["slowest_seconds"] < 5  # a hang guard, not a speed claim


@pytest.mark.parametrize(
    "argv",
    [
        ["dei", "report", "/nonexistent-run"],
        ["dei", "nosuch-command"],
        ["dei-run", "--rounds", "abc"],
        ["dei-run", "--bogus-flag"],
        ["dei", "coreware", "battle", "/nonexistent.red"],
        ["dei", "plugins", "--json", "extra-argument"],
        ["dei", "experiment", "--repeats", "-3", "--domain", "toy"],
    ],
)
def test_every_cli_command_answers_bad_input_with_one_line(argv, toy_env, cli) -> None:
    result = cli(argv[0], *argv[1:], env=toy_env, check=False)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_simulator_survives_random_load_images_and_settings() -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_mars.py"
    result = subprocess.run(
        [sys.executable, str(script), "--battles", "300", "--seed", "11"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"simulator crashed ({result.returncode}): {result.stderr}"
    report = json.loads(result.stdout)
    assert report["battles"] == 300
    assert report["battles"] - report["mars_errors"] > 250  # most settings are valid
    assert report["instructions"] > 0
