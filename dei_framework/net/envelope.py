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

The parts live in private modules and are importable from here, their one public path:
:mod:`~dei_framework.net._wire` (bounds, :class:`EnvelopeError`, framing),
:mod:`~dei_framework.net._identity` (:class:`NodeIdentity`, signatures),
:mod:`~dei_framework.net._messages` (:class:`ChampionEnvelope`, :class:`ReportEnvelope`),
:mod:`~dei_framework.net._membership` (:class:`Membership`) and
:mod:`~dei_framework.net._inbox` (:class:`InboxFilter`).
"""

from dei_framework.net._identity import NodeIdentity, canonical_bytes, verify_signature
from dei_framework.net._inbox import InboxFilter
from dei_framework.net._membership import Membership, parse_members, parse_membership
from dei_framework.net._messages import ChampionEnvelope, ReportEnvelope, check_bounds, is_report
from dei_framework.net._wire import (
    MAX_ENVELOPE_BYTES,
    MAX_NAME_CHARS,
    MAX_OPERATOR_CHARS,
    MAX_PROGRAM_CHARS,
    MAX_ROUND,
    RESERVED_KEYS,
    SCHEMA_VERSION,
    EnvelopeError,
)

__all__ = [
    "MAX_ENVELOPE_BYTES",
    "MAX_NAME_CHARS",
    "MAX_OPERATOR_CHARS",
    "MAX_PROGRAM_CHARS",
    "MAX_ROUND",
    "RESERVED_KEYS",
    "SCHEMA_VERSION",
    "ChampionEnvelope",
    "EnvelopeError",
    "InboxFilter",
    "Membership",
    "NodeIdentity",
    "ReportEnvelope",
    "canonical_bytes",
    "check_bounds",
    "is_report",
    "parse_members",
    "parse_membership",
    "verify_signature",
]
