"""ArchiveStats: summary statistics of an archive."""

from __future__ import annotations

import attrs

from dei_framework.contract.json_form import json_form


@json_form()
@attrs.frozen(kw_only=True)
class ArchiveStats:
    """Summary statistics of an archive."""

    #: Number of occupied cells.
    num_elites: int
    #: Number of cells in the archive.
    cells: int
    #: ``num_elites / cells``.
    coverage: float
    #: Sum over elites of ``fitness - offset`` (the offset keeps it non-negative).
    qd_score: float
    #: The offset subtracted from each fitness in ``qd_score``.
    qd_offset: float
    #: Best fitness, or ``None`` when empty.
    obj_max: float | None
    #: Mean elite fitness, or ``None`` when empty.
    obj_mean: float | None
