"""Between nodes: signed champion and report envelopes, a node's sharing endpoint, and time.

:mod:`~dei_framework.net.envelope` (what travels, signed; the inbox filter),
:mod:`~dei_framework.net.node` (a node's publish/receive side over a transport) and
:mod:`~dei_framework.net.timeline` (virtual time for reproducible in-process delivery).

May import: :mod:`dei_framework.contract`, :mod:`dei_framework.search`,
:mod:`dei_framework.evaluation`.

Modules:
    envelope.py         the wire format's one import path: envelopes, identity, membership,
                        inbox
    _wire.py            the wire format's bounds, EnvelopeError, framing and field checks
    _identity.py        NodeIdentity (ed25519 key, PEM files), canonical bytes, signatures
    _messages.py        ChampionEnvelope and ReportEnvelope: encode, decode, field bounds
    _membership.py      Membership: the keys allowed to sign, and the names bound to them
    _inbox.py           InboxFilter: decode, verify, dedup, rate-limit what arrives
    node.py             Node: transport endpoint + identity + inbox filter + sharing policy
    timeline.py         Timeline, NodeClock: virtual-time champion delivery (deterministic)
"""
