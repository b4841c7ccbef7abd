"""Child processes that end with their parent: what a launcher, or a plugin that starts
processes of its own (the AXL transport's nodes), gives ``subprocess.Popen`` as its
``preexec_fn``.

Part of the contract: plugins import it from here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def parent_death_signal(sig: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the child receive ``sig`` when its parent dies (Linux).

    A launcher killed with SIGKILL can stop nothing itself; this way its children (node
    processes: SIGINT, they keep their checkpoint; AXL nodes: SIGTERM) do not outlive it.
    ``None`` where the system has no ``prctl``.
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def set_signal() -> None:
        prctl(1, int(sig), 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), sig)

    return set_signal
