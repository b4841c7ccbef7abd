"""The inbox filter: what a node puts between its transport and its search.

:class:`InboxFilter` decodes, verifies, de-duplicates and rate-limits every delivery and counts
what it drops, by reason. Re-exported by :mod:`dei_framework.net.envelope`.
"""

from __future__ import annotations

import collections
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from dei_framework.contract.records import hash_text
from dei_framework.net._membership import Membership, parse_membership
from dei_framework.net._messages import ChampionEnvelope, ReportEnvelope
from dei_framework.net._wire import EnvelopeError

if TYPE_CHECKING:
    from dei_framework.contract.transport import Delivery


@attrs.define
class _Bucket:
    tokens: float
    stamp: float


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
