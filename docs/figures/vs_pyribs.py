"""Figure set ``vs_pyribs``: DEI's search core next to pyribs (docs/performance.md).

Runs ``benchmarks/vs_pyribs.py`` (pyribs, DEI's ask/tell core and ``dei-run`` with one node on
the same sphere problem, the same number of evaluations) and keeps its JSON lines in
``docs/figures/vs_pyribs.json``; the layout below computes the ratios that issue 21's targets
name (ask/tell overhead at most 5x pyribs', ``dei-run`` at most 10x, evaluations per second at
20 000 evaluations within 20 % of those at 2 000). Usage::

    python docs/figures/vs_pyribs.py            # --evals 2000 20000 --repeats 8
    python docs/figures/vs_pyribs.py --quick    # a tiny run that tests the pipeline
    python docs/figures/render.py               # then render the docs

Needs pyribs (``pip install -e .[test]`` installs ``ribs``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import fmt_number, fmt_percent, markdown_table, run_command, write_figure_set  # noqa: E402

#: (documented run, quick run): evaluation counts (smallest and largest) and repeats.
SETTINGS = {
    "full": {"evals": (2000, 20000), "repeats": 8},
    "quick": {"evals": (500, 2000), "repeats": 2},
}
#: Issue 21's targets: the most DEI's overhead per evaluation may be, in multiples of pyribs'.
OVERHEAD_TARGETS = {"dei-asktell": 5.0, "dei-run": 10.0}
#: Issue 21's target: evaluations per second at the largest run at least this share of those
#: at the smallest (cost independent of archive size).
SCALING_TARGET = 0.8
SYSTEM_NAMES = {"pyribs": "pyribs", "dei-asktell": "DEI ask/tell", "dei-run": "dei-run, one node"}


def benchmark_command(evals: Sequence[int], repeats: int) -> list[str]:
    return [
        "python",
        "benchmarks/vs_pyribs.py",
        "--evals",
        *(str(count) for count in evals),
        "--repeats",
        str(repeats),
    ]


def parse_lines(stdout: str) -> list[dict[str, Any]]:
    """The benchmark's JSON lines (one per system and evaluation count)."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


# --- layout ----------------------------------------------------------------------------------


def line_of(data: Mapping[str, Any], system: str, evals: int) -> Mapping[str, Any] | None:
    return next((r for r in data["results"] if r["system"] == system and r["evals"] == evals), None)


def mean(line: Mapping[str, Any] | None, metric: str) -> float | None:
    return None if line is None else (line.get(metric) or {}).get("mean")


def cpu_rate(line: Mapping[str, Any] | None) -> float | None:
    """Evaluations per CPU second (evaluations over the mean CPU time): on a shared machine
    the throughput figure that does not follow other processes' load."""
    cpu = mean(line, "cpu_s")
    return line["evals"] / cpu if line is not None and cpu else None


def cell(line: Mapping[str, Any], metric: str, digits: int) -> str:
    value = line.get(metric) or {}
    if value.get("mean") is None:
        return "–"
    return (
        f"{fmt_number(value['mean'], digits)} ± {fmt_number(value.get('std') or 0.0, digits)}"
        f" ({value.get('n')})"
    )


def results_table(data: Mapping[str, Any]) -> str:
    header = [
        "evaluations",
        "system",
        "coverage",
        "QD-score",
        "evals/s (wall)",
        "evals per CPU s",
        "overhead µs/eval",
        "overhead vs pyribs",
    ]
    rows = []
    for line in data["results"]:
        ratio = (line.get("ratio_to_pyribs") or {}).get("overhead_us_per_eval")
        rate = cpu_rate(line)
        rows.append(
            [
                str(line["evals"]),
                line["system"],
                cell(line, "coverage", 4),
                cell(line, "qd_score", 0),
                cell(line, "evals_per_s", 0),
                "–" if rate is None else fmt_number(rate, 0),
                cell(line, "overhead_us_per_eval", 1),
                "–" if ratio is None else f"{fmt_number(ratio, 1)}×",
            ]
        )
    return markdown_table(header, rows)


def overhead_ratio(data: Mapping[str, Any], system: str, evals: int) -> float | None:
    reference = mean(line_of(data, "pyribs", evals), "overhead_us_per_eval")
    own = mean(line_of(data, system, evals), "overhead_us_per_eval")
    return own / reference if own is not None and reference else None


