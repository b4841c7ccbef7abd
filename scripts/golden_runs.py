"""Small seeded Core War runs reduced to what must not change when the code is reorganised.

Three scenarios go through the real console scripts (so they survive any move of code between
modules):

* ``run``: ``dei-run``, two nodes sharing champions in memory (virtual time), common ground;
* ``processes``: the same two nodes as ``dei node`` processes (no sharing), joined by
  ``dei merge`` (the merge and its common ground);
* ``experiment``: ``dei experiment``, Solo and Diverse, two repeats each.

The runs that share champions get random stalls (``DEI_CHAOS_STALL``): timing must not show
in their results. Each is reduced to a canonical JSON: ``summary.json``,
``merged_archive.json``, every round archive, ``report.md`` and the plot names (an
experiment's ``experiment.json`` too), without what depends on timing, process ids or the
machine (seconds, pids, timeline waits, the output path).
``tests/system/test_refactor_equivalence.py`` compares a fresh reduction with the recorded one,
``tests/data/golden_runs.json``. When behaviour changes on purpose (a new scoring seed, a new
summary field), rewrite the record and review its diff::

    python scripts/golden_runs.py --write

Usage::

    python scripts/golden_runs.py [--write] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "tests" / "data" / "golden_runs.json"
REGENERATE = "python scripts/golden_runs.py --write"

#: Core War made small: two rounds of 2,000 cycles per battle, generality on two rounds.
SMALL_COREWARE = (
    "--domain",
    "coreware",
    "--domain-option",
    "rounds=2",
    "--domain-option",
    "cycles=2000",
    "--domain-option",
    "generality_rounds=2",
    "--eval-workers",
    "0",
    "--progress",
    "quiet",
)
TWO_OPERATORS = ("--operator", "bombers", "--operator", "scanners")

#: Random stalls of the runs that share champions (seconds): their results must not show them.
STALL = "0.01"
#: JSON keys whose values depend on timing or on the process, not on what was computed.
VOLATILE_KEYS = frozenset({"pid", "call_seconds", "wall_seconds", "waits"})
#: Report table columns holding seconds.
VOLATILE_COLUMNS = frozenset({"call seconds", "wall s"})
WALL_TIME = re.compile(r"Wall time [0-9.]+ s")


def _console(name: str, *args: str, stall: str = "") -> None:
    """Runs one of the project's console scripts of this interpreter's environment.

    Args:
        name: The script.
        args: Its arguments.
        stall: Longest random stall before each operator call and evaluation, in seconds
            (``DEI_CHAOS_STALL``): a seeded run must come out the same whatever its timing.
    """
    script = Path(sys.executable).parent / name
    env = {**os.environ, "DEI_CHAOS_STALL": stall}
    result = subprocess.run(
        [str(script), *args], capture_output=True, text=True, check=False, env=env
    )
    if result.returncode != 0:
        raise SystemExit(
            f"{name} {' '.join(args)} failed ({result.returncode}):\n{result.stderr[-3000:]}"
        )


def canonical_json(value: Any) -> Any:
    """``value`` without the volatile keys, at any depth."""
    if isinstance(value, dict):
        return {
            key: canonical_json(item) for key, item in value.items() if key not in VOLATILE_KEYS
        }
    if isinstance(value, list):
        return [canonical_json(item) for item in value]
    return value


def canonical_report(text: str, out: Path) -> list[str]:
    """A report's lines, with the output path, seconds columns and wall time masked."""
    lines = text.replace(str(out), "<OUT>").splitlines()
    masked: list[int] = []
    for index, line in enumerate(lines):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|"):
            masked = []
        elif index + 1 < len(lines) and lines[index + 1].startswith("|---"):
            masked = [i for i, cell in enumerate(cells) if cell in VOLATILE_COLUMNS]
        elif masked and not line.startswith("|---"):
            for i in masked:
                cells[i] = "~"
            line = "| " + " | ".join(cells) + " |"
        lines[index] = WALL_TIME.sub("Wall time ~ s", line)
    return lines


def reduce_run(directory: Path, out: Path) -> dict[str, Any]:
    """One run directory's figures and archives, canonical."""

    def read(path: Path) -> Any:
        return canonical_json(json.loads(path.read_text()))

    rounds = {
        str(path.relative_to(directory)): read(path)
        for path in sorted(directory.glob("nodes/*/round-*.json"))
    }
    reduced = {
        "summary": read(directory / "summary.json"),
        "merged_archive": read(directory / "merged_archive.json"),
        "rounds": rounds,
    }
    if (directory / "report.md").exists():
        reduced["report"] = canonical_report((directory / "report.md").read_text(), out)
        reduced["plots"] = sorted(p.name for p in (directory / "plots").glob("*"))
    return reduced


def golden_run(work: Path) -> dict[str, Any]:
    out = work / "run"
    _console(
        "dei-run",
        *SMALL_COREWARE,
        *TWO_OPERATORS,
        "--nodes",
        "2",
        "--budget",
        "16",
        "--rounds",
        "2",
        "--seed",
        "3",
        "--common-ground",
        "--out",
        str(out),
        stall=STALL,
    )
    return reduce_run(out, out)


def golden_processes(work: Path) -> dict[str, Any]:
    out = work / "processes"
    config = work / "processes.json"
    _console(
        "dei-run",
        *SMALL_COREWARE,
        *TWO_OPERATORS,
        "--nodes",
        "2",
        "--budget",
        "16",
        "--rounds",
        "2",
        "--seed",
        "5",
        "--sharing",
        "none",
        "--common-ground",
        "--no-report",
        "--out",
        str(work / "template"),
    )
    config.write_text((work / "template" / "config.json").read_text())
    for name in ("node-0", "node-1"):
        _console(
            "dei",
            "node",
            "--config",
            str(config),
            "--name",
            name,
            "--out",
            str(out),
            "--progress",
            "quiet",
        )
    _console("dei", "merge", str(out))
    reduced = reduce_run(out, out)
    # The in-process run of the same configuration: a merge must agree with it on figures.
    reduced["in_process_merged"] = canonical_json(
        json.loads((work / "template" / "summary.json").read_text())["merged"]
    )
    return reduced


def golden_experiment(work: Path) -> dict[str, Any]:
    out = work / "experiment"
    _console(
        "dei",
        "experiment",
        *SMALL_COREWARE,
        *TWO_OPERATORS,
        "--conditions",
        "solo,diverse",
        "--repeats",
        "2",
        "--nodes",
        "2",
        "--budget",
        "16",
        "--rounds",
        "2",
        "--seed",
        "3",
        "--out",
        str(out),
        stall=STALL,
    )
    runs = {
        str(path.parent.relative_to(out)): reduce_run(path.parent, out)
        for path in sorted(out.glob("*/repeat-*/summary.json"))
    }
    return {
        "experiment": canonical_json(json.loads((out / "experiment.json").read_text())),
        "summary": canonical_json(json.loads((out / "summary.json").read_text())),
        "report": canonical_report((out / "report.md").read_text(), out),
        "plots": sorted(p.name for p in (out / "plots").glob("*")),
        "runs": runs,
    }


def golden(work: Path) -> dict[str, Any]:
    """Every scenario, run in ``work``, reduced."""
    return {
        "run": golden_run(work),
        "processes": golden_processes(work),
        "experiment": golden_experiment(work),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {RECORD.name}")
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        reduced = golden(work)
    text = json.dumps(reduced, indent=1, sort_keys=True) + "\n"
    if args.write:
        RECORD.parent.mkdir(parents=True, exist_ok=True)
        RECORD.write_text(text)
        print(f"wrote {RECORD}")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
