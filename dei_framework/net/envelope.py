"""The champion envelope: the signed, versioned wire format nodes use to share round champions.

Wire format (schema version 1): one UTF-8 JSON object, at most :data:`MAX_ENVELOPE_BYTES`::

    {"dei": 1, "domain": "coreware", "node": "node-0", "key": "<sender's ed25519 key, 64 hex>",
     "round": 3, "operator": "gp", "program": "<program text>",
     "fitness": 1.25, "descriptor": {"tsp": 12.0, "mc": 340.5}, "time": 1764400000.0,
     "sig": "<ed25519 signature, 128 hex>"}

``sig`` signs the *canonical form* of every other field: the same object without ``sig``,
serialised with sorted keys, ``(",", ":")`` separators and ASCII-only escapes (see
:func:`canonical_bytes` and ``docs/wire-format.md``). The top level never uses the keys
``service`` or ``a2a`` (AXL routes such messages elsewhere). Claimed ``fitness`` and
``descriptor`` are informational only: receivers re-evaluate locally.

:class:`InboxFilter` is what a node puts between its transport and its search: it decodes,
verifies, de-duplicates and rate-limits every delivery and counts what it drops, by reason.
"""

from __future__ import annotations

import collections
import json
import math
import os
import re
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from dei_framework.contract.errors import DEIError
from dei_framework.contract.records import hash_text

if TYPE_CHECKING:
    from dei_framework.contract.transport import Delivery

SCHEMA_VERSION = 1
MAX_ENVELOPE_BYTES = 256 * 1024
MAX_PROGRAM_CHARS = 64 * 1024
#: Longest sender name (``node``); names are logged with every received champion, so an
#: unbounded one would grow every receiver's ``events.jsonl``.
MAX_NAME_CHARS = 64
#: Longest operator label, bounded for the same reason.
MAX_OPERATOR_CHARS = 128
#: Largest round number a champion may claim (runs have far fewer rounds).
MAX_ROUND = 10**6
#: Keys AXL intercepts at the top level of a JSON message; an envelope must never carry them.
RESERVED_KEYS = frozenset({"service", "a2a"})

_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX128 = re.compile(r"[0-9a-f]{128}")


class EnvelopeError(DEIError):
    """A received message is not a valid champion envelope (the message says why).

    Attributes:
        reason: A short machine-readable cause, used as the key of drop counters: one of
            ``oversize``, ``malformed``, ``version``, ``domain``, ``unsigned``, ``forged``,
            ``replay``, ``rate_limited``, ``identity``, ``nonmember``, ``impersonation``,
            ``duplicate``, ``round_cap``.
    """

    def __init__(self, message: str, reason: str = "malformed") -> None:
        super().__init__(message)
        self.reason = reason


@attrs.define(frozen=True, repr=False)
class NodeIdentity:
    """A node's ed25519 signing identity.

    Attributes:
        private_key: The ed25519 private key; never leaves the process except via :meth:`to_pem`.
    """

    private_key: Ed25519PrivateKey

    @classmethod
    def generate(cls) -> NodeIdentity:
        """Makes a fresh random identity (ephemeral unless saved)."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_pem(cls, data: bytes) -> NodeIdentity:
        """Loads an unencrypted PKCS#8 PEM key (as ``openssl genpkey -algorithm ed25519`` writes).

        Raises:
            EnvelopeError: the data is not an ed25519 private key (reason ``identity``).
        """
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise EnvelopeError(f"cannot load private key: {exc}", "identity") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise EnvelopeError("private key is not ed25519", "identity")
        return cls(key)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> NodeIdentity:
        """Loads a PEM private key file."""
        return cls.from_pem(Path(path).read_bytes())

    @classmethod
    def load_or_generate(cls, path: str | os.PathLike[str]) -> NodeIdentity:
        """Loads ``path`` if it exists, else generates a key and saves it there (mode 0600)."""
        if Path(path).exists():
            return cls.load(path)
        identity = cls.generate()
        identity.save(path)
        return identity

    def to_pem(self) -> bytes:
        """The private key as unencrypted PKCS#8 PEM."""
        return self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the PEM key, readable by the owner only."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(self.to_pem())

    @property
    def public_key_hex(self) -> str:
        """The raw 32-byte public key as 64 lowercase hex characters (the envelope's ``key``)."""
        raw = self.private_key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        return raw.hex()

    def sign(self, data: bytes) -> bytes:
        """Signs ``data`` (64-byte ed25519 signature)."""
        return self.private_key.sign(data)

    def __repr__(self) -> str:
        return f"NodeIdentity(public_key_hex={self.public_key_hex!r})"