def scaling(data: Mapping[str, Any], system: str, *, wall: bool) -> float | None:
    """Evaluations per second at the largest run ÷ at the smallest (CPU or wall seconds)."""
    small, large = min(data["evals"]), max(data["evals"])
    rates = [
        mean(line_of(data, system, evals), "evals_per_s")
        if wall
        else cpu_rate(line_of(data, system, evals))
        for evals in (small, large)
    ]
    return rates[1] / rates[0] if None not in rates and rates[0] else None


def paired(line: Mapping[str, Any] | None) -> str:
    """The paired per-repeat overhead ratio of a line: mean ± std (n) [95 % t interval]."""
    ratio = (line or {}).get("paired_overhead_ratio")
    if not ratio:
        return "–"
    low, high = ratio["ci95"]
    return (
        f"{fmt_number(ratio['mean'], 1)} ± {fmt_number(ratio['std'], 1)} ({ratio['n']}) "
        f"[{fmt_number(low, 1)}, {fmt_number(high, 1)}]"
    )


def verdict(met: bool | None) -> str:
    return "–" if met is None else ("**met**" if met else "**not met**")


def targets(data: Mapping[str, Any]) -> tuple[dict[str, str], str]:
    """Inline values per target and a table of all of them."""
    values: dict[str, str] = {}
    rows = []
    for system, limit in OVERHEAD_TARGETS.items():
        for size, evals in (("smallest", min(data["evals"])), ("largest", max(data["evals"]))):
            ratio = overhead_ratio(data, system, evals)
            met = None if ratio is None else ratio <= limit
            key = f"{system}.overhead-ratio.{size}"
            values[key] = "–" if ratio is None else f"{fmt_number(ratio, 1)}×"
            values[f"{key}.verdict"] = verdict(met)
            values[f"{key}.paired"] = paired(line_of(data, system, evals))
            rows.append(
                [
                    f"{SYSTEM_NAMES[system]}: overhead per evaluation ÷ pyribs', {evals} evals",
                    f"≤ {fmt_number(limit, 0)}×",
                    values[key],
                    values[f"{key}.paired"],
                    values[f"{key}.verdict"],
                ]
            )
    for system in OVERHEAD_TARGETS:
        for wall in (False, True):
            ratio = scaling(data, system, wall=wall)
            met = None if ratio is None else ratio >= SCALING_TARGET
            kind = "wall" if wall else "cpu"
            key = f"{system}.scaling.{kind}"
            values[key] = fmt_percent(ratio, 0)
            values[f"{key}.verdict"] = verdict(met)
            per = "wall second" if wall else "CPU second"
            rows.append(
                [
                    f"{SYSTEM_NAMES[system]}: evals per {per} at {max(data['evals'])} "
                    f"÷ at {min(data['evals'])}",
                    f"≥ {fmt_percent(SCALING_TARGET, 0)}",
                    values[key],
                    "–",
                    values[f"{key}.verdict"],
                ]
            )
    table = markdown_table(
        [
            "target (issue 21)",
            "limit",
            "measured (means)",
            "per repeat: mean ± std (n) [95 % CI]",
            "",
        ],
        rows,
    )
    return values, table


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    values, table = targets(data)
    return values | {
        "command": f"```sh\n{data['command']}\n```",
        "results": results_table(data),
        "targets": table,
        "repeats": str(data["repeats"]),
        "evals": " and ".join(str(count) for count in data["evals"]),
        "largest": str(max(data["evals"])),
        "smallest": str(min(data["evals"])),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run to test the pipeline")
    args = parser.parse_args(argv)
    settings = SETTINGS["quick" if args.quick else "full"]
    command = benchmark_command(settings["evals"], settings["repeats"])
    timing = run_command(command, capture=True)
    results = parse_lines(timing.pop("stdout"))
    if not results:
        raise SystemExit("error: benchmarks/vs_pyribs.py printed no JSON line")
    data = {
        "command": " ".join(command),
        "evals": list(settings["evals"]),
        "repeats": settings["repeats"],
        "problem": "numeric domain default: shifted sphere, 20 dimensions, 100 x 100 grid, "
        "Gaussian mutation sigma 0.5",
        "results": results,
    }
    write_figure_set(
        "vs_pyribs",
        commands=[data["command"]],
        data=data,
        n=f"{settings['repeats']} repeats per system and evaluation count (seeds 0, 1, ...)",
        spread="mean ± sample std (n) over repeats; ratios are of means",
        quick=args.quick,
        timings=[timing],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
