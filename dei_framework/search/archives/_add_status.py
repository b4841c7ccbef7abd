"""AddStatus: what offering a candidate to an archive did."""

from __future__ import annotations

import enum


class AddStatus(enum.IntEnum):
    """What :meth:`ArchiveBase.add` did; truthy when the candidate was added.

    Ordered by how good the outcome was: ``NOT_ADDED < IMPROVE_EXISTING < NEW``. Prints as its
    name (``NEW``), not as a number.
    """

    NOT_ADDED = 0
    IMPROVE_EXISTING = 1
    NEW = 2

    def __str__(self) -> str:
        return self.name

    @property
    def label(self) -> str:
        """The lowercase name used in event logs (``new``, ``improve_existing``, ``not_added``)."""
        return self.name.lower()
