"""The warning category of the records' dict reads (``event["fitness"]``, the run log's
TypedDict names), the last deprecations left: it goes with them.

Private: not exported. Imports nothing of the framework: every layer may use it
(tests/core/test_layers.py).
"""

from __future__ import annotations


class DEIDeprecationWarning(DeprecationWarning):
    """A use the framework still accepts and will drop: the message says what to write
    instead."""
