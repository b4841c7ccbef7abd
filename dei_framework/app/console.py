"""The console scripts ``dei`` and ``dei-run`` (and ``python -m dei_framework``).

They load the command line under their own Ctrl-C handler. Importing it takes about a
second (numpy, click, pluggy); a SIGINT in that second would otherwise raise inside some
library's import and print its traceback — numpy even turns it into an ImportError that
blames the installation. Here the first Ctrl-C is noted and honoured once the import is done
(one line, exit status 130, as at any other moment); a second one quits at once.
This module imports nothing of the framework at its top.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType, ModuleType

#: Exit status of an interrupted command (as :data:`dei_framework.app.cli.EXIT_INTERRUPTED`).
_EXIT_INTERRUPTED = 130


def main() -> None:
    """``dei``."""
    _command_line().main()


def dei_run_main() -> None:
    """``dei-run``."""
    _command_line().dei_run_main()


def _command_line() -> ModuleType:
    presses = 0

    def on_sigint(number: int, frame: FrameType | None) -> None:
        nonlocal presses
        presses += 1
        if presses > 1:
            _interrupted(at_once=True)

    previous = signal.getsignal(signal.SIGINT)
    # A job started in the background keeps ignoring Ctrl-C; None: a handler not set from
    # Python, left alone.
    ours = previous not in (signal.SIG_IGN, None)
    if ours:
        signal.signal(signal.SIGINT, on_sigint)
    try:
        from dei_framework.app import cli
    finally:
        if ours:
            signal.signal(signal.SIGINT, previous)
    if presses:
        _interrupted(at_once=False)
    return cli


def _interrupted(*, at_once: bool) -> None:
    sys.stderr.write("interrupted\n")
    sys.stderr.flush()
    if at_once:
        os._exit(_EXIT_INTERRUPTED)  # from inside an import: nothing to clean up yet
    raise SystemExit(_EXIT_INTERRUPTED)
