"""The gossip framing: how GossipSub control and data messages travel over a link.

One frame is one compact UTF-8 JSON object (never with top-level ``service`` or ``a2a`` keys,
which AXL would route away from ``/recv``)::

    {"g": 1, "f": "<sender's full peer id>",
     "hello": 1,                  # optional: "I (re)started; tell me what you have"
     "sub": 1,                    # optional: "I am on the topic" (the reply to hello)
     "graft": 1,                  # optional: add me to your mesh
     "prune": 60.0,               # optional: I removed you from my mesh; back off this long (s)
     "ihave": ["<id>", ...],      # optional: message ids I hold
     "iwant": ["<id>", ...],      # optional: send me these
     "m": [{"o": "<origin peer id>", "h": 1, "p": "<payload, base64>"}, ...]}

A message id is :func:`message_id` of the payload (content-addressed, so a forwarder cannot
make one message look like two). ``h`` counts link hops from the origin (1 = received straight
from the publisher); it is informational (benchmarks) and capped by :data:`MAX_HOPS`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from typing import Any

import attrs

FRAME_VERSION = 1
#: Hard cap on one frame; larger frames are refused on receipt and split on sending.
MAX_FRAME_BYTES = 4 * 1024 * 1024
MAX_HOPS = 255
_ID = re.compile(r"[0-9a-f]{32}")


class FrameError(ValueError):
    """A received frame is not valid (the router counts it and ignores it)."""


def message_id(payload: bytes) -> str:
    """The content id of a payload: 16-byte BLAKE2b, 32 hex characters."""
    return hashlib.blake2b(payload, digest_size=16).hexdigest()


@attrs.frozen
class DataMessage:
    """One gossiped payload inside a frame."""

    origin: str
    hops: int
    payload: bytes

    @property
    def id(self) -> str:
        """The payload's content id."""
        return message_id(self.payload)


@attrs.define
class Frame:
    """A decoded frame; empty fields mean "not present"."""

    sender: str
    hello: bool = False
    sub: bool = False
    graft: bool = False
    prune: float | None = None
    ihave: list[str] = attrs.field(factory=list)
    iwant: list[str] = attrs.field(factory=list)
    messages: list[DataMessage] = attrs.field(factory=list)

    def encode(self) -> bytes:
        """Serialises the frame (compact JSON)."""
        body: dict[str, Any] = {"g": FRAME_VERSION, "f": self.sender}
        if self.hello:
            body["hello"] = 1
        if self.sub:
            body["sub"] = 1
        if self.graft:
            body["graft"] = 1
        if self.prune is not None:
            body["prune"] = round(self.prune, 3)
        if self.ihave:
            body["ihave"] = self.ihave
        if self.iwant:
            body["iwant"] = self.iwant
        if self.messages:
            body["m"] = [
                {"o": m.origin, "h": m.hops, "p": base64.b64encode(m.payload).decode()}
                for m in self.messages
            ]
        return json.dumps(body, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes, *, max_ids: int = 5000) -> Frame:
        """Parses and validates a frame.

        Args:
            data: The raw bytes from the link.
            max_ids: IHAVE/IWANT lists longer than this are truncated (a bad peer cannot make
                us do unbounded work).

        Raises:
            FrameError: not a frame of this version, or a field of the wrong type.
        """
        if len(data) > MAX_FRAME_BYTES:
            raise FrameError("oversize frame")
        try:
            body = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise FrameError(f"not JSON: {exc}") from None
        if not isinstance(body, dict) or body.get("g") != FRAME_VERSION:
            raise FrameError("not a gossip frame of version 1")
        sender = body.get("f")
        if not isinstance(sender, str) or not 0 < len(sender) <= 256:
            raise FrameError("bad sender")
        prune = body.get("prune")
        if prune is not None and (
            isinstance(prune, bool) or not isinstance(prune, int | float) or not 0 <= prune <= 3600
        ):
            raise FrameError("bad prune backoff")
        frame = cls(
            sender=sender,
            hello=bool(body.get("hello")),
            sub=bool(body.get("sub")),
            graft=bool(body.get("graft")),
            prune=None if prune is None else float(prune),
            ihave=_ids(body.get("ihave"), max_ids),
            iwant=_ids(body.get("iwant"), max_ids),
        )
        raw_messages = body.get("m", [])
        if not isinstance(raw_messages, list):
            raise FrameError("bad message list")
        for raw in raw_messages:
            if not isinstance(raw, dict):
                raise FrameError("bad message")
            origin, hops, payload = raw.get("o"), raw.get("h"), raw.get("p")
            if (
                not isinstance(origin, str)
                or len(origin) > 256
                or isinstance(hops, bool)
                or not isinstance(hops, int)
                or not isinstance(payload, str)
            ):
                raise FrameError("bad message fields")
            try:
                decoded = base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError):
                raise FrameError("bad payload encoding") from None
            frame.messages.append(DataMessage(origin, max(0, min(hops, MAX_HOPS)), decoded))
        return frame


def _ids(value: Any, cap: int) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise FrameError("id list is not a list")
    return [v for v in value[:cap] if isinstance(v, str) and _ID.fullmatch(v)]
