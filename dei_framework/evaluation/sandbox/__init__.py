"""Running candidates that may do anything: per-candidate limits (time, memory, file size,
output, processes), a scrubbed environment, and isolation (``--sandbox
none|process|isolated``): a warm zygote forks one child per candidate; bubblewrap jails it
for ``isolated``.

May import: what ``evaluation`` may import (:mod:`dei_framework.contract`,
:mod:`dei_framework.search`) and the other modules of ``evaluation``.

Modules:
    policy.py       the level and limits a run uses (options, domain declarations)
    limits.py       the limits, and the one-line reasons a stopped candidate gets
    zygote.py       the warm process that forks one child per candidate
    pipes.py        reading a child's reply and output without blocking, watching its exit
    processes.py    a candidate's processes (daemons too): found, counted, killed
    client.py       a worker's handle on its warm process (one per worker thread, restarted
                    when a program takes it down)
    bubblewrap.py   the ``isolated`` level's jail (``bwrap``)
    wire.py         frames, and reading what comes out of a sandbox safely
"""

from dei_framework.evaluation.sandbox.limits import Limits, stop_kind
from dei_framework.evaluation.sandbox.policy import LEVELS, SandboxPolicy, choose_policy

__all__ = ["LEVELS", "Limits", "SandboxPolicy", "choose_policy", "stop_kind"]
