"""A quit-at-once exit (a second Ctrl-C) leaves no named semaphore for the resource tracker to
warn about, even while another thread is half-way through releasing one."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

#: A thread drops a spawn-context lock; its release is held between "unlinked" and "tracker
#: told" until the main thread has called the exit under test.
HALF_RELEASED = textwrap.dedent("""
    import multiprocessing, os, sys, threading
    from multiprocessing import synchronize
    from dei_framework.evaluation.semaphores import exit_leaving_no_semaphore

    lock = multiprocessing.get_context("spawn").Lock()
    unlinked, exiting = threading.Event(), threading.Event()
    real_unlink = synchronize.sem_unlink

    def unlink_then_stall(name):
        real_unlink(name)
        unlinked.set()
        exiting.wait(5)

    synchronize.sem_unlink = unlink_then_stall

    def drop():
        global lock
        del lock  # its finalizer runs here, in this thread

    threading.Thread(target=drop, daemon=True).start()
    unlinked.wait(5)
    exiting.set()
    if sys.argv[1] == "plain":
        os._exit(3)
    exit_leaving_no_semaphore(3)
""")


@pytest.mark.parametrize("exit_kind", ["plain", "settled"])
def test_an_exit_waits_for_a_half_released_semaphore(exit_kind) -> None:
    # The tracker holds our stderr until it ends, so this returns after its last word.
    done = subprocess.run(
        [sys.executable, "-c", HALF_RELEASED, exit_kind], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, done.stderr
    leaked = "leaked semaphore" in done.stderr
    # A plain os._exit is the bug being guarded against: it must show, or this test proves nothing.
    assert leaked == (exit_kind == "plain"), done.stderr


def test_a_frame_inside_a_release_is_recognised(monkeypatch) -> None:
    import multiprocessing
    from multiprocessing import synchronize

    from dei_framework.evaluation.semaphores import releasing_semaphore

    seen: list[bool] = []
    real_unlink = synchronize.sem_unlink

    def unlink_and_look(name: str) -> None:
        real_unlink(name)
        seen.append(releasing_semaphore(sys._getframe()))

    monkeypatch.setattr(synchronize, "sem_unlink", unlink_and_look)
    lock = multiprocessing.get_context("spawn").Lock()
    del lock
    assert seen == [True]
    assert releasing_semaphore(sys._getframe()) is False
