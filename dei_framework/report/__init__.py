"""Reports: ``report.md`` and its plots for a run or an experiment, and program export.

May import: every layer below it, up to :mod:`dei_framework.experiment`.
"""

from __future__ import annotations

from dei_framework._lazy import lazy_names

__all__ = ["write_run_report"]


# write_run_report comes from dei_framework.report.write on first use. Importing a submodule
# does not import it (PEP 562).
__getattr__ = lazy_names(__name__, "dei_framework.report.write", __all__)
