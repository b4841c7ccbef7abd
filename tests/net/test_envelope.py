"""Tests of the signed champion envelope and the inbox filter."""

from __future__ import annotations

import json

import pytest

from dei_framework.contract.transport import Delivery
from dei_framework.net.envelope import (
    MAX_ENVELOPE_BYTES,
    ChampionEnvelope,
    EnvelopeError,
    InboxFilter,
    NodeIdentity,
)


def _envelope(round_: int = 1, program: str = "MOV 0, 1", **kw) -> ChampionEnvelope:
    fields = dict(
        domain="coreware",
        node="node-0",
        key="",
        round=round_,
        operator="gp",
        program=program,
        fitness=1.5,
        descriptor={"tsp": 12.0, "mc": 340.5},
        time=1764400000.0,
    )
    fields.update(kw)
    return ChampionEnvelope(**fields)


@pytest.fixture(scope="module")
def identity() -> NodeIdentity:
    return NodeIdentity.generate()


def test_round_trip_signed(identity):
    data = _envelope().encode(identity)
    body = json.loads(data)
    assert body["dei"] == 1 and len(body["sig"]) == 128 and body["key"] == identity.public_key_hex
    decoded = ChampionEnvelope.decode(data, domain="coreware", verify=True)
    assert decoded.key == identity.public_key_hex
    assert decoded.program == "MOV 0, 1" and decoded.descriptor == {"tsp": 12.0, "mc": 340.5}
    assert decoded.message_id == _envelope(key=identity.public_key_hex).message_id


def test_identity_pem_round_trip(tmp_path, identity):
    path = tmp_path / "key.pem"
    identity.save(path)
    assert (path.stat().st_mode & 0o777) == 0o600
    assert NodeIdentity.load(path).public_key_hex == identity.public_key_hex
    assert NodeIdentity.load_or_generate(path).public_key_hex == identity.public_key_hex
    fresh = NodeIdentity.load_or_generate(tmp_path / "new.pem")
    assert (tmp_path / "new.pem").exists() and fresh.public_key_hex != identity.public_key_hex
    with pytest.raises(EnvelopeError):
        NodeIdentity.from_pem(b"not a key")


def test_key_mismatch_refused(identity):
    with pytest.raises(EnvelopeError):
        _envelope(key="ab" * 32).encode(identity)


def test_unsigned_rejected_when_verifying():
    data = _envelope(key="ab" * 32).encode()
    with pytest.raises(EnvelopeError) as err:
        ChampionEnvelope.decode(data, verify=True)
    assert err.value.reason == "unsigned"
    assert ChampionEnvelope.decode(data, verify=False).key == "ab" * 32


@pytest.mark.parametrize(
    "tamper",
    [
        lambda b: b.update(fitness=99.0),
        lambda b: b.update(program="DAT 0, 0"),
        lambda b: b.update(key=NodeIdentity.generate().public_key_hex),
        lambda b: b.update(sig="00" * 64),
        lambda b: b.update(sig="zz"),
        lambda b: b.update(key="short"),
    ],
)
def test_forgery_detected(identity, tamper):
    body = json.loads(_envelope().encode(identity))
    tamper(body)
    with pytest.raises(EnvelopeError) as err:
        ChampionEnvelope.decode(json.dumps(body).encode(), verify=True)
    assert err.value.reason == "forged"
    # A present but bad signature is rejected even when verification is not required.
    with pytest.raises(EnvelopeError):
        ChampionEnvelope.decode(json.dumps(body).encode(), verify=False)


def test_signature_survives_reserialisation(identity):
    body = json.loads(_envelope(program="ünïcode ✓").encode(identity))
    reordered = dict(reversed(list(body.items())))
    data = json.dumps(reordered, indent=2, ensure_ascii=False).encode()
    assert ChampionEnvelope.decode(data).program == "ünïcode ✓"


def test_oversize(identity):
    with pytest.raises(EnvelopeError) as err:
        ChampionEnvelope.decode(b" " * (MAX_ENVELOPE_BYTES + 1))
    assert err.value.reason == "oversize"
    with pytest.raises(EnvelopeError) as err:
        _envelope(program="x" * (MAX_ENVELOPE_BYTES + 10)).encode(identity)
    assert err.value.reason == "oversize"


@pytest.mark.parametrize(
    "data", [b"", b"\xff\xfe", b"[1,2]", b"{", b'{"dei": 1}', b'{"dei": 2}', b"[" * 100000]
)
def test_malformed(data):
    with pytest.raises(EnvelopeError):
        ChampionEnvelope.decode(data)


def test_wrong_types_and_reserved(identity):
    body = json.loads(_envelope().encode(identity))
    for field, value in [("round", "3"), ("round", True), ("fitness", None), ("round", -1)]:
        bad = dict(body, **{field: value})
        with pytest.raises(EnvelopeError) as err:
            ChampionEnvelope.decode(json.dumps(bad).encode())
        assert err.value.reason == "malformed"
    with pytest.raises(EnvelopeError):
        ChampionEnvelope.decode(json.dumps(dict(body, service="x")).encode())


