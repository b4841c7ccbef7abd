"""ParentSelector: how a node chooses the elites an operator call works from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dei_framework.contract.capabilities import settle
from dei_framework.contract.records import Candidate
from dei_framework.search.archives import AddStatus, ArchiveBase


class ParentSelector:
    """Chooses parents for mutation calls, and may learn from what their children did.

    What pyribs calls an emitter generates solutions; here operators do that, and a parent
    selector only picks the elites they start from. (It was ``EmitterBase``, and the setting
    that names one is still ``emitter``.)

    The scheduler calls :meth:`select` once per mutation slot with a generator derived from
    ``(seed, node, round, slot)`` and the archive as it stands after the slots before that
    one were admitted; it calls :meth:`tell` for every admitted child, in slot order. A
    selector whose choice depends on what it was told must keep that in :meth:`state_json`, so
    a resumed run draws exactly as an uninterrupted one.

    Subclasses implement :meth:`select`; the rest is optional.
    """

    #: Registered name, recorded in round events.
    name: str = ""
    #: ``"learns"``, declared by a selector whose :meth:`tell` uses what it is told (the
    #: scheduler builds the child's record for it even when the archive did not take it).
    capabilities: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        settle(cls, ParentSelector, {"learns": ("tell",)})

    def select(self, archive: ArchiveBase, rng: np.random.Generator, count: int) -> list[Candidate]:
        """``count`` elites of a non-empty archive: the parent first, then the others.

        ``rng`` draws what a ``numpy.random.Generator`` seeded for the slot draws (the scheduler
        hands a faster stand-in, :class:`~dei_framework.search.slot_random.SlotGenerator`, with
        every ``Generator`` method).
        """
        raise NotImplementedError

    def tell(self, parent: Candidate | None, child: Candidate | None, status: AddStatus) -> None:  # noqa: B027
        """What a mutation of ``parent`` gave (``child`` is ``None`` when invalid)."""

    def reset(self) -> None:  # noqa: B027
        """A new round (with a fresh archive) starts."""

    def state_json(self) -> dict[str, Any]:
        """What the selector learnt (for checkpoints)."""
        return {}

    def restore(self, state: Mapping[str, Any]) -> None:  # noqa: B027
        """Continues from :meth:`state_json` output."""