def canonical_bytes(body: Mapping[str, Any]) -> bytes:
    """The bytes a signature covers: ``body`` without ``sig``, sorted keys, compact, ASCII."""
    unsigned = {k: v for k, v in body.items() if k != "sig"}
    return json.dumps(
        unsigned, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode()


def verify_signature(body: Mapping[str, Any]) -> None:
    """Checks ``body["sig"]`` against the claimed ``body["key"]``.

    Raises:
        EnvelopeError: no signature (``unsigned``), or a bad key or signature (``forged``).
    """
    sig = body.get("sig")
    if sig is None:
        raise EnvelopeError("unsigned message", "unsigned")
    key = body.get("key")
    if not isinstance(key, str) or not _HEX64.fullmatch(key):
        raise EnvelopeError("signed message without a valid 64-hex key", "forged")
    if not isinstance(sig, str) or not _HEX128.fullmatch(sig):
        raise EnvelopeError("signature is not 128 hex characters", "forged")
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(key)).verify(
            bytes.fromhex(sig), canonical_bytes(body)
        )
    except (InvalidSignature, ValueError):
        raise EnvelopeError("signature does not match the claimed key", "forged") from None


@attrs.frozen(kw_only=True)
class ChampionEnvelope:
    """One shared champion, as published by a node at the end of a round."""

    domain: str
    node: str
    key: str
    round: int
    operator: str
    program: str
    fitness: float
    descriptor: Mapping[str, float]
    time: float = attrs.field(factory=time.time)

    @property
    def message_id(self) -> str:
        """A stable id for de-duplication: one champion per sender node, round and program."""
        return f"{self.key or self.node}:{self.round}:{hash_text(self.program)}"

    def _body(self) -> dict[str, Any]:
        return {
            "dei": SCHEMA_VERSION,
            "domain": self.domain,
            "node": self.node,
            "key": self.key,
            "round": self.round,
            "operator": self.operator,
            "program": self.program,
            "fitness": self.fitness,
            "descriptor": dict(self.descriptor),
            "time": self.time,
        }

    def encode(self, identity: NodeIdentity | None = None) -> bytes:
        """Serialises to the wire format, signed by ``identity`` when given.

        Args:
            identity: The sender's identity. ``key`` must be empty (it is then filled with the
                identity's public key) or equal to it. Without an identity the envelope is
                unsigned, which receivers that verify (the default) reject.

        Raises:
            EnvelopeError: ``key`` is not the identity's key, a field exceeds its bound (see
                :func:`check_bounds`), or the result is oversize.
        """
        # A sender checks what its receivers check, so an unsendable champion fails here.
        check_bounds(self)
        body = self._body()
        if identity is not None:
            own = identity.public_key_hex
            if body["key"] and body["key"] != own:
                raise EnvelopeError("envelope key differs from the signing identity", "identity")
            body["key"] = own
            body["sig"] = identity.sign(canonical_bytes(body)).hex()
        return _wire(body, "envelope")

    @classmethod
    def decode(
        cls, data: bytes, *, domain: str | None = None, verify: bool = True
    ) -> ChampionEnvelope:
        """Parses, validates and (by default) verifies one message.

        Args:
            data: The raw payload.
            domain: When given, messages of any other domain are rejected.
            verify: Require a valid ed25519 signature by the claimed ``key``. When ``False``,
                unsigned messages pass, but a present signature is still checked.

        Raises:
            EnvelopeError: oversize, not JSON, unknown version, other domain, unsigned (when
                verifying), forged, or a field of the wrong type or out of range. Its
                ``reason`` names the cause.
        """
        body = _body(data, domain)
        try:
            envelope = cls(
                domain=_typed(body, "domain", str),
                node=_typed(body, "node", str),
                key=_typed(body, "key", str),
                round=_typed(body, "round", int),
                operator=_typed(body, "operator", str),
                program=_typed(body, "program", str),
                fitness=float(_typed(body, "fitness", (int, float))),
                descriptor={
                    str(k): float(_number(v)) for k, v in _typed(body, "descriptor", dict).items()
                },
                time=float(_typed(body, "time", (int, float))),
            )
        except (TypeError, ValueError, OverflowError) as exc:
            raise EnvelopeError(f"malformed message: {exc}") from None
        check_bounds(envelope)
        if (
            envelope.round < 0
            or not math.isfinite(envelope.fitness)
            or not math.isfinite(envelope.time)
            or not all(math.isfinite(v) for v in envelope.descriptor.values())
        ):
            raise EnvelopeError("round, fitness, time or descriptor out of range")
        if verify or "sig" in body:
            try:
                verify_signature(body)
            except (TypeError, ValueError) as exc:  # e.g. a body that cannot be re-serialised
                raise EnvelopeError(f"malformed message: {exc}") from None
        return envelope


