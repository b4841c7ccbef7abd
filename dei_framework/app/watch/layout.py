"""What a watched directory holds: one run, or an experiment's runs (one per condition and repeat).

An experiment directory (it has ``experiment.json``) holds ordinary run directories,
``<condition>/repeat-<k>/``; the page lets the user pick one. Anything else is one run, whose
event files may be spread over per-node subdirectories (see :mod:`dei_framework.app.watch.run`).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from dei_framework.contract.errors import ConfigError
from dei_framework.runtime.files.run_dir import holds_experiment, holds_run
from dei_framework.runtime.files.run_layout import EXPERIMENT_FILE

#: How deep below an experiment directory runs are looked for.
MAX_DEPTH = 3


def is_experiment(root: Path) -> bool:
    """Whether ``root`` is an experiment directory (:func:`holds_experiment`, the one rule); a
    summary too damaged to tell counts as not one."""
    try:
        return holds_experiment(root)
    except ConfigError:
        return False


def find_runs(root: Path) -> list[dict[str, Any]]:
    """The runs under ``root``: ``[{"path", "condition", "repeat"}]``, paths relative to it.

    A plain run is the single entry ``{"path": ""}``. In an experiment, the topmost
    directories holding a run marker, in the plan's condition order, repeats in numeric order.
    """
    if not is_experiment(root):
        return [{"path": "", "condition": None, "repeat": None}]
    found: list[str] = []
    for directory, subdirs, _files in os.walk(root):
        relative = Path(directory).relative_to(root)
        depth = len(relative.parts)
        if depth and holds_run(Path(directory)):
            found.append(relative.as_posix())
            subdirs[:] = []
        elif depth >= MAX_DEPTH:
            subdirs[:] = []
        else:
            subdirs[:] = [d for d in subdirs if d != "plots"]
    order = _condition_order(root)
    runs = []
    for path in sorted(found, key=lambda p: (_rank(order, p.split("/")[0]), _natural(p))):
        condition, _, repeat = path.partition("/")
        runs.append({"path": path, "condition": condition, "repeat": repeat or None})
    return runs


def _condition_order(root: Path) -> list[str]:
    try:
        plan = json.loads((root / EXPERIMENT_FILE).read_text())
    except (OSError, ValueError):
        return []
    names = []
    for condition in plan.get("conditions") or () if isinstance(plan, dict) else ():
        name = condition.get("name") if isinstance(condition, dict) else condition
        if isinstance(name, str):
            names.append(name)
    return names


def _rank(order: list[str], name: str) -> int:
    return order.index(name) if name in order else len(order)


def _natural(path: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]
