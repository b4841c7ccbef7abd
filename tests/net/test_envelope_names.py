"""Names bound to keys, the receiver's own name, content de-duplication and field bounds.

Each forgery of issue 37 item 5 is sent to an :class:`InboxFilter` (or a :class:`Node`) and
must be dropped and counted, never admitted; the honest counterpart of each is admitted, so
a filter that drops everything fails too.
"""

from __future__ import annotations

import json

import pytest

from dei_framework.contract.transport import Delivery
from dei_framework.net.envelope import (
    MAX_NAME_CHARS,
    MAX_OPERATOR_CHARS,
    MAX_PROGRAM_CHARS,
    MAX_ROUND,
    ChampionEnvelope,
    EnvelopeError,
    InboxFilter,
    NodeIdentity,
    canonical_bytes,
    parse_members,
    parse_membership,
)

KEYS = {name: NodeIdentity.generate() for name in ("node-0", "node-1", "node-2", "loose")}


def _pub(name: str) -> str:
    return KEYS[name].public_key_hex


def _signed(
    signer: str, *, node: str, program: str = "MOV 0, 1", round_: int = 1, operator: str = "gp"
) -> bytes:
    """An envelope signed by ``signer``'s key, claiming to come from ``node``."""
    envelope = ChampionEnvelope(
        domain="coreware",
        node=node,
        key="",
        round=round_,
        operator=operator,
        program=program,
        fitness=1.0,
        descriptor={"tsp": 1.0},
        time=1764400000.0,
    )
    return envelope.encode(KEYS[signer])


def _raw(signer: str, **fields) -> bytes:
    """A validly signed body built by hand, bypassing the sender-side bounds of ``encode``."""
    body = {
        "dei": 1,
        "domain": "coreware",
        "node": "node-0",
        "key": _pub(signer),
        "round": 1,
        "operator": "gp",
        "program": "MOV 0, 1",
        "fitness": 1.0,
        "descriptor": {},
        "time": 1764400000.0,
    }
    body.update(fields)
    body["sig"] = KEYS[signer].sign(canonical_bytes(body)).hex()
    return json.dumps(body).encode()


def _bound_inbox(**kw) -> InboxFilter:
    """node-1's filter in a run whose three nodes are bound by name, plus one key-only member."""
    members = [f"{n}={_pub(n)}" for n in ("node-0", "node-1", "node-2")] + [_pub("loose")]
    return InboxFilter(
        domain="coreware",
        members=members,
        own_name="node-1",
        own_key=_pub("node-1"),
        rate_per_minute=1000,
        **kw,
    )


def test_membership_entries_parse_bind_and_normalise():
    key0, key1 = _pub("node-0"), _pub("node-1")
    membership = parse_membership(f"node-0={key0.upper()}, {key1}")
    assert membership.names == {key0: "node-0"}
    assert membership.keys == {key0, key1}
    assert key0 in membership and "f" * 64 not in membership and len(membership) == 2
    assert membership.entries() == tuple(sorted([f"node-0={key0}", key1]))
    # The same key listed bare and bound is one member, bound.
    assert parse_membership([key0, f"node-0={key0}"]).names == {key0: "node-0"}
    # Everything that asks only for keys still gets keys.
    assert parse_members([f"node-0={key0}", key1]) == {key0, key1}
    assert parse_membership(None) is None and parse_membership([]) is None


@pytest.mark.parametrize(
    "entries, message",
    [
        (["a=b=" + "a" * 64], "the name must be"),
        (["=" + "a" * 64], "the name must be"),
        ([f"{'n' * (MAX_NAME_CHARS + 1)}={'a' * 64}"], "the name must be"),
        ([f"x={'a' * 64}", f"y={'a' * 64}"], "bound to two names"),
        ([f"x={'a' * 64}", f"x={'b' * 64}"], "bound to two keys"),
        (["x=abc"], "not a 64-hex"),
    ],
)
def test_bad_membership_entries_are_refused(entries, message):
    from dei_framework.contract.errors import ConfigError
    from dei_framework.runtime.config.record import NodeConfig
    from dei_framework.runtime.config.run_config import RunConfig

    with pytest.raises(EnvelopeError, match=message):
        parse_membership(entries)
    with pytest.raises(ConfigError, match=f"members: .*{message}"):
        RunConfig(
            domain="toy", nodes=[NodeConfig(name="a", operator="x")], budget=2, members=entries
        )


def test_bound_members_survive_the_config_round_trip():
    from dei_framework.runtime.config.record import NodeConfig
    from dei_framework.runtime.config.run_config import RunConfig

    run = RunConfig(
        domain="toy",
        nodes=[NodeConfig(name="a", operator="x")],
        budget=2,
        members=[f"a={'B' * 64}", "c" * 64],
    )
    assert run.members == (f"a={'b' * 64}", "c" * 64)
    assert RunConfig.from_json(run.to_json()).members == run.members


