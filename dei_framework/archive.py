"""Former home of the grid archive; the archives now live in :mod:`dei_framework.archives`.

Kept as an import path so ``from dei_framework.archive import GridArchive`` keeps working.
"""

from dei_framework.archives import AddStatus, ArchiveStats, GridArchive
from dei_framework.records import Elite

__all__ = ["AddStatus", "ArchiveStats", "Elite", "GridArchive"]
