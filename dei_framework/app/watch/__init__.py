"""``dei watch``: a live local web view of a run or experiment, read from its directory.

The pieces, each usable on its own:

- :class:`~dei_framework.app.watch.tail.JsonlTail` follows a growing JSON-lines file, parsing only
  the complete lines appended since the last read;
- :class:`~dei_framework.app.watch.state.RunState` turns events into what the page shows (current
  and merged archives, champions and their transfers, errors, curves);
- :class:`~dei_framework.app.watch.run.WatchedRun` follows one run directory (all its event files,
  config, checkpoints, summary) and produces the ``/api/state`` document;
- :class:`~dei_framework.app.watch.server.WatchServer` serves the page and the JSON API
  (:func:`~dei_framework.app.watch.server.serve` is ``dei watch``).

May import: what ``app`` may import (every layer below it) and the other modules of ``app``.

Modules:
    tail.py         JsonlTail: a growing JSON-lines file, only complete new lines parsed
    lines.py        event lines taken apart quickly: common lines by pattern, the rest as JSON
    state.py        RunState: the live picture of one run, built incrementally from its events
    run.py          WatchedRun: one run directory followed live, the /api/state document
    layout.py       what a watched directory holds: one run, or an experiment's runs
    server.py       WatchServer, serve: the page, its static assets (static/), the JSON API

Example:
    >>> from dei_framework.app.watch import WatchedRun
    >>> state = WatchedRun("runs/demo").state()  # doctest: +SKIP
    >>> [node["calls"] for node in state["nodes"]]  # doctest: +SKIP
"""

from dei_framework.app.watch.run import WatchedRun
from dei_framework.app.watch.server import WatchServer
from dei_framework.app.watch.state import RunState
from dei_framework.app.watch.tail import JsonlTail

__all__ = ["JsonlTail", "RunState", "WatchServer", "WatchedRun"]