def test_a_member_may_speak_only_for_its_own_name():
    inbox = _bound_inbox()
    assert inbox.accept(_signed("node-0", node="node-0", program="A")) is not None
    # node-0's key claiming node-2's name, and the receiver's own name: dropped, counted.
    assert inbox.accept(_signed("node-0", node="node-2", program="B")) is None
    assert inbox.accept(_signed("node-0", node="node-1", program="C")) is None
    # ... or a name outside the run.
    assert inbox.accept(_signed("node-0", node="stranger", program="D")) is None
    assert inbox.dropped == {"impersonation": 3}
    assert inbox.accepted == 1
    # Impostors get no token bucket (only node-0's honest champion made one).
    assert len(inbox._buckets) == 1
    # The honest owner of the claimed name is still heard.
    assert inbox.accept(_signed("node-2", node="node-2", program="B")) is not None


def test_a_key_only_member_keeps_free_names_but_not_bound_or_own_ones():
    inbox = _bound_inbox()
    assert inbox.accept(_signed("loose", node="loose-node", program="A")) is not None
    assert inbox.accept(_signed("loose", node="node-2", program="B")) is None
    assert inbox.accept(_signed("loose", node="node-1", program="C")) is None
    assert inbox.dropped == {"impersonation": 2}


@pytest.mark.parametrize("members", [None, "keys"])
def test_nobody_else_may_claim_the_receivers_own_name(members):
    keys = [_pub(n) for n in KEYS] if members else None
    inbox = InboxFilter(domain="coreware", members=keys, own_name="node-1", own_key=_pub("node-1"))
    assert inbox.accept(_signed("node-0", node="node-1", program="A")) is None
    assert inbox.dropped == {"impersonation": 1}
    # The receiver's own champion brought back by gossip passes (the node skips it) ...
    assert inbox.accept(_signed("node-1", node="node-1", program="B")) is not None
    # ... but its own key under another name means the key is in someone else's hands.
    assert inbox.accept(_signed("node-1", node="node-7", program="C")) is None
    assert inbox.dropped == {"impersonation": 2}
    assert inbox.accept(_signed("node-0", node="node-0", program="A")) is not None


def test_a_champion_taken_in_is_not_fought_again_whoever_resigns_it():
    inbox = _bound_inbox()
    original = _signed("node-2", node="node-2", program="SPL 0", round_=3)
    assert inbox.accept(Delivery(original, "node-2")) is not None
    # The same bytes relayed by another peer: a replay.
    assert inbox.accept(Delivery(original, "node-0")) is None
    # node-0 re-signs node-2's champion as its own (or as node-2's: an impersonation).
    assert inbox.accept(_signed("node-0", node="node-0", program="SPL 0", round_=3)) is None
    assert inbox.accept(_signed("node-0", node="node-2", program="SPL 0", round_=3)) is None
    # A key-only member re-signing it under a free name is a duplicate too.
    assert inbox.accept(_signed("loose", node="loose-node", program="SPL 0", round_=3)) is None
    assert inbox.dropped == {"replay": 1, "duplicate": 2, "impersonation": 1}
    assert inbox.accepted == 1
    # Duplicates spend no tokens and no round cap: a new program from node-0 still gets in.
    assert inbox.accept(_signed("node-0", node="node-0", program="SPL 1", round_=3)) is not None
    # A lasting elite re-published as a later round's migrant is that round's champion.
    assert inbox.accept(_signed("node-2", node="node-2", program="SPL 0", round_=4)) is not None


def test_the_remembered_programs_are_bounded():
    inbox = InboxFilter(domain="coreware", max_seen=3, rate_per_minute=1000)
    for index in range(10):
        assert inbox.accept(_signed("node-0", node="node-0", program=f"DAT {index}")) is not None
    assert len(inbox._taken) == 3
    # The oldest are forgotten: memory is bounded, and an old program may be fought again.
    assert inbox.accept(_signed("node-2", node="node-2", program="DAT 0")) is not None
    assert inbox.accept(_signed("node-2", node="node-2", program="DAT 9")) is None
    assert inbox.dropped == {"duplicate": 1}


@pytest.mark.parametrize(
    "fields, reason",
    [
        ({"node": "n" * (MAX_NAME_CHARS + 1)}, "oversize"),
        ({"node": "n" * 200_000}, "oversize"),
        ({"node": ""}, "malformed"),
        ({"operator": "o" * (MAX_OPERATOR_CHARS + 1)}, "oversize"),
        ({"round": MAX_ROUND + 1}, "oversize"),
        ({"round": 10**30}, "oversize"),
        ({"round": -1}, "malformed"),
        ({"program": "p" * (MAX_PROGRAM_CHARS + 1)}, "oversize"),
    ],
)
def test_oversized_fields_are_dropped_and_counted(fields, reason):
    inbox = InboxFilter(domain="coreware")
    assert inbox.accept(_raw("node-0", **fields)) is None
    assert inbox.dropped == {reason: 1}
    # At the bounds themselves the same envelope is fine.
    edge = {
        "node": "n" * MAX_NAME_CHARS,
        "operator": "o" * MAX_OPERATOR_CHARS,
        "round": MAX_ROUND,
        "program": "p" * MAX_PROGRAM_CHARS,
    }
    assert inbox.accept(_raw("node-0", **edge)) is not None


