"""The console scripts ``dei`` and ``dei-run`` (and ``python -m dei_framework``).

They load the command line under their own Ctrl-C handler. Importing it takes about a
second (numpy, click, pluggy); a SIGINT in that second would otherwise raise inside some
library's import and print its traceback — numpy even turns it into an ImportError that
blames the installation. Here the first Ctrl-C is noted and honoured once the import is done
(one line, exit status 130, as at any other moment); a second one quits at once.
This module imports nothing of the framework at its top (but the leaf that defines the warning
category, :mod:`dei_framework._deprecation`, in :func:`show_deprecations`).

They also show the framework's deprecation warnings (:class:`DEIDeprecationWarning`; other
libraries' stay under Python's default filters), once per place, each as one line
``dei: deprecated: <message>`` (the framework's name the plugin or the old module path or name,
and what to write instead). Python's default filters hide them outside ``__main__``, so a
plugin author running ``dei-run`` would never learn that their plugin needs a change. The
filter is installed here, by the command line, not when the library is imported: a library
must not change its user's filters. A user who sets warning filters themselves (``-W``,
``PYTHONWARNINGS``) keeps them, in Python's format.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import os
import signal
import sys
import warnings
from types import FrameType, ModuleType
from typing import TextIO

#: Exit status of an interrupted command (as :data:`dei_framework.app.cli.EXIT_INTERRUPTED`).
_EXIT_INTERRUPTED = 130


def main() -> None:
    """``dei``."""
    show_deprecations()
    _command_line().main()


def dei_run_main() -> None:
    """``dei-run``."""
    show_deprecations()
    _command_line().dei_run_main()


def show_deprecations() -> None:
    """Shows the framework's deprecation warnings once per place, each as one line on stderr,
    unless the user chose warning filters (``-W``, ``PYTHONWARNINGS``: ``sys.warnoptions``)."""
    if sys.warnoptions:
        return
    from dei_framework._deprecation import DEIDeprecationWarning

    warnings.filterwarnings("default", category=DEIDeprecationWarning)
    shown = warnings.showwarning

    def one_line(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if not issubclass(category, DEIDeprecationWarning):
            shown(message, category, filename, lineno, file, line)
            return
        # The message names the plugin or the old name and what to write instead; the file
        # and source line Python would add point into the framework or the caller's import.
        stream = sys.stderr if file is None else file
        if stream is None:  # no stderr (pythonw): nowhere to show it, as Python does
            return
        try:
            stream.write(f"dei: deprecated: {message}\n")
        except OSError:  # a closed stderr: as Python does
            pass

    warnings.showwarning = one_line


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
