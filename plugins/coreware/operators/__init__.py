"""Offline operators for Core War: ``gp`` (structural mutation and crossover) and ``templates``.

They need no network and no model, so a Core War run works out of the box, and they have
deliberately different priors: ``gp`` explores instruction by instruction from whatever the
archive holds, ``templates`` writes instances of known strategies with fresh constants.
"""

from dei_coreware.operators.gp import GPOperator
from dei_coreware.operators.templates import TemplateOperator

__all__ = ["GPOperator", "TemplateOperator"]
