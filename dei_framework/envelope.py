"""The champion envelope: the versioned wire format nodes use to share round champions.

Wire format (schema version 1): one UTF-8 JSON object, at most :data:`MAX_ENVELOPE_BYTES`::

    {"dei": 1, "domain": "coreware", "node": "node-0", "key": "<sender's full key, hex>",
     "round": 3, "operator": "gp", "program": "<program text>",
     "fitness": 1.25, "descriptor": {"tsp": 12.0, "mc": 340.5}, "time": 1764400000.0}

The top level never uses the keys ``service`` or ``a2a`` (AXL routes such messages elsewhere).
Claimed ``fitness`` and ``descriptor`` are informational only: receivers re-evaluate locally.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping

import attrs

from dei_framework.errors import DEIError

SCHEMA_VERSION = 1
MAX_ENVELOPE_BYTES = 256 * 1024
MAX_PROGRAM_CHARS = 64 * 1024


class EnvelopeError(DEIError):
    """A received message is not a valid champion envelope (the message says why)."""


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

    def encode(self) -> bytes:
        """Serialises to the wire format."""
        body = {
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
        data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
        if len(data) > MAX_ENVELOPE_BYTES:
            raise EnvelopeError(f"envelope of {len(data)} bytes exceeds {MAX_ENVELOPE_BYTES}")
        return data

    @classmethod
    def decode(cls, data: bytes, *, domain: str | None = None) -> ChampionEnvelope:
        """Parses and validates one message.

        Args:
            data: The raw payload.
            domain: When given, messages of any other domain are rejected.

        Raises:
            EnvelopeError: oversize, not JSON, unknown version, other domain, or a field of the
                wrong type or out of range.
        """
        if len(data) > MAX_ENVELOPE_BYTES:
            raise EnvelopeError(f"oversize message ({len(data)} bytes)")
        try:
            body = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise EnvelopeError(f"malformed message: {exc}") from None
        if not isinstance(body, dict):
            raise EnvelopeError("malformed message: not a JSON object")
        if body.get("dei") != SCHEMA_VERSION:
            raise EnvelopeError(f"unknown schema version {body.get('dei')!r}")
        if domain is not None and body.get("domain") != domain:
            raise EnvelopeError(f"message for domain {body.get('domain')!r}, expected {domain!r}")
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
        except (TypeError, ValueError) as exc:
            raise EnvelopeError(f"malformed message: {exc}") from None
        if len(envelope.program) > MAX_PROGRAM_CHARS:
            raise EnvelopeError("program too long")
        if envelope.round < 0 or not math.isfinite(envelope.fitness):
            raise EnvelopeError("round or fitness out of range")
        return envelope


def _typed(body: dict, key: str, kind: type | tuple[type, ...]):
    value = body.get(key)
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"field {key!r} missing or of the wrong type")
    return value


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("descriptor values must be numbers")
    return value


def hash_text(text: str) -> str:
    """A short content hash used to recognise the same program (e.g. in opponent pools)."""
    import hashlib

    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
