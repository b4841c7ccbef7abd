"""Between nodes: signed champion and report envelopes, a node's sharing endpoint, and time.

:mod:`~dei_framework.net.envelope` (what travels, signed; the inbox filter),
:mod:`~dei_framework.net.node` (a node's publish/receive side over a transport) and
:mod:`~dei_framework.net.timeline` (virtual time for reproducible in-process delivery).

May import: :mod:`dei_framework.contract`, :mod:`dei_framework.search`,
:mod:`dei_framework.evaluation`.
"""
