"""The run directory's layout: the names of its files and the paths built from them, in one
place.

``docs/architecture.md`` ("The run directory") describes each file. Every module that builds
a path into a run or experiment directory takes the name or the path from here (or a
:class:`~dei_framework.runtime.files.run_dir.RunDir` path property, built from these), so a
file is renamed or moved in one line; ``tests/runtime/test_run_layout.py`` fails on a name
spelt out, or a directory joined by hand, anywhere else in the core or the bundled plugins.
This module imports nothing of the core: the readers (``run_files``), the writer
(``run_dir``) and the layers above them can all use it.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import re
from pathlib import Path

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
#: The lock one writer holds on the directory (:mod:`~dei_framework.runtime.files.run_lock`;
#: hidden: it is no result of the run).
LOCK_FILE = ".dei.lock"
#: Paid replies a resume cut from ``calls.jsonl`` (made after the checkpoint) and has not
#: logged again yet: kept here first, so that a second crash before they are served again
#: loses none of them. Each resume reads it, and removes it once nothing is left unlogged.
UNLOGGED_CALLS_FILE = "calls-unlogged.jsonl"
#: A node's signing key, in its node folder.
IDENTITY_FILE = "identity.pem"
#: The append-only logs (a checkpoint holds their offsets and digests).
LOGS = (EVENTS_FILE, CALLS_FILE)
#: The files a run writes at its top level (what a run that never started removes).
RUN_FILES = (CONFIG_FILE, CHECKPOINT_FILE, EVENTS_FILE, CALLS_FILE, SUMMARY_FILE)

#: The folder of the nodes' own files (round files, keys): ``nodes/<node>/``.
NODES_DIR = "nodes"
#: The folder of the node processes' run directories: ``processes/<node>/``.
PROCESSES_DIR = "processes"
#: A round file's name, ``round-NNN.json`` (the round's number in the group).
ROUND_NAME = re.compile(r"round-(\d+)\.json")
_ROUND_GLOB = "round-*.json"


def node_dir(run_dir: Path, node: str) -> Path:
    """Node ``node``'s folder in ``run_dir``: its round files and its key."""
    return run_dir / NODES_DIR / node


def round_path(run_dir: Path, node: str, round_index: int) -> Path:
    """Node ``node``'s file of round ``round_index`` (from 0)."""
    return node_dir(run_dir, node) / f"round-{round_index:03d}.json"


def round_paths(run_dir: Path, node: str | None = None) -> list[Path]:
    """The round files in ``run_dir`` (of ``node``; of every node when ``None``), sorted."""
    return sorted((run_dir / NODES_DIR).glob(f"{node or '*'}/{_ROUND_GLOB}"))


def round_paths_below(directory: Path) -> list[Path]:
    """The round files of every run in or below ``directory`` (an experiment's runs, the node
    processes' directories), sorted."""
    return sorted(directory.glob(f"**/{NODES_DIR}/*/{_ROUND_GLOB}"))


def identity_path(run_dir: Path, node: str) -> Path:
    """Node ``node``'s signing key in ``run_dir``."""
    return node_dir(run_dir, node) / IDENTITY_FILE


def processes_dir(run_dir: Path) -> Path:
    """Where a run of one process per node keeps the processes' directories."""
    return run_dir / PROCESSES_DIR


def process_dir(run_dir: Path, node: str) -> Path:
    """The run directory of node ``node``'s own process (one process per node)."""
    return processes_dir(run_dir) / node
