"""Figure set ``mars_speed``: the Core War simulator and assembler speed.

Runs ``benchmarks/mars_speed.py`` (instructions per second on the pMARS reference duels, the
thread speed-up of 20-round evaluations, a whole ``dei coreware battle -r 1000`` process, and
pMARS beside it when ``--pmars`` names a binary you built) and ``benchmarks/assembler_speed.py``
(the Koenigstuhl warriors). Both read the reference data in ``../shared/corewar``. Usage::

    python docs/figures/mars_speed.py [--repeats 3] [--pmars /path/to/pmars]

``--pmars`` defaults to ``$DEI_PMARS`` (the binary ``tests/coreware``'s differential test
compares against), so a machine set up for that test gets the pMARS column too.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import command_text, markdown_table, run_benchmark, write_figure_set  # noqa: E402


def millions(ips: float | None) -> str:
    return "–" if ips is None else f"{ips / 1e6:.0f} M"


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    mars, assembler = data["mars"], data["assembler"]
    pmars = mars.get("pmars") or {}
    speed = mars["instructions_per_second"]
    parallel = mars["parallel"]
    cli = mars["cli_1000_rounds_seconds"]
    low, high = parallel["speedup_range"]
    lines = f"{assembler['lines']:,}".replace(",", " ")
    rows = [
        [
            f"single-thread instructions/s, the {mars['battles']} one-on-one reference battles "
            f"({speed['plain']['instructions'] / 1e6:.0f} M instructions; best of "
            f"{data['repeats']})",
            millions(speed["plain"]["instructions_per_second"]),
            millions(pmars.get("instructions_per_second")),
        ],
        [
            "the same with observables (memory coverage bitmap)",
            millions(speed["observe"]["instructions_per_second"]),
            "–",
        ],
        [
            "whole process `battle -r 1000` of one reference fight (start-up, assembly included), "
            "1 / 2 threads",
            f"{cli['workers_1_seconds']:.2f} s / {cli['workers_2_seconds']:.2f} s",
            f"{pmars['cli_1000_rounds_seconds']:.2f} s" if pmars else "–",
        ],
        [
            f"20-round evaluations of {parallel['fights']} reference fights, `workers=2` vs "
            "`workers=1`",
            f"**{parallel['speedup']:.2f}x** median speed-up (range "
            f"{low:.2f}–{high:.2f} over alternated pairs)",
            "–",
        ],
        [
            f"assembling the {assembler['files']} Koenigstuhl warriors "
            f"({lines} lines; best of {data['repeats']})",
            f"{assembler['seconds']:.1f} s, {assembler['ms_per_file']:.2f} ms per file",
            "–",
        ],
    ]
    loads = [mars.get("load_average_before"), mars.get("load_average_after")]
    load = "–".join(f"{entry[0]:.1f}" for entry in loads if entry)
    return {
        "table": markdown_table(["measure", "DEI", "pMARS 0.9.4 (when given)"], rows),
        "load": load or "unknown",
        "cores": str(mars.get("cpu_count")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--pmars",
        default=os.environ.get("DEI_PMARS") or None,
        help="a pMARS binary to compare (not part of the project; default: "
        "$DEI_PMARS, the binary the differential test uses)",
    )
    args = parser.parse_args(argv)
    if args.pmars and not os.access(args.pmars, os.X_OK):
        parser.error(f"--pmars {args.pmars}: not an executable file")
    mars_command = [sys.executable, "benchmarks/mars_speed.py", "--repeats", str(args.repeats)]
    mars_command += ["--pmars", args.pmars] if args.pmars else []
    assembler_command = [
        sys.executable,
        "benchmarks/assembler_speed.py",
        "--repeats",
        str(args.repeats),
    ]
    mars, mars_timing = run_benchmark(mars_command)
    assembler, assembler_timing = run_benchmark(assembler_command)
    write_figure_set(
        "mars_speed",
        commands=[command_text(["python", *c[1:]]) for c in (mars_command, assembler_command)],
        data={"mars": mars, "assembler": assembler, "repeats": args.repeats},
        n=f"best of {args.repeats} runs per speed; the thread speed-up: median of alternated pairs",
        spread="best of runs (speeds), range over pairs (speed-up)",
        timings=[mars_timing, assembler_timing],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
