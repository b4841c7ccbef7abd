"""Run settings the assembler exposes to warriors as predefined constants."""

from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class AssemblerSettings:
    """MARS parameters visible to the source (``CORESIZE``, ``MAXLENGTH``...).

    The defaults are the '94 hill settings (``pmars -s 8000 -c 80000 -p 8000 -l 100 -d 100``).

    Attributes:
        coresize: Core size; every field is reduced modulo it.
        maxprocesses: ``MAXPROCESSES``.
        maxcycles: ``MAXCYCLES``.
        maxlength: Most instructions a warrior may have (more is an error).
        mindistance: ``MINDISTANCE``.
        warriors: ``WARRIORS``.
        rounds: ``ROUNDS``.
        pspacesize: ``PSPACESIZE``; 0 means pMARS's default (the largest ``coresize / i`` for
            ``i`` from 16 down that divides the core size).
    """

    coresize: int = attrs.field(default=8000, validator=attrs.validators.ge(1))
    maxprocesses: int = 8000
    maxcycles: int = 80000
    maxlength: int = attrs.field(default=100, validator=attrs.validators.ge(1))
    mindistance: int = 100
    warriors: int = 2
    rounds: int = 1
    pspacesize: int = 0

    @property
    def effective_pspacesize(self) -> int:
        """``PSPACESIZE`` as pMARS computes it when ``pspacesize`` is 0."""
        if self.pspacesize:
            return self.pspacesize
        for divisor in range(16, 0, -1):
            if self.coresize % divisor == 0:
                return self.coresize // divisor
        return self.coresize  # unreachable: 1 divides everything
