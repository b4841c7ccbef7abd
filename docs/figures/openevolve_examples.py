"""Figure set ``openevolve_examples``: OpenEvolve's own example folders, each run unchanged.

Runs ``benchmarks/openevolve_examples.py`` over an OpenEvolve checkout's ``examples/`` (not part
of this repository: give ``--examples``), one ``dei-run`` per folder with issue 48's command,
and lays out one row per folder: exit status, elites kept, merged coverage and QD-score,
candidates evaluated and invalid, and the run's own one-line reason when it kept no elite (or
the ``error:`` line of a refused folder). Usage::

    python docs/figures/openevolve_examples.py --examples ~/openevolve/examples --revision COMMIT
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import command_text, fmt_percent, markdown_table, run_benchmark, write_figure_set  # noqa: E402


def _outcome(row: Mapping[str, Any]) -> str:
    """What the run said when it kept nothing: its no-elite line or its error line."""
    if row.get("rc") == -1:
        return "stopped by the time limit"
    text = row.get("no_elite") or row.get("error") or ""
    return text.replace("|", "\\|")


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    result = data["result"]
    rows = []
    for row in result["rows"]:
        ran = "elites" in row
        rows.append(
            [
                f"`{row['example']}`",
                str(row["rc"]),
                str(row["elites"]) if ran else "–",
                fmt_percent(row["coverage"]) if ran else "–",
                f"{row['qd_score']:.2f}" if ran else "–",
                f"{row['evaluated']} / {row['invalid']}" if ran else "–",
                _outcome(row) if not ran or row["elites"] == 0 else "",
            ]
        )
    table = markdown_table(
        [
            "example folder",
            "exit",
            "elites",
            "coverage",
            "QD-score",
            "evaluated / invalid",
            "why none (the run's last line)",
        ],
        rows,
    )
    refused = sum(1 for row in result["rows"] if "elites" not in row)
    empty = sum(1 for row in result["rows"] if row.get("elites") == 0)
    summary = (
        f"{result['kept_elites']} of {result['folders']} folders kept elites; "
        f"{empty} ran and kept none, each saying why; {refused} refused with one `error:` line"
    )
    revision = result.get("openevolve_revision") or "unrecorded"
    settings = f"`{result['command']}`, seed {result['seed']}, OpenEvolve at `{revision}`"
    return {"table": table, "summary": summary, "settings": settings}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=Path, required=True)
    parser.add_argument("--revision", required=True, help="the OpenEvolve commit, recorded")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    command = [
        sys.executable,
        "benchmarks/openevolve_examples.py",
        "--examples",
        str(args.examples),
        "--revision",
        args.revision,
        "--seed",
        str(args.seed),
    ]
    result, timing = run_benchmark(command)
    write_figure_set(
        "openevolve_examples",
        commands=[command_text(["python", *command[1:]])],
        data={"result": result},
        n=f"{result['folders']} example folders, one seeded run each",
        spread="none: one run per folder (a smoke table, not a comparison)",
        timings=[timing],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
