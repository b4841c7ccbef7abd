"""A compromised member on real AXL: its forgeries are dropped and counted, nothing is fought twice.

Two honest ``dei-run`` processes (node-1, node-2) and a compromised member (node-0, driven
by this test through its own GossipSub router) each have their own AXL node; the run's
``members`` bind every name to its key. node-0 signs with its own (member) key and sends,
over and over: champions in node-2's and in node-1's name, node-2's real champions re-signed
as its own for the same round, a 200 KB name, ``round = 10**30``, an over-long program and an
over-long operator label, and a payload above every receiver's frame cap (issue 37 item 5).
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
from collections import Counter

import attrs
import pytest
from dei_transports.plugin import make_axl

from dei_framework.net.envelope import (
    MAX_ENVELOPE_BYTES,
    MAX_NAME_CHARS,
    MAX_PROGRAM_CHARS,
    ChampionEnvelope,
    EnvelopeError,
    NodeIdentity,
    canonical_bytes,
)

pytestmark = pytest.mark.axl

NAMES = ("node-0", "node-1", "node-2")
HONEST = ("node-1", "node-2")


def _raw(identity: NodeIdentity, **fields) -> bytes:
    """A body validly signed by ``identity``, built by hand past the sender-side bounds."""
    body = {
        "dei": 1,
        "domain": "toy",
        "node": "node-0",
        "key": identity.public_key_hex,
        "round": 1,
        "operator": "toy-random",
        "program": "1 2",
        "fitness": 1.0,
        "descriptor": {},
        "time": 1764400000.0,
    }
    body.update(fields)
    body["sig"] = identity.sign(canonical_bytes(body)).hex()
    return json.dumps(body).encode()


def _program(rng: random.Random) -> str:
    """A valid toy program no honest node will have made (8 random numbers: 1 in 10**16)."""
    return " ".join(str(rng.randrange(100)) for _ in range(8))


@attrs.define
class _Attacker:
    """node-0: a member whose key an attacker holds."""

    identity: NodeIdentity
    keys: dict[str, str]
    rng: random.Random = attrs.field(factory=lambda: random.Random(37))
    #: Programs sent under another node's name: none may ever be fought by anyone.
    impersonated: set[str] = attrs.Factory(set)
    #: node-2's real champions that were re-signed and sent again as node-0's.
    resigned: int = 0

    def forgeries(self, tick: int) -> list[bytes]:
        """One tick's forgeries; the large ones every fifth tick (they cost AXL bandwidth)."""
        out = []
        for name in ("node-2", "node-1"):  # another member's name; the receiver's own name
            program = _program(self.rng)
            self.impersonated.add(program)
            out.append(_raw(self.identity, node=name, program=program, round=tick))
        if tick % 5 == 0:
            out += [
                _raw(self.identity, node="node-0" + "x" * 200_000, program=_program(self.rng)),
                _raw(self.identity, round=10**30, program=_program(self.rng)),
                _raw(self.identity, program="1 " * (MAX_PROGRAM_CHARS // 2 + 1)),
                _raw(self.identity, operator="o" * 100_000, program=_program(self.rng)),
                b"{" + b" " * (MAX_ENVELOPE_BYTES + 1024) + b"}",
            ]
        return out

    def relay(self, payload: bytes) -> list[bytes]:
        """node-2's real champion, re-signed as node-0's own and in node-2's name."""
        try:
            envelope = ChampionEnvelope.decode(payload, domain="toy")
        except EnvelopeError:
            return []
        if envelope.key != self.keys["node-2"]:
            return []
        self.resigned += 1
        own = attrs.evolve(envelope, node="node-0", key="").encode(self.identity)
        stolen = attrs.evolve(envelope, key="").encode(self.identity)
        return [own, stolen]


async def _attack(
    api: str, attacker: _Attacker, members: list[str], processes: list[subprocess.Popen]
) -> None:
    options = {"heartbeat": 0.2, "prune_backoff": 10, "axl_api": api, "members": members}
    router = make_axl(["node-0"], options)[0]
    await router.start()
    try:
        assert router.peer_id == attacker.identity.public_key_hex
        tick = 0
        while any(process.poll() is None for process in processes):
            payloads = attacker.forgeries(tick)
            for delivery in router.drain():
                payloads += attacker.relay(delivery.payload)
            for payload in payloads:
                await router.publish(payload)
            tick += 1
            await asyncio.sleep(0.3)
    finally:
        await router.close()


def test_a_compromised_members_forgeries_are_dropped_on_real_axl(axl_cluster, toy_env, tmp_path):
    pems = {}
    for name in NAMES:
        pems[name] = tmp_path / f"{name}.pem"
        NodeIdentity.generate().save(pems[name])
    identities = {name: NodeIdentity.load(pems[name]) for name in NAMES}
    keys = {name: identity.public_key_hex for name, identity in identities.items()}
    # node-0's AXL node is the one the others peer with: the attacker sits in the middle.
    nodes = dict(zip(NAMES, axl_cluster(3, keys=[pems[n] for n in NAMES]), strict=True))
    members = [f"{name}={keys[name]}" for name in NAMES]
    processes = []
    for name in HONEST:
        out = tmp_path / name
        # The node's envelope identity is its AXL key: one key per node.
        (out / "nodes" / name).mkdir(parents=True)
        (out / "nodes" / name / "identity.pem").write_bytes(pems[name].read_bytes())
        config = tmp_path / f"{name}.toml"
        config.write_text(
            f'domain = "toy"\ntransport = "axl"\nbudget = 72\nrounds = 6\nseed = 1\n'
            f"eval_workers = 0\nmembers = {json.dumps(members)}\n"
            f'[[node]]\nname = "{name}"\noperator = "toy-random"\n'
            "[operator_options]\ndelay = 0.5\n"
            f'[transport_options]\nheartbeat = 0.2\naxl_api = "{nodes[name].api}"\n'
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
    attacker = _Attacker(identities["node-0"], keys)
    try:
        asyncio.run(
            asyncio.wait_for(_attack(nodes["node-0"].api, attacker, members, processes), 300)
        )
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    for process in processes:
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, stderr[-2000:]
    assert attacker.resigned > 0, "node-0 never heard a champion of node-2 to re-sign"

    for name in HONEST:
        run_dir = tmp_path / name
        lines = (run_dir / "events.jsonl").read_text().splitlines()
        events = [json.loads(line) for line in lines]
        received = [e for e in events if e["event"] == "received"]
        other = "node-2" if name == "node-1" else "node-1"
        # Nothing was taken in under a name its key may not use, nor any over-long field.
        assert {e["from"] for e in received} <= {other, "node-0"}, name
        assert not [e for e in received if e["program"] in attacker.impersonated], name
        # No champion fought twice: one (round, program) is taken in once, whoever sent it.
        fought = Counter((e["from_round"], e["program"]) for e in received)
        assert [k for k, n in fought.items() if n > 1] == [], name
        # Disk is bounded too: no line carries the 200 KB name or the 100 KB label.
        assert max(map(len, lines)) < 4 * MAX_NAME_CHARS + 1024, name

        sharing = json.loads((run_dir / "summary.json").read_text())["nodes"][name]["sharing"]
        dropped = sharing["dropped"]
        # Another member's name (node-1 hears node-2's), its own name (node-2 hears node-1's).
        assert dropped.get("impersonation", 0) > 0, (name, dropped)
        assert dropped.get("oversize", 0) > 0, (name, dropped)  # name, round, program, label
        # Above the frame cap: counted by the router, never delivered to the node.
        assert sharing["transport"].get("oversize_messages", 0) > 0, (name, sharing)
    # node-2's champions reached node-1 re-signed by node-0: one copy fought, the rest dropped.
    node1 = json.loads((tmp_path / "node-1" / "summary.json").read_text())
    assert node1["nodes"]["node-1"]["sharing"]["dropped"].get("duplicate", 0) > 0, node1
