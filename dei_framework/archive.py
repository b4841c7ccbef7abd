"""Former home of the grid archive; the archives now live in :mod:`dei_framework.archives`.

Kept as an import path so ``from dei_framework.archive import GridArchive`` keeps working.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from dei_framework.archives import AddStatus, ArchiveStats, GridArchive
from dei_framework.records import Candidate, deprecated_alias

__all__ = ["AddStatus", "ArchiveStats", "GridArchive"]


def __getattr__(name: str) -> type[Candidate]:
    """``Elite``, a deprecated alias of :class:`~dei_framework.records.Candidate`."""
    return deprecated_alias(__name__, name)
