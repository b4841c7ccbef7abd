"""Running candidates that may do anything: per-candidate time and memory limits, and
isolation (``--sandbox none|process|isolated``).

* :mod:`~dei_framework.evaluation.sandbox.policy`: the level and limits a run uses (options, domain
  declarations).
* :mod:`~dei_framework.evaluation.sandbox.limits`: the limits and the reasons a stopped candidate
  gets.
* :mod:`~dei_framework.evaluation.sandbox.zygote`: the warm process that forks one child per
  candidate.
* :mod:`~dei_framework.evaluation.sandbox.client`: a worker's handle on its warm process.
* :mod:`~dei_framework.evaluation.sandbox.bubblewrap`: the ``isolated`` level's jail.
* :mod:`~dei_framework.evaluation.sandbox.wire`: frames, and reading what comes out of a sandbox
  safely.
"""

from dei_framework.evaluation.sandbox.limits import Limits, stop_kind
from dei_framework.evaluation.sandbox.policy import LEVELS, SandboxPolicy, choose_policy

__all__ = ["LEVELS", "Limits", "SandboxPolicy", "choose_policy", "stop_kind"]
