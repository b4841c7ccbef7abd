"""Figure set ``vs_openevolve``: DEI against OpenEvolve on three python tasks.

Runs ``benchmarks/vs_openevolve.py`` (the bundled bin packing and circle packing, and
OpenEvolve's own ``function_minimization`` example read from an OpenEvolve checkout; two
scripted loopback model names per tool, the same calls, islands / nodes, workers and seeds).
Needs OpenEvolve installed next to DEI (``pip install openevolve``; it is not a DEI
dependency) and its examples folder (``git clone https://github.com/codelion/openevolve``).
Usage::

    python docs/figures/vs_openevolve.py --examples OPENEVOLVE/examples [--seeds 5] [--calls 80]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import (  # noqa: E402
    command_text,
    fmt_number,
    fmt_p,
    markdown_table,
    run_benchmark,
    write_figure_set,
)

#: The measures of the tables: (label, key, decimals).
MEASURES = (
    ("best score", "best", 5),
    ("calls / s", "calls_per_s", 2),
    ("coverage (common grid)", "coverage", 3),
    ("QD-score (common grid)", "qd", 3),
    ("invalid replies", "invalid", 1),
)


def _mean_ci(stat: Mapping[str, Any], digits: int) -> str:
    text = f"{fmt_number(stat['mean'], digits)} ± {fmt_number(stat['std'], digits)}"
    if stat.get("ci95"):
        low, high = stat["ci95"]
        text += f" [{fmt_number(low, digits)}, {fmt_number(high, digits)}]"
    return text


def _task_table(block: Mapping[str, Any]) -> str:
    tools = [tool for tool in ("dei", "openevolve") if tool in block]
    compared = {entry["metric"]: entry for entry in block.get("comparisons", [])}
    header = [
        "measure",
        *(f"{'DEI' if t == 'dei' else 'OpenEvolve'} (n = {block[t]['best']['n']})" for t in tools),
    ]
    if compared:
        header += ["DEI − OpenEvolve: shift [interval]", "p", "A12"]
    rows = []
    for label, key, digits in MEASURES:
        row = [label, *(_mean_ci(block[tool][key], digits) for tool in tools)]
        if compared:
            entry = compared.get(key)
            if entry is None:
                row += ["–", "–", "–"]
            else:
                interval = entry.get("ci") or [None, None]
                row += [
                    f"{fmt_number(entry['shift'], digits, signed=True)} "
                    f"[{fmt_number(interval[0], digits, signed=True)}, "
                    f"{fmt_number(interval[1], digits, signed=True)}]",
                    fmt_p(entry.get("p_value")),
                    fmt_number(entry.get("a12"), 2),
                ]
        rows.append(row)
    return markdown_table(header, rows)


def _verdict(block: Mapping[str, Any]) -> str:
    """One sentence per done-when criterion, read off the data."""
    if "openevolve" not in block:
        return "OpenEvolve was not run."
    dei, other = block["dei"], block["openevolve"]
    best_holds = dei["best"]["mean"] >= other["best"]["mean"]
    speed_holds = dei["calls_per_s"]["mean"] > other["calls_per_s"]["mean"]
    entry = {e["metric"]: e for e in block["comparisons"]}
    return (
        f"Best score: DEI's mean is {'at least' if best_holds else 'below'} OpenEvolve's "
        f"(difference {fmt_number(dei['best']['mean'] - other['best']['mean'], 5, signed=True)}"
        f", p = {fmt_p(entry['best'].get('p_value'))}). Throughput: DEI's mean is "
        f"{'higher' if speed_holds else 'not higher'} "
        f"({fmt_number(dei['calls_per_s']['mean'], 2)} against "
        f"{fmt_number(other['calls_per_s']['mean'], 2)} calls/s, p = "
        f"{fmt_p(entry['calls_per_s'].get('p_value'))})."
    )


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    result = data["result"]
    settings = result["settings"]
    # Records before the two-model benchmark name one model.
    names = settings.get("models") or [settings["model"]]
    values = {
        "settings": (
            f"{settings['calls']} calls per run, {settings['nodes']} islands / nodes, "
            f"{settings['workers']} evaluation workers, "
            f"model{'s' if len(names) > 1 else ''} {', '.join(f'`{n}`' for n in names)}, "
            f"latency {settings['latency_s']:g} s, seeds "
            f"{result['seeds'][0]}–{result['seeds'][-1]}, OpenEvolve "
            f"{result['openevolve_version'] or 'not installed'}"
        )
    }
    for name, block in result["tasks"].items():
        values[name] = _task_table(block)
        values[f"{name}-verdict"] = _verdict(block)
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=80)
    parser.add_argument("--examples", default=os.environ.get("OPENEVOLVE_EXAMPLES"))
    args = parser.parse_args(argv)
    if not args.examples:
        raise SystemExit("error: give OpenEvolve's examples folder with --examples DIR")
    command = [
        sys.executable,
        "benchmarks/vs_openevolve.py",
        "--seeds",
        str(args.seeds),
        "--calls",
        str(args.calls),
        "--examples",
        args.examples,
    ]
    result, timing = run_benchmark(command)
    if result.get("openevolve_skipped"):
        raise SystemExit(f"error: {result['openevolve_skipped']}")
    if result.get("tasks_skipped"):
        raise SystemExit(f"error: tasks skipped: {result['tasks_skipped']}")
    write_figure_set(
        "vs_openevolve",
        commands=[command_text(["python", *command[1:]])],
        data={"result": result},
        n=f"{args.seeds} seeds per tool and task ({args.calls} calls each)",
        spread="mean ± sample std [95 % t-interval] over seeds; DEI − OpenEvolve: "
        "Hodges-Lehmann shift with its exact distribution-free interval, exact two-sided "
        "Mann-Whitney p, A12",
        timings=[timing],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