#: The bytes that mark a report: a champion cannot hold them unescaped (its strings escape
#: quotes, and its only other object, the descriptor, maps names to numbers).
_REPORT_MARK = b'"kind":"report"'


@attrs.frozen(kw_only=True)
class ReportEnvelope:
    """A node's report to its peers, signed and checked as a champion is: ``{"dei": 1,
    "kind": "report", "domain", "node", "key", "round", "report": {...}, "time", "sig"}``.
    ``report`` is opaque here: a round report (what a dynamic budget allocation decides from)
    or a money message (``"kind": "money"``, the money cap shared by node processes), read and
    checked by whoever it is for."""

    domain: str
    node: str
    key: str
    round: int
    report: Mapping[str, Any]
    time: float = attrs.field(factory=time.time)

    @property
    def message_id(self) -> str:
        """One report per sender, kind and round (a node's last round report says ``done``)."""
        kind = self.report.get("kind", "round")
        return f"{self.key or self.node}:report:{kind}:{self.round}:{bool(self.report.get('done'))}"

    def encode(self, identity: NodeIdentity) -> bytes:
        """Serialises to the wire format, signed by ``identity``.

        Raises:
            EnvelopeError: the name is out of bounds or the result is oversize.
        """
        _check_name(self.node)
        body = {"dei": SCHEMA_VERSION, "kind": "report", "domain": self.domain,
                "node": self.node, "key": identity.public_key_hex, "round": self.round,
                "report": dict(self.report), "time": self.time}  # fmt: skip
        body["sig"] = identity.sign(canonical_bytes(body)).hex()
        return _wire(body, "report")

    @classmethod
    def decode(cls, data: bytes, *, domain: str | None = None) -> ReportEnvelope:
        """Parses, validates and verifies one report (a report is always signed).

        Raises:
            EnvelopeError: as :meth:`ChampionEnvelope.decode`.
        """
        body = _body(data, domain)
        try:
            envelope = cls(
                domain=_typed(body, "domain", str), node=_typed(body, "node", str),
                key=_typed(body, "key", str), round=_typed(body, "round", int),
                report=_typed(body, "report", dict),
                time=float(_typed(body, "time", (int, float))),
            )  # fmt: skip
        except (TypeError, ValueError, OverflowError) as exc:
            raise EnvelopeError(f"malformed message: {exc}") from None
        _check_name(envelope.node)
        if not 0 <= envelope.round <= MAX_ROUND or not math.isfinite(envelope.time):
            raise EnvelopeError("round or time out of range", "oversize")
        try:
            verify_signature(body)
        except (TypeError, ValueError) as exc:
            raise EnvelopeError(f"malformed message: {exc}") from None
        return envelope


def is_report(payload: bytes) -> bool:
    """Whether a message is a :class:`ReportEnvelope` (not a champion)."""
    return _REPORT_MARK in payload


def _check_name(node: str) -> None:
    if not node:
        raise EnvelopeError("malformed message: empty sender name")
    if len(node) > MAX_NAME_CHARS:
        raise EnvelopeError(f"sender name longer than {MAX_NAME_CHARS} characters", "oversize")


def _wire(body: Mapping[str, Any], what: str) -> bytes:
    """A message's wire bytes (compact JSON).

    Raises:
        EnvelopeError: more than :data:`MAX_ENVELOPE_BYTES` (``oversize``).
    """
    data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    if len(data) > MAX_ENVELOPE_BYTES:
        raise EnvelopeError(f"{what} of {len(data)} bytes exceeds {MAX_ENVELOPE_BYTES}",
                            "oversize")  # fmt: skip
    return data


