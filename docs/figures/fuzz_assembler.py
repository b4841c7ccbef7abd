"""Figure set ``fuzz_assembler``: a timed fuzzing run of the Redcode assembler.

Runs ``benchmarks/fuzz_assembler.py`` (mutated real warriors and token soup; every input must
end in ``AssemblyError`` or a load image) and records its counts. Usage::

    python docs/figures/fuzz_assembler.py [--seconds 20] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import command_text, markdown_table, run_benchmark, write_figure_set  # noqa: E402


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    result = data["result"]
    table = markdown_table(
        [
            "inputs",
            "corpus (warriors)",
            "assembled",
            "`AssemblyError`",
            "other exceptions",
            "slowest input",
        ],
        [
            [
                f"{result['inputs']:,}".replace(",", " ") + f" in {data['seconds']:g} s (seed "
                f"{result['seed']})",
                str(result["corpus"]),
                str(result["assembled"]),
                str(result["assembly_errors"]),
                f"**{result['other_exceptions']}**",
                f"{result['slowest_seconds']:.2f} s",
            ]
        ],
    )
    return {"summary": table, "other-exceptions": str(result["other_exceptions"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    command = [
        sys.executable,
        "benchmarks/fuzz_assembler.py",
        "--seconds",
        f"{args.seconds:g}",
        "--seed",
        str(args.seed),
    ]
    result, timing = run_benchmark(command)
    write_figure_set(
        "fuzz_assembler",
        commands=[command_text(["python", *command[1:]])],
        data={"result": result, "seconds": args.seconds},
        n="one timed run (the input count depends on the machine's speed and load)",
        spread="none (counts of one run)",
        timings=[timing],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
