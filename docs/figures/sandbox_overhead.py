"""Figure set ``sandbox_overhead``: what the sandbox costs per evaluation, and the throughput
of a sandboxed 4-node LLM run.

Runs ``benchmarks/sandbox_overhead.py`` (the naive program domain of ``tests/naive``, one
cheap program; ``none`` / ``process`` / ``isolated`` in turns; then 4 LLM nodes against a
loopback model answering after 1 s, with ``--sandbox none`` and ``process``). Usage::

    python docs/figures/sandbox_overhead.py [--repeats 5] [--throughput-repeats 3]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import command_text, markdown_table, run_benchmark, write_figure_set  # noqa: E402

#: The issue's targets for the time a sandbox adds to one evaluation, in ms.
TARGET_MS = {"process": 2.0, "isolated": 10.0}


def _ms(stat: Mapping[str, Any]) -> str:
    half = stat.get("ci95_half_width")
    return f"{stat['mean']:.2f} ± {half:.2f}" if half is not None else f"{stat['mean']:.2f}"


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    overhead = data["result"]["overhead"]
    rows = []
    for level, paced in overhead["paced"].items():
        back = overhead["back_to_back"][level]
        added, target = paced.get("added_ms"), TARGET_MS.get(level)
        met = "–" if added is None else ("yes" if added["mean"] <= target else "**no**")
        rows.append(
            [
                f"`{level}`",
                _ms(paced["ms_per_eval"]),
                "–" if added is None else _ms(added),
                "–" if "added_ms" not in back else _ms(back["added_ms"]),
                "–" if target is None else f"≤ {target:g} ms: {met}",
            ]
        )
    table = markdown_table(
        [
            "level",
            "ms per evaluation (paced)",
            "added ms (paced)",
            "added ms (back to back)",
            "target",
        ],
        rows,
    )
    through = data["result"]["throughput"]
    ratios = markdown_table(
        ["4 LLM nodes, 1 s model", "throughput ÷ ideal", "runs"],
        [
            [
                f"`--sandbox {level}`",
                _ms(through[level]["throughput_ratio"]),
                str(through[level]["throughput_ratio"]["n"]),
            ]
            for level in ("none", "process")
        ],
    )
    return {"overhead": table, "throughput": ratios}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--throughput-repeats", type=int, default=3)
    args = parser.parse_args(argv)
    command = [
        sys.executable,
        "benchmarks/sandbox_overhead.py",
        "--repeats",
        str(args.repeats),
        "--throughput-repeats",
        str(args.throughput_repeats),
    ]
    result, timing = run_benchmark(command)
    write_figure_set(
        "sandbox_overhead",
        commands=[command_text(["python", *command[1:]])],
        data={"result": result},
        n=f"{args.repeats} repeats of {result['overhead']['evals_per_repeat']} evaluations per "
        f"level; {args.throughput_repeats} runs per throughput level",
        spread="mean ± 95 % t half-width over repeats",
        timings=[timing],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