def _body(data: bytes, domain: str | None) -> dict[str, Any]:
    """The checked top level of a message: size, JSON object, version, reserved keys, domain."""
    if len(data) > MAX_ENVELOPE_BYTES:
        raise EnvelopeError(f"oversize message ({len(data)} bytes)", "oversize")
    try:
        body = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise EnvelopeError(f"malformed message: {exc}") from None
    if not isinstance(body, dict):
        raise EnvelopeError("malformed message: not a JSON object")
    if body.get("dei") != SCHEMA_VERSION:
        raise EnvelopeError(f"unknown schema version {body.get('dei')!r}", "version")
    if RESERVED_KEYS & body.keys():
        raise EnvelopeError("malformed message: reserved top-level key")
    if domain is not None and body.get("domain") != domain:
        raise EnvelopeError(
            f"message for domain {body.get('domain')!r}, expected {domain!r}", "domain"
        )
    return body


def check_bounds(envelope: ChampionEnvelope) -> None:
    """Checks the size bounds of an envelope's fields (what receivers log must stay small).

    Raises:
        EnvelopeError: reason ``oversize`` for a name longer than :data:`MAX_NAME_CHARS`, an
            operator label longer than :data:`MAX_OPERATOR_CHARS`, a program longer than
            :data:`MAX_PROGRAM_CHARS` or a round above :data:`MAX_ROUND`; ``malformed`` for
            an empty name.
    """
    _check_name(envelope.node)
    if len(envelope.operator) > MAX_OPERATOR_CHARS:
        raise EnvelopeError(
            f"operator label longer than {MAX_OPERATOR_CHARS} characters", "oversize"
        )
    if len(envelope.program) > MAX_PROGRAM_CHARS:
        raise EnvelopeError("program too long", "oversize")
    if envelope.round > MAX_ROUND:
        raise EnvelopeError(f"round {envelope.round} above {MAX_ROUND}", "oversize")


@attrs.define
class _Bucket:
    tokens: float
    stamp: float


#: A name a membership entry may bind: what ``--nodes``/``[[node]]`` names look like, bounded,
#: and free of the separators of the string form (whitespace, ``,``) and of ``=``.
_MEMBER_NAME = re.compile(rf"[^\s,=]{{1,{MAX_NAME_CHARS}}}")


@attrs.frozen
class Membership:
    """A run's membership: the keys allowed to sign champions, and the names bound to them.

    Behaves as the set of its keys (``key in membership``, iteration, ``len``), so code that
    only asks "is this key a member" does not care about names.

    Attributes:
        keys: The members' ed25519 public keys (64 lowercase hex).
        names: ``{key: name}`` for the entries written ``name=key``: such a key may sign only
            champions that name it, and no other key may claim that name. Keys listed alone
            are bound to no name (they may claim any name not bound to another key).
    """

    keys: frozenset[str]
    names: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def bound_names(self) -> frozenset[str]:
        """The names some key is bound to."""
        return frozenset(self.names.values())

    def entries(self) -> tuple[str, ...]:
        """The normalised entries, sorted: ``name=key`` for bound keys, ``key`` for others."""
        return tuple(
            sorted(f"{self.names[key]}={key}" if key in self.names else key for key in self.keys)
        )

    def __contains__(self, key: object) -> bool:
        return key in self.keys

    def __iter__(self):
        return iter(sorted(self.keys))

    def __len__(self) -> int:
        return len(self.keys)


def parse_membership(value: Any) -> Membership | None:
    """Parses a membership list: ``None``/empty = open run, else entries ``key`` or ``name=key``.

    Args:
        value: A :class:`Membership`, a sequence of entries, or one string of entries
            separated by commas or whitespace. A key is 64 hex characters (case ignored); a
            name is 1 to :data:`MAX_NAME_CHARS` characters without whitespace, ``,`` or ``=``.

    Raises:
        EnvelopeError: reason ``identity``: an entry is not a key or ``name=key``, or one name
            is bound to two keys, or one key to two names.
    """
    if value is None or isinstance(value, Membership):
        return value
    if isinstance(value, str):
        value = [v for v in re.split(r"[\s,]+", value) if v]
    keys: set[str] = set()
    names: dict[str, str] = {}
    for item in value:
        text = str(item).strip()
        name, sep, key = text.rpartition("=")
        key = key.strip().lower()
        name = name.strip()
        if not _HEX64.fullmatch(key):
            raise EnvelopeError(
                f"membership entry {item!r} is not a 64-hex ed25519 public key (or name=key)",
                "identity",
            )
        if sep and not _MEMBER_NAME.fullmatch(name):
            raise EnvelopeError(
                f"membership entry {item!r}: the name must be 1 to {MAX_NAME_CHARS} characters "
                "without whitespace, ',' or '='",
                "identity",
            )
        if sep:
            if names.get(key, name) != name:
                raise EnvelopeError(
                    f"membership: key {key} is bound to two names, {names[key]!r} and {name!r}",
                    "identity",
                )
            names[key] = name
        keys.add(key)
    owners: dict[str, str] = {}
    for key, name in names.items():
        # One name, one key: otherwise either key could speak for the name.
        if owners.setdefault(name, key) != key:
            raise EnvelopeError(f"membership: name {name!r} is bound to two keys", "identity")
    return Membership(frozenset(keys), names) if keys else None


