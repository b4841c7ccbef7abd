"""What every message between nodes shares: the wire format's bounds, its error, its framing.

The size bounds of a message and its fields, :class:`EnvelopeError` (whose ``reason`` keys
the drop counters), and the checks of a message's top level and fields that the champion and
the report envelope both make. :mod:`dei_framework.net.envelope` re-exports the public names
and describes the format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from dei_framework.contract.errors import DEIError

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

#: An ed25519 public key as the wire carries it.
HEX64 = re.compile(r"[0-9a-f]{64}")
#: An ed25519 signature as the wire carries it.
HEX128 = re.compile(r"[0-9a-f]{128}")


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


def check_name(node: str) -> None:
    """Checks a sender name: not empty (``malformed``), at most :data:`MAX_NAME_CHARS`
    characters (``oversize``)."""
    if not node:
        raise EnvelopeError("malformed message: empty sender name")
    if len(node) > MAX_NAME_CHARS:
        raise EnvelopeError(f"sender name longer than {MAX_NAME_CHARS} characters", "oversize")


def to_wire(body: Mapping[str, Any], what: str) -> bytes:
    """A message's wire bytes (compact JSON).

    Raises:
        EnvelopeError: more than :data:`MAX_ENVELOPE_BYTES` (``oversize``).
    """
    data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    if len(data) > MAX_ENVELOPE_BYTES:
        raise EnvelopeError(f"{what} of {len(data)} bytes exceeds {MAX_ENVELOPE_BYTES}", "oversize")
    return data


def read_body(data: bytes, domain: str | None) -> dict[str, Any]:
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


def typed(body: dict, key: str, kind: type | tuple[type, ...]):
    """``body[key]`` if it is of ``kind`` (a bool is not a number), else a ``TypeError``."""
    value = body.get(key)
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"field {key!r} missing or of the wrong type")
    return value


def number(value) -> float:
    """``value`` if it is a number (not a bool), else a ``TypeError``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("descriptor values must be numbers")
    return value
