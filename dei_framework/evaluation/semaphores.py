"""Named semaphores of process pools, released so that a quit-at-once exit leaves none behind.

With the spawn start method every queue and lock of a process pool is a named semaphore that
``multiprocessing`` registers with its resource tracker (a process that outlives us) and
unlinks at exit. An ``os._exit`` (a second Ctrl-C) skips that, and the tracker then unlinks
them itself and warns about "leaked semaphore objects" on the user's terminal, after our last
words. Releasing one is two steps (unlink the name, then tell the tracker), so an exit between
the two leaves the same warning: :func:`exit_leaving_no_semaphore` waits for those.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import types
from typing import NoReturn

#: How long an exit waits for another thread's release of a semaphore to finish.
SETTLE_SECONDS = 1.0


def release_semaphores() -> None:
    """Unlinks the named semaphores this process's pools created, as an orderly exit would.

    Only the semaphores' finalizers run here (unlink and tell the tracker), none of the pool's,
    which join threads and could hang.
    """
    from multiprocessing import synchronize, util

    # The finalizer registry is private; it has held SemLock._cleanup finalizers since 3.4.
    registry = getattr(util, "_finalizer_registry", {})
    for finalizer in list(registry.values()):
        if getattr(finalizer, "_callback", None) is synchronize.SemLock._cleanup:
            with contextlib.suppress(Exception):  # gone already: nothing left to release
                finalizer()


def releasing_semaphore(frame: types.FrameType | None) -> bool:
    """Whether the code running at ``frame`` (or any caller of it) is half-way through
    releasing a named semaphore, or is in the resource tracker's client (whose lock a release
    would need)."""
    synchronize = sys.modules.get("multiprocessing.synchronize")
    if synchronize is None:  # no semaphore was ever made
        return False
    cleanup = synchronize.SemLock._cleanup.__code__
    while frame is not None:
        if (
            frame.f_code is cleanup
            or frame.f_globals.get("__name__") == "multiprocessing.resource_tracker"
        ):
            return True
        frame = frame.f_back
    return False


def exit_leaving_no_semaphore(code: int) -> NoReturn:
    """``os._exit(code)`` once no other thread is half-way through releasing a semaphore.

    Another thread (a process pool's manager, tearing the pool down) may have unlinked a
    semaphore and not yet told the tracker: this thread sleeps (which hands it the GIL) until
    it has, for at most :data:`SETTLE_SECONDS`. The last look and the exit run under a long
    GIL switch interval, so no other thread can start a release between them. The caller must
    not itself be inside a release (see :func:`releasing_semaphore`): it would wait for itself.
    """
    me = threading.get_ident()
    deadline = time.monotonic() + SETTLE_SECONDS
    interval = sys.getswitchinterval()
    while True:
        sys.setswitchinterval(SETTLE_SECONDS)
        others = [frame for ident, frame in sys._current_frames().items() if ident != me]
        if time.monotonic() > deadline or not any(map(releasing_semaphore, others)):
            os._exit(code)
        sys.setswitchinterval(interval)
        time.sleep(0.005)