def parse_members(value: Any) -> frozenset[str] | None:
    """The member keys of a membership list (``None``/empty = open); see :func:`parse_membership`.

    Raises:
        EnvelopeError: an entry is not a 64-hex ed25519 public key or ``name=key``
            (reason ``identity``).
    """
    membership = parse_membership(value)
    return None if membership is None else membership.keys


@attrs.define
class InboxFilter:
    """Admission control between a transport and the search: decode, verify, dedup, rate-limit.

    Checks, in order (the first that fails names the drop reason): size and field bounds
    (``oversize``), JSON, schema version, domain, fields, signature by the claimed key
    (``forged``/``unsigned``), run membership of that key (``nonmember``), the sender name
    against the key (``impersonation``: a claim of the receiver's own name by any other key,
    of a name the membership binds to another key, or by a bound key of any other name),
    replay of the same message (``replay``), a program already taken in for the same round
    from anyone (``duplicate``), the per-sender token bucket (``rate_limited``) and the
    per-round cap (``round_cap``). Nothing from a peer reaches the search before all of them
    pass. Memory is bounded: at most ``max_seen`` message ids, ``max_seen`` program hashes
    and ``max_senders`` token buckets are kept (least recently used ones are forgotten first);
    non-members and impostors never get a bucket.

    Attributes:
        domain: Reject envelopes of other domains (``None`` accepts any).
        verify: Require valid signatures.
        rate_per_minute: Sustained champions accepted per sender key per minute.
        burst: Bucket capacity (defaults to ``rate_per_minute``).
        max_seen: How many recent message ids (and program hashes) are remembered.
        max_senders: How many sender buckets are tracked.
        members: The run's membership (keys allowed to sign champions, and the names bound
            to them; see :func:`parse_membership`), or ``None`` for an open run (any valid
            signature is accepted).
        own_name: The receiver's node name: no other key may claim it, open run or not.
        own_key: The receiver's public key: its own champions brought back by gossip keep
            its name and are returned (the node skips them), never counted as impostors.
        max_per_round: Envelopes accepted between two :meth:`start_round` calls (``None``:
            no cap). Bounds how many received programs one round evaluates.
        clock: Monotonic seconds; injectable for tests.
        dropped: Drop counts by :attr:`EnvelopeError.reason`.
        accepted: How many envelopes passed.
    """

    domain: str | None = None
    verify: bool = True
    rate_per_minute: float = 20.0
    burst: float | None = None
    max_seen: int = 10_000
    max_senders: int = 1_024
    members: Membership | None = attrs.field(default=None, converter=parse_membership)
    own_name: str | None = None
    own_key: str | None = None
    max_per_round: int | None = None
    clock: Callable[[], float] = time.monotonic
    dropped: Counter[str] = attrs.field(factory=collections.Counter)
    accepted: int = 0
    _seen: OrderedDict[str, None] = attrs.field(factory=OrderedDict, init=False)
    _taken: OrderedDict[str, None] = attrs.field(factory=OrderedDict, init=False)
    _buckets: OrderedDict[str, _Bucket] = attrs.field(factory=OrderedDict, init=False)
    _round_accepted: int = attrs.field(default=0, init=False)

    def start_round(self) -> None:
        """Starts a new admission round (resets the :attr:`max_per_round` count)."""
        self._round_accepted = 0

    def accept(self, delivery: Delivery | bytes) -> ChampionEnvelope | None:
        """Returns the envelope if it should be used, else ``None`` (and counts the reason)."""
        payload = delivery if isinstance(delivery, bytes | bytearray) else delivery.payload
        try:
            envelope = ChampionEnvelope.decode(
                bytes(payload), domain=self.domain, verify=self.verify
            )
        except EnvelopeError as exc:
            self.dropped[exc.reason] += 1
            return None
        if not self._may_send(envelope):
            return None
        mid = envelope.message_id
        if mid in self._seen:
            self._seen.move_to_end(mid)
            self.dropped["replay"] += 1
            return None
        # The same program is fought once per round, whoever signs or relays it: a re-signed
        # copy adds nothing but another evaluation and a false transfer. A later round may
        # take it in again, since honest nodes re-publish a lasting elite as each round's
        # migrant (and a member may publish any program anyway, within its rate).
        own = self.own_key is not None and envelope.key == self.own_key
        program = f"{envelope.round}:{hash_text(envelope.program)}"
        if not own and program in self._taken:
            self._taken.move_to_end(program)
            self.dropped["duplicate"] += 1
            return None
        bucket = self._bucket(envelope.key or envelope.node)
        if bucket.tokens < 1.0:
            self.dropped["rate_limited"] += 1
            return None
        if self.max_per_round is not None and self._round_accepted >= self.max_per_round:
            self.dropped["round_cap"] += 1
            return None
        bucket.tokens -= 1.0
        # Only accepted ids are remembered: a copy dropped for rate may be accepted later.
        _remember(self._seen, mid, self.max_seen)
        if not own:
            _remember(self._taken, program, self.max_seen)
        self.accepted += 1
        self._round_accepted += 1
        return envelope

    def accept_report(self, payload: bytes) -> ReportEnvelope | None:
        """A peer's report if it passes the checks a champion passes bar the champion-only
        ones (program dedup, rate and round caps: one report per sender and round is kept at
        most), else ``None`` (and the reason counted)."""
        try:
            envelope = ReportEnvelope.decode(bytes(payload), domain=self.domain)
        except EnvelopeError as exc:
            self.dropped[exc.reason] += 1
            return None
        if not self._may_send(envelope):
            return None
        if envelope.message_id in self._seen:
            return None  # nodes waiting at a round boundary re-send their last report
        _remember(self._seen, envelope.message_id, self.max_seen)
        return envelope

    def _may_send(self, envelope: ChampionEnvelope | ReportEnvelope) -> bool:
        """Whether the signing key is a member and may use the sender name (the drop is
        counted otherwise)."""
        if self.members is not None and envelope.key not in self.members:
            self.dropped["nonmember"] += 1
            return False
        if self._impersonates(envelope):
            self.dropped["impersonation"] += 1
            return False
        return True

    def _impersonates(self, envelope: ChampionEnvelope | ReportEnvelope) -> bool:
        """Whether the envelope's sender name is not one its signing key may use."""
        if self.own_key is not None and envelope.key == self.own_key:
            # Our own key naming another node: someone else holds our key.
            return self.own_name is not None and envelope.node != self.own_name
        if self.own_name is not None and envelope.node == self.own_name:
            return True
        if self.members is None:
            return False
        bound = self.members.names.get(envelope.key)
        if bound is not None:
            return envelope.node != bound
        # A key listed without a name keeps today's freedom, except over names bound to others.
        return envelope.node in self.members.bound_names

    def _bucket(self, sender: str) -> _Bucket:
        """The sender's token bucket, refilled up to now."""
        capacity = self.burst if self.burst is not None else self.rate_per_minute
        now = self.clock()
        bucket = self._buckets.get(sender)
        if bucket is None:
            bucket = _Bucket(tokens=capacity, stamp=now)
            self._buckets[sender] = bucket
            if len(self._buckets) > self.max_senders:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(sender)
            elapsed = max(0.0, now - bucket.stamp)
            bucket.tokens = min(capacity, bucket.tokens + elapsed * self.rate_per_minute / 60.0)
            bucket.stamp = now
        return bucket


def _remember(store: OrderedDict[str, None], item: str, limit: int) -> None:
    """Adds ``item`` to a bounded LRU set, forgetting the oldest beyond ``limit``."""
    store[item] = None
    store.move_to_end(item)
    if len(store) > limit:
        store.popitem(last=False)


def _typed(body: dict, key: str, kind: type | tuple[type, ...]):
    value = body.get(key)
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"field {key!r} missing or of the wrong type")
    return value


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("descriptor values must be numbers")
    return value

