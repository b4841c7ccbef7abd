"""The warning category of the framework's own deprecations.

:class:`DEIDeprecationWarning` is a :class:`DeprecationWarning` (filters and ``pytest.warns``
on that class catch it), told apart so that ``dei`` and ``dei-run`` can show the framework's
deprecations to the plugin author who can act on them, and leave other libraries' to Python's
default filters.

Imports nothing of the framework: every layer may use it (tests/core/test_layers.py).
"""

from __future__ import annotations


class DEIDeprecationWarning(DeprecationWarning):
    """A name, path or plugin shape the framework still accepts and will drop: the message says
    what to write instead."""
