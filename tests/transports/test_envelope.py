"""Tests of the signed champion envelope and the inbox filter."""

from __future__ import annotations

import json

import pytest

from dei_framework.envelope import (
    MAX_ENVELOPE_BYTES,
    ChampionEnvelope,
    EnvelopeError,
    InboxFilter,
    NodeIdentity,
)
from dei_framework.transport import Delivery


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
    "data",
    [b"", b"\xff\xfe", b"[1,2]", b"{", b'{"dei": 1}', b'{"dei": 2}', b"[" * 100000],
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
    results = [inbox.accept(_envelope(round_=r).encode(identity)) for r in range(30)]
    assert sum(r is not None for r in results) == 20
    assert inbox.dropped["rate_limited"] == 10
    # Another sender is not affected by the flooder.
    assert inbox.accept(_envelope(round_=1).encode(other)) is not None
    # Tokens refill over time: 3 s at 20/min is one more champion.
    now[0] += 3.0
    assert inbox.accept(_envelope(round_=100).encode(identity)) is not None
    assert inbox.accept(_envelope(round_=101).encode(identity)) is None


def test_inbox_filter_bounded_memory(identity):
    inbox = InboxFilter(max_seen=5, max_senders=3, verify=False)
    for r in range(20):
        assert inbox.accept(_envelope(round_=r, key=f"{r:064x}").encode()) is not None
    assert len(inbox._seen) == 5 and len(inbox._buckets) == 3
