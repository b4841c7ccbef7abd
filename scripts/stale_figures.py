"""Lists the deterministic figure sets whose inputs changed since their JSON was generated.

A deterministic set (:data:`DETERMINISTIC`: seeded offline operators or virtual time, so the same
commit gives the same numbers) is *stale* when a file it may depend on differs between the commit
its JSON records (``git.commit``) and ``HEAD``. Its inputs, conservatively:

* its script ``docs/figures/<set>.py`` and ``docs/figures/figurelib.py``;
* every ``benchmarks/*.py`` file its recorded commands name;
* the code those commands run: the packages :data:`CODE` (the framework, the plugins, the
  example domains).

So a listed set *may* have changed (any edit to the framework lists every set); a set not listed
has not. Timing sets are not listed: they vary from run to run anyway, and their JSON says the
machine and load they were measured under.

Usage: ``python scripts/stale_figures.py`` prints one line per stale set with the command that
regenerates it and the changed files (exit 0 either way: CI prints it for information).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIGURES = "docs/figures"
#: The sets whose numbers a commit determines, and why.
DETERMINISTIC = {
    "families": "offline Core War operators, seeded repeats",
    "adaptive": "offline Core War operators, seeded repeats",
    "adaptive_numeric": "offline numeric operators, seeded repeats",
    "static_domains": "offline numeric and symreg operators, seeded repeats",
    "migration": "offline symreg operator, seeded repeats",
    "plan": "offline operators, seeded pilot and repeats",
    "common_remeasure": "re-scores a recorded experiment with fixed seeds",
    "gossip_sim": "GossipSub on virtual time with a seeded link",
}
#: The code a figure command runs.
CODE = ("dei_framework", "plugins", "examples")
#: How many changed files a line shows before "and N more".
SHOWN_FILES = 5


def inputs(record: Mapping[str, Any]) -> list[str]:
    """The paths (files and folders, relative to the repository) a figure set may depend on."""
    benchmarks = sorted(
        {
            name
            for command in record.get("commands", [])
            for name in re.findall(r"benchmarks/[\w/.-]+\.py", command)
        }
    )
    return [record["script"], f"{FIGURES}/figurelib.py", *benchmarks, *CODE]


def changed_since(commit: str, paths: Sequence[str], root: Path) -> list[str] | None:
    """Files under ``paths`` that differ between ``commit`` and ``HEAD``; ``None`` when git does
    not know the commit (the set cannot be checked: treat it as stale)."""
    done = subprocess.run(
        ["git", "diff", "--name-only", commit, "HEAD", "--", *paths],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return None
    return [line for line in done.stdout.splitlines() if line]


def stale_sets(root: Path = ROOT) -> dict[str, list[str] | None]:
    """Each stale deterministic set and its changed input files (``None``: unknown commit)."""
    stale = {}
    for name in DETERMINISTIC:
        path = root / FIGURES / f"{name}.json"
        if not path.is_file():
            continue
        record = json.loads(path.read_text())
        commit = (record.get("git") or {}).get("commit")
        changed = changed_since(commit, inputs(record), root) if commit else None
        if changed is None or changed:
            stale[name] = changed
    return stale


def main(argv: Sequence[str] | None = None, root: Path = ROOT) -> int:
    del argv  # no options: the rule is fixed, see the module docstring
    stale = stale_sets(root)
    if not stale:
        print("stale figures: none (every deterministic set's inputs are as generated)")
        return 0
    print(
        f"stale figures: {len(stale)} deterministic set(s) whose inputs changed since "
        "generated (regenerate from a clean tree, commit the JSON, then "
        "`python docs/figures/render.py`):"
    )
    for name, changed in stale.items():
        if changed is None:
            why = "its recorded commit is not in this repository's history"
        else:
            more = len(changed) - SHOWN_FILES
            why = ", ".join(changed[:SHOWN_FILES]) + (f" and {more} more" if more > 0 else "")
        print(f"  {name}: python {FIGURES}/{name}.py  ({why})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
