"""DEI transports: GossipSub champion sharing over an in-memory hub or over AXL nodes.

Modules: :mod:`.link` (the point-to-point link contract), :mod:`.inmemory` (an in-process hub
with fault injection), :mod:`.frames` (the gossip wire framing), :mod:`.gossipsub` (the router,
a :class:`~dei_framework.contract.transport.Transport`), :mod:`.axl` (a link over an AXL node's
HTTP API) and :mod:`.plugin` (the ``dei_transports`` hook).
"""
