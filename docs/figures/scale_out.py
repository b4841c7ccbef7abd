"""Figure set ``scale_out``: one node's evaluations per second on the local pool and on the Dask
backend with 1 and 2 workers, at dei-paper battle settings (``benchmarks/scale_out.py``).

Usage::

    python docs/figures/scale_out.py [--evals 24] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figurelib import command_text, markdown_table, run_benchmark, write_figure_set  # noqa: E402

SYSTEMS = {
    "local-1": "local pool, 1 worker",
    "local-2": "local pool, 2 workers",
    "dask-1": "dask backend, 1 worker",
    "dask-2": "dask backend, 2 workers",
}


def cell(stat: Mapping[str, Any], digits: int = 1) -> str:
    low, high = stat["ci95"] if stat["n"] > 1 else (None, None)
    interval = f" [{low:.{digits}f}, {high:.{digits}f}]" if low is not None else ""
    return f"{stat['mean']:.{digits}f} ± {stat['std']:.{digits}f}{interval}"


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    result = data["result"]
    systems = result["systems"]
    rows = [
        [label, cell(systems[name]["evals_per_second"]),
         cell(systems[name]["overhead_ms_per_eval"]), cell(systems[name]["eval_ms"]),
         cell(systems[name]["roundtrip_ms"], 2)]
        for name, label in SYSTEMS.items() if name in systems
    ]  # fmt: skip
    n = next(iter(systems.values()))["evals_per_second"]["n"]
    machine = result["machine"]
    load = f"{machine['loadavg_before'][0]:.1f}–{machine['loadavg_after'][0]:.1f}"
    header = [
        "evaluator", f"evaluations/s (mean ± std [95 % CI], n = {n})", "overhead ms/evaluation",
        "ms inside an evaluation", "bare job round trip ms",
    ]  # fmt: skip
    return {
        "table": markdown_table(header, rows),
        "ratio": f"{result.get('dask_2_over_dask_1', float('nan')):.2f}",
        "overhead-ratio": f"{result.get('dask_2_overhead_over_local_2', float('nan')):.2f}",
        "load": load,
        "cores": str(machine["cpus"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    command = [sys.executable, "benchmarks/scale_out.py", "--evals", str(args.evals),
               "--repeats", str(args.repeats)]  # fmt: skip
    result, timing = run_benchmark(command)
    write_figure_set(
        "scale_out",
        commands=[command_text(["python", *command[1:]])],
        data={"result": result},
        n=f"{args.repeats} repeats per evaluator ({args.evals} evaluations each), interleaved",
        spread="mean ± sample std over repeats, 95 % Student t interval",
        timings=[timing],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
