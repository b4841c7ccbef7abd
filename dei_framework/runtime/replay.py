"""Replaying a recorded run: recorded calls served by request key, checked against the record.

Every call in ``calls.jsonl`` carries its request key (``node/rROUND/sSLOT``) and the SHA-256 of
its chat messages (a batching offline operator's calls carry the messages alone: the hash is
computed from them when read, :func:`recorded_digest`). A replayed (or resumed) run asks
:class:`Recording` for each call it is about to make; the record is served only when the key
is there *and* the messages hash the same, so a changed prompt, plan or domain can never
re-score a reply to a different question.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from dei_framework.contract.errors import OperatorError, ReplayMismatch
from dei_framework.contract.operators import Message, Operator, OperatorReply, OperatorRequest

#: The canonical JSON of :func:`messages_digest` (one encoder for every call of a run).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def messages_digest(messages: Sequence[Message]) -> str:
    """``sha256:<hex>`` of the messages' canonical JSON (key order and spacing do not matter)."""
    canonical = _CANONICAL.encode([dict(message) for message in messages])
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def recorded_digest(record: Mapping[str, Any]) -> str | None:
    """The messages hash of a recorded call (computed for records older than the field)."""
    digest = record.get("messages_sha256")
    if digest is None and record.get("messages") is not None:
        digest = messages_digest(record["messages"])
    return digest


@attrs.frozen(kw_only=True)
class RecordedCall:
    """A call found in a run's record, served instead of asking the operator again.

    Attributes:
        record: The ``calls.jsonl`` line.
        logged: The call is already in this run's log and budget (a resumed run's calls
            that completed before its checkpoint); otherwise it is logged and charged anew.
    """

    record: Mapping[str, Any]
    logged: bool = False


class Recording:
    """The recorded calls of one node, served by request key.

    Args:
        calls: Recorded calls by request key; each value has the ``calls.jsonl`` line as its
            ``record`` (:class:`RecordedCall`).
        on_mismatch: ``"stop"`` raises :class:`~dei_framework.contract.errors.ReplayMismatch` at the
            first call whose key is missing or whose messages differ; ``"ask"`` lets the
            caller ask the operator instead (``--reask-mismatched``, and resume).
        source: Where the record came from, for messages.
    """

    def __init__(
        self, calls: Mapping[str, Any], *, on_mismatch: str = "stop", source: str = "the record"
    ) -> None:
        if on_mismatch not in ("stop", "ask"):
            raise ValueError(f"on_mismatch must be 'stop' or 'ask', not {on_mismatch!r}")
        self._calls = dict(calls)
        self.on_mismatch = on_mismatch
        self.source = source
        #: Keys of the calls that did not match and were asked again.
        self.reasked: list[str] = []

    def __len__(self) -> int:
        return len(self._calls)

    def charged(self, key: str) -> bool:
        """Whether call ``key`` is recorded as completed and already in the run's budget (a
        resumed run's call made before its checkpoint): serving it spends nothing more."""
        recorded = self._calls.get(key)
        return (
            recorded is not None
            and bool(getattr(recorded, "logged", False))
            and recorded.record.get("failed") is None
        )

    def take(self, key: str, messages: Sequence[Message]) -> Any | None:
        """The recorded call ``key`` if its messages match, else ``None`` (ask the operator).

        Raises:
            ReplayMismatch: the call is not in the record or its messages differ, and
                ``on_mismatch`` is ``"stop"``.
        """
        recorded = self._calls.pop(key, None)
        digest = messages_digest(messages) if recorded is not None else ""
        if recorded is None:
            problem = "is not in the record (the plan or the budget changed)"
        else:
            expected = recorded_digest(recorded.record)
            if expected == digest:
                return recorded
            problem = (
                f"has different messages: {digest[:19]}… now, {str(expected)[:19]}… "
                "recorded (the prompts, the parents or the domain changed)"
            )
        if self.on_mismatch == "ask":
            if recorded is not None:
                self.reasked.append(key)
            return None
        raise ReplayMismatch(
            f"replay: call {key} {problem}; stopping at this first mismatch with "
            f"{self.source} (use --reask-mismatched to ask the operator for mismatched calls)"
        )


def replayed_reply(record: Mapping[str, Any]) -> OperatorReply | None:
    """The reply a recorded call got (``None`` for a recorded failure)."""
    if record.get("failed") is not None:
        return None
    return OperatorReply(**record["reply"])


def recorded_usage(record: Mapping[str, Any]) -> dict[str, Any]:
    """The usage of a recorded call, as
    :meth:`~dei_framework.runtime.budget.call_meter.CallMeter.record` takes it."""
    usage = record.get("usage")
    if usage is None:  # records older than the field: the reply held the call's usage
        reply = record.get("reply") or {}
        usage = {
            "attempts": reply.get("attempts", 1),
            "prompt_tokens": reply.get("prompt_tokens"),
            "completion_tokens": reply.get("completion_tokens"),
            "cost_usd": reply.get("cost_usd", 0.0),
        }
    return {
        key: usage.get(key)
        for key in ("attempts", "prompt_tokens", "completion_tokens", "cost_usd")
    }


class RecordedOperator(Operator):
    """Stands in for a node's operator during ``--replay``.

    The search loop serves recorded replies itself; this operator is only asked when the record
    has no matching call and no live operator may be asked, which means the run diverged.
    """

    offline = True

    def __init__(self, *, label: str) -> None:
        self.label = label
        self.max_in_flight = 4

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        raise OperatorError(
            f"replay: no recorded reply left for {request.key}; the record is incomplete"
        )
