"""The two signed messages nodes exchange: a round's champion and a node's report.

:class:`ChampionEnvelope` (a shared champion) and :class:`ReportEnvelope` (a round report or a
money message), each encoded to and decoded from the wire format that
:mod:`dei_framework.net.envelope` describes and re-exports them from.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import attrs

from dei_framework.contract.records import hash_text
from dei_framework.net._identity import NodeIdentity, canonical_bytes, verify_signature
from dei_framework.net._wire import (
    MAX_OPERATOR_CHARS,
    MAX_PROGRAM_CHARS,
    MAX_ROUND,
    SCHEMA_VERSION,
    EnvelopeError,
    check_name,
    number,
    read_body,
    to_wire,
    typed,
)


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
        return to_wire(body, "envelope")

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
        body = read_body(data, domain)
        try:
            envelope = cls(
                domain=typed(body, "domain", str),
                node=typed(body, "node", str),
                key=typed(body, "key", str),
                round=typed(body, "round", int),
                operator=typed(body, "operator", str),
                program=typed(body, "program", str),
                fitness=float(typed(body, "fitness", (int, float))),
                descriptor={
                    str(k): float(number(v)) for k, v in typed(body, "descriptor", dict).items()
                },
                time=float(typed(body, "time", (int, float))),
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
        check_name(self.node)
        body = {
            "dei": SCHEMA_VERSION,
            "kind": "report",
            "domain": self.domain,
            "node": self.node,
            "key": identity.public_key_hex,
            "round": self.round,
            "report": dict(self.report),
            "time": self.time,
        }
        body["sig"] = identity.sign(canonical_bytes(body)).hex()
        return to_wire(body, "report")

    @classmethod
    def decode(cls, data: bytes, *, domain: str | None = None) -> ReportEnvelope:
        """Parses, validates and verifies one report (a report is always signed).

        Raises:
            EnvelopeError: as :meth:`ChampionEnvelope.decode`.
        """
        body = read_body(data, domain)
        try:
            envelope = cls(
                domain=typed(body, "domain", str),
                node=typed(body, "node", str),
                key=typed(body, "key", str),
                round=typed(body, "round", int),
                report=typed(body, "report", dict),
                time=float(typed(body, "time", (int, float))),
            )
        except (TypeError, ValueError, OverflowError) as exc:
            raise EnvelopeError(f"malformed message: {exc}") from None
        check_name(envelope.node)
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


def check_bounds(envelope: ChampionEnvelope) -> None:
    """Checks the size bounds of an envelope's fields (what receivers log must stay small).

    Raises:
        EnvelopeError: reason ``oversize`` for a name longer than :data:`MAX_NAME_CHARS`, an
            operator label longer than :data:`MAX_OPERATOR_CHARS`, a program longer than
            :data:`MAX_PROGRAM_CHARS` or a round above :data:`MAX_ROUND`; ``malformed`` for
            an empty name.
    """
    check_name(envelope.node)
    if len(envelope.operator) > MAX_OPERATOR_CHARS:
        raise EnvelopeError(
            f"operator label longer than {MAX_OPERATOR_CHARS} characters", "oversize"
        )
    if len(envelope.program) > MAX_PROGRAM_CHARS:
        raise EnvelopeError("program too long", "oversize")
    if envelope.round > MAX_ROUND:
        raise EnvelopeError(f"round {envelope.round} above {MAX_ROUND}", "oversize")
