"""Former home of the grid archive; the archives now live in :mod:`dei_framework.search.archives`.

Kept as an import path so ``from dei_framework.search.archive import GridArchive`` keeps working.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from dei_framework.contract.records import Candidate, deprecated_alias
from dei_framework.search.archives import AddStatus, ArchiveStats, GridArchive

__all__ = ["AddStatus", "ArchiveStats", "GridArchive"]


def __getattr__(name: str) -> type[Candidate]:
    """``Elite``, a deprecated alias of :class:`~dei_framework.contract.records.Candidate`."""
    return deprecated_alias(__name__, name)
