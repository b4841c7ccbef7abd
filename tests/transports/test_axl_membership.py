"""Run membership over real AXL nodes: an outsider gets nothing admitted, and it is counted."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from dei_transports.plugin import make_axl

from dei_framework.net.envelope import ChampionEnvelope, InboxFilter, NodeIdentity

pytestmark = pytest.mark.axl


def _keys(tmp_path: Path, names: list[str]) -> dict[str, Path]:
    paths = {}
    for name in names:
        path = tmp_path / f"{name}.pem"
        NodeIdentity.generate().save(path)
        paths[name] = path
    return paths


def _champion(node: str, round_: int, identity: NodeIdentity) -> bytes:
    return ChampionEnvelope(
        domain="coreware",
        node=node,
        key="",
        round=round_,
        operator="gp",
        program=f"MOV {round_}, {node}",
        fitness=1.0,
        descriptor={"tsp": 1.0},
    ).encode(identity)


async def _exchange(apis: dict[str, str], identities: dict[str, NodeIdentity]) -> None:
    members = [identities["a"].public_key_hex, identities["b"].public_key_hex]
    options = {"heartbeat": 0.2, "prune_backoff": 10}
    routers = {
        "a": make_axl(["a"], dict(options, axl_api=apis["a"], members=members))[0],
        "b": make_axl(["b"], dict(options, axl_api=apis["b"], members=members))[0],
        # The outsider runs an open router: it hears of a and b in AXL's spanning tree.
        "c": make_axl(["c"], dict(options, axl_api=apis["c"]))[0],
    }
    for router in routers.values():
        await router.start()
    try:
        assert routers["a"].peer_id == members[0]  # the AXL key is the envelope key
        inboxes = {n: InboxFilter(domain="coreware", members=members) for n in ("a", "b")}
        got: dict[str, set[str]] = {"a": set(), "b": set()}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 40
        round_ = 0
        while loop.time() < deadline:
            for name in ("a", "b", "c"):
                await routers[name].publish(_champion(name, round_, identities[name]))
            # A member relaying an outsider's champion: the envelope check drops it.
            await routers["b"].publish(_champion("c", 100 + round_, identities["c"]))
            round_ += 1
            await asyncio.sleep(0.4)
            for name in ("a", "b"):
                for delivery in routers[name].drain():
                    envelope = inboxes[name].accept(delivery)
                    if envelope is not None:
                        got[name].add(envelope.node)
            rejected = routers["a"].counters["rejected_nonmember"]
            if got == {"a": {"b"}, "b": {"a"}} and rejected and inboxes["a"].dropped["nonmember"]:
                break
        assert got == {"a": {"b"}, "b": {"a"}}, got
        for name in ("a", "b"):
            stats = routers[name].stats()
            assert identities["c"].public_key_hex[:8] not in {p[:8] for p in routers[name].known}
            assert stats["delivered"] > 0
        assert routers["a"].stats()["rejected_nonmember"] > 0
        assert inboxes["a"].dropped["nonmember"] > 0
    finally:
        for router in routers.values():
            await router.close()


def test_outsider_key_gets_nothing_admitted(axl_cluster, tmp_path):
    keys = _keys(tmp_path, ["a", "b", "c"])
    nodes = axl_cluster(3, keys=[keys["a"], keys["b"], keys["c"]])
    apis = {name: node.api for name, node in zip("abc", nodes, strict=True)}
    identities = {name: NodeIdentity.load(path) for name, path in keys.items()}
    asyncio.run(asyncio.wait_for(_exchange(apis, identities), 120))


def test_run_membership_lands_in_summary(axl_cluster, toy_env, tmp_path):
    """Two member dei-run processes and one intruder process, each with its own AXL node."""
    names = ["alpha", "beta", "gamma"]
    keys = _keys(tmp_path, names)
    nodes = axl_cluster(3, keys=[keys[n] for n in names])
    members = [NodeIdentity.load(keys[n]).public_key_hex for n in ("alpha", "beta")]
    processes = []
    # The intruder starts first, so it is up during the members' whole run.
    for name, node in reversed(list(zip(names, nodes, strict=True))):
        out = tmp_path / name
        # The node's envelope identity is its AXL key: one key per node.
        (out / "nodes" / name).mkdir(parents=True)
        (out / "nodes" / name / "identity.pem").write_bytes(keys[name].read_bytes())
        membership = f"members = {json.dumps(members)}\n" if name != "gamma" else ""
        config = tmp_path / f"{name}.toml"
        config.write_text(
            'domain = "toy"\ntransport = "axl"\nbudget = 72\nrounds = 6\nseed = 1\n'
            f"eval_workers = 0\n{membership}"
            f'[[node]]\nname = "{name}"\noperator = "toy-random"\n'
            "[operator_options]\ndelay = 0.5\n"
            f'[transport_options]\nheartbeat = 0.2\naxl_api = "{node.api}"\n'
        )
        processes.append(
            subprocess.Popen(
                [
                    "dei-run",
                    "--config",
                    str(config),
                    "--out",
                    str(out),
                    "--progress",
                    "quiet",
                    "--no-report",
                ],
                env=toy_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for process in processes:
        _, stderr = process.communicate(timeout=240)
        assert process.returncode == 0, stderr[-2000:]
    rejected = {}
    for name, other in (("alpha", "beta"), ("beta", "alpha")):
        run_dir = tmp_path / name
        summary = json.loads((run_dir / "summary.json").read_text())
        log = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
        senders = {e["from"] for e in log if e["event"] == "received"}
        assert senders == {other}, f"{name} received from {senders}"
        rejected[name] = summary["nodes"][name]["sharing"]["transport"].get("rejected_nonmember")
    # gamma's AXL node peers with alpha's, so alpha hears gamma's frames (and counts them);
    # beta is only reachable through AXL's tree and gamma never learns of it.
    assert rejected["alpha"] > 0, rejected
    # The members found each other by key although beta's and alpha's AXL nodes are peered
    # directly (node 1 -> node 0): both received each other's champions (checked above).
    gamma_log = (tmp_path / "gamma" / "events.jsonl").read_text().splitlines()
    assert not [e for e in map(json.loads, gamma_log) if e["event"] == "received"]
    config = json.loads((tmp_path / "alpha" / "config.json").read_text())
    assert config["members"] == sorted(members)
