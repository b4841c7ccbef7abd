"""Reading a record as the JSON dict it was before 0.2, deprecated: ``event["fitness"]``,
``summary.get("nodes")``, ``"error" in event``, ``{**summary}``.

The run's events and summary were handed out as the dicts written to ``events.jsonl`` and
``summary.json``; they are records now (:mod:`dei_framework.search.events`,
:class:`~dei_framework.contract.run_summary.RunSummary`). A plugin or script that still reads one
as a dict gets the value its ``to_json()`` holds, with a
:class:`~dei_framework.contract.errors.DEIDeprecationWarning` once per class.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any, ClassVar

from dei_framework._deprecation import DEIDeprecationWarning


class ReadAsJSON:
    """Dict-style reads of a record, each answered from its ``to_json()``, deprecated."""

    __slots__ = ()
    _warned: ClassVar[bool] = False

    def to_json(self) -> Any:
        raise NotImplementedError  # each record says how it is written

    def _as_dict(self) -> dict[str, Any]:
        cls = type(self)
        if not cls._warned:
            cls._warned = True
            warnings.warn(
                f"reading {cls.__name__} records as dicts is deprecated: read their "
                f"attributes (event.fitness rather than event['fitness']), or call to_json() "
                f"for the dict written to the run's files",
                DEIDeprecationWarning,
                stacklevel=3,
            )
        return self.to_json()

    def __getitem__(self, key: str) -> Any:
        return self._as_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """``to_json().get(key, default)`` (deprecated: read the attribute)."""
        return self._as_dict().get(key, default)

    def keys(self) -> Any:
        """``to_json().keys()`` (deprecated: read the attributes)."""
        return self._as_dict().keys()

    def __contains__(self, key: object) -> bool:
        return key in self._as_dict()

    def __iter__(self) -> Iterator[str]:
        # Defined so that ``for key in record`` (and ``set(record)``) gives the keys, as it did
        # on the dict, rather than Python's fallback of __getitem__(0), (1), ...
        return iter(self._as_dict())
