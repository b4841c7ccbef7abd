"""The search algorithm: one node's Red Queen MAP-Elites as ask/tell, and its parts.

:mod:`~dei_framework.search.scheduler` (the ask/tell core), archives (``archives/``), parent
selectors (``selectors/``), the Red Queen opponent pool, champion-sharing policies, the
per-slot random streams and the budget allocators that move calls between nodes. Nothing here
does I/O or awaits: a custom loop drives it directly.

May import: :mod:`dei_framework.contract`.

``dei_framework.search`` was the node driver's module before 0.2; its names
(``SearchDriver`` ...) still resolve here, with a ``DeprecationWarning``, for one release (they
live in :mod:`dei_framework.runtime.driver`).
"""

from dei_framework._moved import forward_driver as __getattr__  # noqa: F401
