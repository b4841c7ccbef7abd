"""DEI example plugin: symbolic regression, as a separately installed third-party package.

What it offers:

* :class:`~dei_symreg.domain.SymRegDomain` — the ``symreg`` domain (fitness ``1 / (1 + NMSE)``,
  descriptors ``size`` and ``nonlinearity``).
* :class:`~dei_symreg.operator.GPOperator` — the offline ``symreg-gp`` operator.
* :mod:`dei_symreg.expr` — the safe expression parser and evaluator (no ``eval``).

DEI finds it through the ``dei_framework`` entry point in this package's ``pyproject.toml``.
"""

from dei_symreg.domain import SymRegDomain
from dei_symreg.operator import GPOperator

__all__ = ["GPOperator", "SymRegDomain"]