def test_wrong_domain(identity):
    data = _envelope().encode(identity)
    with pytest.raises(EnvelopeError) as err:
        ChampionEnvelope.decode(data, domain="other")
    assert err.value.reason == "domain"


def test_inbox_filter_replay_and_reasons(identity):
    inbox = InboxFilter(domain="coreware")
    data = _envelope().encode(identity)
    assert inbox.accept(Delivery(data, "peer")) is not None
    assert inbox.accept(Delivery(data, "peer")) is None
    assert inbox.accept(data) is None
    assert inbox.accept(Delivery(b"junk")) is None
    assert inbox.accept(_envelope(round_=9).encode()) is None  # unsigned
    assert inbox.accept(_envelope(round_=9, domain="x").encode(identity)) is None
    assert inbox.dropped == {"replay": 2, "malformed": 1, "unsigned": 1, "domain": 1}
    assert inbox.accepted == 1


def test_inbox_filter_rate_limit(identity):
    now = [0.0]
    inbox = InboxFilter(rate_per_minute=20, clock=lambda: now[0])
    other = NodeIdentity.generate()
    results = [
        inbox.accept(_envelope(round_=r, program=f"DAT {r}").encode(identity)) for r in range(30)
    ]
    assert sum(r is not None for r in results) == 20
    assert inbox.dropped["rate_limited"] == 10
    # Another sender is not affected by the flooder.
    assert inbox.accept(_envelope(round_=1).encode(other)) is not None
    # Tokens refill over time: 3 s at 20/min is one more champion.
    now[0] += 3.0
    assert inbox.accept(_envelope(round_=100, program="DAT 100").encode(identity)) is not None
    assert inbox.accept(_envelope(round_=101, program="DAT 101").encode(identity)) is None


def test_inbox_filter_bounded_memory(identity):
    inbox = InboxFilter(max_seen=5, max_senders=3, verify=False)
    for r in range(20):
        envelope = _envelope(round_=r, key=f"{r:064x}", program=f"DAT {r}")
        assert inbox.accept(envelope.encode()) is not None
    assert len(inbox._seen) == 5 and len(inbox._taken) == 5 and len(inbox._buckets) == 3


def test_membership_drops_outsiders_before_replay_and_buckets(identity):
    outsider = NodeIdentity.generate()
    inbox = InboxFilter(domain="coreware", members=[identity.public_key_hex.upper()])
    assert inbox.accept(_envelope(program="MOV 0, 2").encode(identity)) is not None
    # 300 fresh keys, each validly signed: none admitted, none gets a token bucket.
    for index in range(300):
        fresh = outsider if index == 0 else NodeIdentity.generate()
        assert inbox.accept(_envelope(program=f"DAT {index}").encode(fresh)) is None
    assert inbox.dropped == {"nonmember": 300}
    assert inbox.accepted == 1
    assert len(inbox._buckets) == 1


def test_per_round_cap_bounds_admissions(identity):
    inbox = InboxFilter(domain="coreware", max_per_round=3, rate_per_minute=1000)
    keys = [NodeIdentity.generate() for _ in range(5)]
    got = [inbox.accept(_envelope(program=f"DAT {i}").encode(k)) for i, k in enumerate(keys)]
    assert sum(e is not None for e in got) == 3
    assert inbox.dropped["round_cap"] == 2
    inbox.start_round()
    # A capped champion was not remembered: the next round may still admit it.
    assert inbox.accept(_envelope(program="DAT 4").encode(keys[4])) is not None


def test_bad_membership_entries_are_config_errors():
    from dei_framework.contract.errors import ConfigError
    from dei_framework.runtime.config.record import NodeConfig
    from dei_framework.runtime.config.run_config import RunConfig

    with pytest.raises(EnvelopeError, match="not a 64-hex"):
        InboxFilter(members=["abc"])
    with pytest.raises(ConfigError, match="members: membership entry 'zz'"):
        RunConfig(
            domain="toy", nodes=[NodeConfig(name="a", operator="x")], budget=2, members=["zz"]
        )
    run = RunConfig(
        domain="toy",
        nodes=[NodeConfig(name="a", operator="x")],
        budget=2,
        members="B" * 64 + ", " + "a" * 64,
    )
    assert run.members == ("a" * 64, "b" * 64)
    assert RunConfig.from_json(run.to_json()).members == run.members


def test_a_node_outside_the_membership_refuses_to_start(cli, toy_env, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "toy"\nbudget = 4\nrounds = 1\neval_workers = 0\n'
        f'members = ["other={"a" * 64}"]\n'
        '[[node]]\nname = "solo"\noperator = "toy-random"\n'
    )
    result = cli(
        "dei-run",
        "--config",
        str(config),
        "--out",
        str(tmp_path / "run"),
        "--progress",
        "quiet",
        env=toy_env,
        check=False,
    )
    assert result.returncode == 1
    assert "node solo's key" in result.stderr and "not in the run's members" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