@pytest.mark.parametrize(
    "fields",
    [
        {"node": "n" * (MAX_NAME_CHARS + 1)},
        {"operator": "o" * (MAX_OPERATOR_CHARS + 1)},
        {"round": MAX_ROUND + 1},
        {"node": ""},
    ],
)
def test_a_sender_refuses_to_encode_what_receivers_drop(fields):
    envelope = ChampionEnvelope(
        **{
            **dict(
                domain="coreware",
                node="node-0",
                key="",
                round=1,
                operator="gp",
                program="MOV 0, 1",
                fitness=1.0,
                descriptor={},
            ),
            **fields,
        }
    )
    with pytest.raises(EnvelopeError):
        envelope.encode(KEYS["node-0"])


class _Inbox:
    """A transport stand-in: what ``drain`` returns is what arrived."""

    def __init__(self, deliveries: list[Delivery]) -> None:
        self.deliveries = deliveries

    def drain(self) -> list[Delivery]:
        out, self.deliveries = self.deliveries, []
        return out

    def stats(self) -> dict[str, int]:
        return {}


def test_a_node_admits_only_the_honest_champion_of_each_forgery():
    from dei_framework.net.node import Node
    from dei_framework.search.sharing import TopKSharing

    members = [f"{n}={_pub(n)}" for n in ("node-0", "node-1", "node-2")]
    forged = [
        _signed("node-0", node="node-2", program="X1"),  # another member's name
        _signed("node-0", node="node-1", program="X2"),  # the receiver's name
        _signed("node-2", node="node-2", program="REAL"),  # honest
        _signed("node-0", node="node-0", program="REAL"),  # re-signed copy
        _raw("node-0", node="node-0" + "x" * 200_000),  # a 200 KB name
        _raw("node-0", node="node-0", round=10**30, program="X3"),
        _raw("node-0", node="node-0", operator="o" * 100_000, program="X4"),
        _signed("node-1", node="node-1", program="MINE"),  # own, echoed by gossip
    ]
    node = Node(
        name="node-1",
        transport=_Inbox([Delivery(d, "p") for d in forged]),
        policy=TopKSharing(name="champion"),
        domain_name="coreware",
        identity=KEYS["node-1"],
        members=members,
    )
    received = node.receive(0)
    assert [(c.node, c.text) for c in received] == [("node-2", "REAL")]
    assert node.own_messages == 1
    assert node.stats()["dropped"] == {"impersonation": 2, "duplicate": 1, "oversize": 3}
    # What a received event logs is bounded by the field caps.
    for candidate in received:
        assert len(candidate.node) <= MAX_NAME_CHARS
        assert len(candidate.operator) <= MAX_OPERATOR_CHARS
        assert 0 <= candidate.round <= MAX_ROUND


def test_a_node_whose_key_is_bound_to_another_name_refuses_to_start(cli, toy_env, tmp_path):
    out = tmp_path / "run"
    key_path = out / "nodes" / "solo" / "identity.pem"
    key_path.parent.mkdir(parents=True)
    identity = NodeIdentity.generate()
    identity.save(key_path)
    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "toy"\nbudget = 4\nrounds = 1\neval_workers = 0\n'
        f'members = ["other={identity.public_key_hex}"]\n'
        '[[node]]\nname = "solo"\noperator = "toy-random"\n'
    )
    result = cli(
        "dei-run",
        "--config",
        str(config),
        "--out",
        str(out),
        "--progress",
        "quiet",
        env=toy_env,
        check=False,
    )
    assert result.returncode == 1
    assert "bound to the name 'other'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("bound", [False, True])
def test_a_bare_key_member_runs_with_one_deprecation_warning(cli, toy_env, tmp_path, bound):
    out = tmp_path / "run"
    key_path = out / "nodes" / "solo" / "identity.pem"
    key_path.parent.mkdir(parents=True)
    identity = NodeIdentity.generate()
    identity.save(key_path)
    entry = f"solo={identity.public_key_hex}" if bound else identity.public_key_hex
    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "toy"\nbudget = 4\nrounds = 1\neval_workers = 0\n'
        f'members = ["{entry}"]\n'
        '[[node]]\nname = "solo"\noperator = "toy-random"\n'
    )
    result = cli(
        "dei-run",
        "--config",
        str(config),
        "--out",
        str(out),
        "--progress",
        "quiet",
        "--no-report",
        env=toy_env,
    )
    warnings = [line for line in result.stderr.splitlines() if "bare key" in line]
    if bound:
        assert warnings == []
    else:
        assert warnings == [
            "warning: members: 1 of 1 entries are a bare key, which may claim any name not "
            "bound to another key (deprecated): write them as name=key"
        ]
