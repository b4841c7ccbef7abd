"""The run directory's layout: the names of its files, in one place.

``docs/architecture.md`` ("The run directory") describes each file. Every module that builds
a path into a run or experiment directory takes the name from here (or a :class:`RunDir` path
property), so a file is renamed in one line; ``tests/runtime/test_run_layout.py`` fails on a name
spelt out anywhere else in the core. This module imports nothing: the readers
(``run_files``), the writer (``run_dir``) and the layers above them can all use it.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

#: The run's resolved configuration, written before anything else.
CONFIG_FILE = "config.json"
#: Append-only log of evaluated candidates and finished rounds.
EVENTS_FILE = "events.jsonl"
#: Append-only log of operator calls (prompt, reply, tokens, cost).
CALLS_FILE = "calls.jsonl"
#: The latest checkpoint (offsets and digests of the logs, each node's state).
CHECKPOINT_FILE = "checkpoint.json"
#: The finished run's (or experiment's) summary.
SUMMARY_FILE = "summary.json"
#: The best-per-cell merge of the nodes' final archives.
MERGED_ARCHIVE_FILE = "merged_archive.json"
#: The markdown report ``dei report`` writes.
REPORT_FILE = "report.md"
#: An experiment directory's plan.
EXPERIMENT_FILE = "experiment.json"
#: The launcher's children (pids, AXL addresses) when each node runs in its own process.
PROCESSES_FILE = "processes.json"
#: A node process's own log, in its process directory.
NODE_LOG_FILE = "node.log"
#: The append-only logs (a checkpoint holds their offsets and digests).
LOGS = (EVENTS_FILE, CALLS_FILE)
#: The files a run writes at its top level (what a run that never started removes).
RUN_FILES = (CONFIG_FILE, CHECKPOINT_FILE, EVENTS_FILE, CALLS_FILE, SUMMARY_FILE)
