"""Figure set ``families``: the offline operator-family experiment of docs/experiments.md.

Runs ``dei experiment`` on the four Core War families (Solo, a Homo per family, Diverse) at
equal compute, then extracts the conditions and the comparisons from the experiment's
``summary.json`` into ``docs/figures/families.json``. Usage::

    python docs/figures/families.py                  # the documented run: 10 repeats
    python docs/figures/families.py --repeats 5 --parallel 2
    python docs/figures/families.py --quick          # a tiny run that tests the pipeline
    python docs/figures/families.py --extract-only   # re-read an existing experiment
    python docs/figures/render.py                    # then render the docs

``--parallel P`` runs the repeats as P single-repeat experiments at once (repeat k is the
single-repeat experiment of seed ``--seed + k``, the same configuration, which ``dei experiment
--resume`` verifies run by run when it aggregates them into the one experiment directory).
The full run writes the trimmed run folders (``config.json``, ``summary.json``,
``merged_archive.json``) and the report to ``docs/example-report/families``; a quick run writes to
``runs/figures-families-quick`` and is marked ``quick`` in the JSON (the docs then say so).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))

from figurelib import (  # noqa: E402
    ROOT,
    command_text,
    comparison_values,
    comparisons_table,
    conditions_table,
    environment,
    executable,
    extract_experiment,
    methods_text,
    previous_record,
    repo_relative,
    run_command,
    shell_lines,
    trim_runs,
    write_figure_set,
)

FAMILIES = ("bombers", "papers", "scanners", "imps")
#: The experiment's settings: (documented run, quick run).
SETTINGS = {
    "full": {
        "budget": 640,
        "rounds": 10,
        "domain_rounds": 4,
        "cycles": 8000,
        "repeats": 10,
        "out": "docs/example-report/families",
    },
    "quick": {
        "budget": 32,
        "rounds": 2,
        "domain_rounds": 2,
        "cycles": 2000,
        "repeats": 2,
        "out": "runs/figures-families-quick",
    },
}
SEED = 100
#: Summary fields of each condition shown in the tables: (column, field path, as percent).
CONDITION_COLUMNS = (
    ("coverage (common)", "merged.common.coverage", True),
    ("QD-score (common)", "merged.common.qd_score", False),
    ("coverage (raw)", "merged.coverage", True),
    ("QD-score (raw)", "merged.qd_score", False),
    ("niche novelty", "niche_novelty", False),
    ("operator divergence", "operator_divergence", False),
)


def experiment_command(
    settings: Mapping[str, Any], *, repeats: int, seed: int, out: str, eval_workers: int
) -> list[str]:
    """The ``dei experiment`` command line of the family experiment."""
    command = ["dei", "experiment", "--domain", "coreware"]
    for family in FAMILIES:
        command += ["--operator", family]
    command += [
        "--conditions",
        "solo,homo,diverse",
        "--budget",
        str(settings["budget"]),
        "--rounds",
        str(settings["rounds"]),
        "--repeats",
        str(repeats),
        "--seed",
        str(seed),
        "--domain-option",
        f"rounds={settings['domain_rounds']}",
        "--domain-option",
        f"cycles={settings['cycles']}",
        "--domain-option",
        f"generality_rounds={settings['domain_rounds']}",
        "--eval-workers",
        str(eval_workers),
        "--out",
        out,
        "--progress",
        "quiet",
    ]
    return command


def run_parallel(
    settings: Mapping[str, Any], *, repeats: int, parallel: int, out: Path, eval_workers: int
) -> list[dict[str, Any]]:
    """Runs repeat k as the single-repeat experiment of seed SEED + k, P at a time, then
    moves its runs into ``out`` and lets ``dei experiment --resume`` aggregate (it checks each
    run's configuration against the plan)."""
    shards = [out.parent / f"{out.name}.repeat-{k}" for k in range(repeats)]
    commands = [
        experiment_command(
            settings, repeats=1, seed=SEED + k, out=repo_relative(shard), eval_workers=eval_workers
        )
        + ["--no-report"]
        for k, shard in enumerate(shards)
    ]
    timings = []
    pending = list(zip(range(repeats), commands, strict=True))
    running: list[tuple[int, subprocess.Popen[bytes], float]] = []
    while pending or running:
        while pending and len(running) < parallel:
            k, command = pending.pop(0)
            print(f"$ {command_text(command)}", file=sys.stderr, flush=True)
            running.append(
                (
                    k,
                    subprocess.Popen(executable(command), cwd=ROOT, env=environment()),
                    time.perf_counter(),
                )
            )
        time.sleep(1)
        for entry in list(running):
            k, process, start = entry
            if process.poll() is None:
                continue
            running.remove(entry)
            if process.returncode != 0:
                raise SystemExit(f"error: repeat {k} exited with {process.returncode}")
            timings.append(
                {
                    "repeat": k,
                    "command": command_text(commands[k]),
                    "wall_s": round(time.perf_counter() - start, 2),
                }
            )
    timings.sort(key=lambda timing: timing["repeat"])
    plan = json.loads((shards[0] / "experiment.json").read_text())
    plan["repeats"] = repeats
    out.mkdir(parents=True)
    (out / "experiment.json").write_text(json.dumps(plan, indent=1))
    for k, shard in enumerate(shards):
        for condition_dir in sorted(p for p in shard.iterdir() if p.is_dir()):
            (out / condition_dir.name).mkdir(exist_ok=True)
            (condition_dir / "repeat-0").rename(out / condition_dir.name / f"repeat-{k}")
        shutil.rmtree(shard)
    timings.append(
        run_command(["dei", "experiment", "--resume", repo_relative(out), "--progress", "quiet"])
    )
    return timings


def extract(summary: Mapping[str, Any]) -> dict[str, Any]:
    """What the figures need from the experiment's ``summary.json`` (see
    :func:`figurelib.extract_experiment`)."""
    return extract_experiment(summary, CONDITION_COLUMNS)


def figures(data: Mapping[str, Any]) -> dict[str, str]:
    """The figures of this set, by name (see docs/figures/render.py)."""
    seeds = data.get("seeds") or []
    values = {
        "repeats": str(data.get("repeats")),
        "seeds": f"{seeds[0]}–{seeds[-1]}" if seeds else "–",
        "budget": str(data.get("budget")),
        "rounds": str(data.get("rounds")),
        "equal-compute": "held" if data.get("equal_compute") else "did not hold",
    }
    values["command"] = "```sh\n" + shell_lines(data.get("command", "")) + "\n```"
    values |= comparison_values(data)
    homo = {name: block for name, block in data["conditions"].items() if name.startswith("homo")}
    values["homo-families"] = conditions_table({"conditions": homo}, CONDITION_COLUMNS)
    values["all-conditions"] = conditions_table(data, CONDITION_COLUMNS)
    values["diverse-vs-common"] = comparisons_table(
        data,
        (
            ("coverage (common)", "merged.common.coverage", True),
            ("QD-score (common)", "merged.common.qd_score", False),
        ),
    )
    values["diverse-vs-raw"] = comparisons_table(
        data,
        (("coverage (raw)", "merged.coverage", True), ("QD-score (raw)", "merged.qd_score", False)),
    )
    values["methods"] = methods_text(data)
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a tiny run (2 repeats, 2 rounds, 32 calls) to test the pipeline",
    )
    parser.add_argument("--repeats", type=int, help="repeats per condition (default 10; quick 2)")
    parser.add_argument(
        "--parallel", type=int, default=1, metavar="P", help="run P repeats at once (default 1)"
    )
    parser.add_argument(
        "--eval-workers", type=int, default=1, help="evaluation processes per run (default 1)"
    )
    parser.add_argument("--out", help="experiment directory (default: see the module docstring)")
    parser.add_argument(
        "--extract-only", action="store_true", help="run nothing; re-read the experiment in --out"
    )
    parser.add_argument(
        "--keep-runs",
        action="store_true",
        help="do not trim run folders to config, summary and merged archive",
    )
    args = parser.parse_args(argv)
    settings = SETTINGS["quick" if args.quick else "full"]
    repeats = args.repeats or settings["repeats"]
    out = ROOT / (args.out or settings["out"])
    command = experiment_command(
        settings, repeats=repeats, seed=SEED, out=repo_relative(out), eval_workers=args.eval_workers
    )
    timings: list[dict[str, Any]] = []
    totals = git = None
    if not args.extract_only:
        if out.exists() and args.quick:
            shutil.rmtree(out)  # a quick run's folder is scratch
        if out.exists():
            raise SystemExit(
                f"error: {out} exists; remove it for a fresh run, or pass "
                "--extract-only to re-read it"
            )
        if args.parallel > 1:
            timings = run_parallel(
                settings,
                repeats=repeats,
                parallel=args.parallel,
                out=out,
                eval_workers=args.eval_workers,
            )
        else:
            timings = [run_command(command)]
        if not args.keep_runs:
            trim_runs(out)
    summary = json.loads((out / "summary.json").read_text())
    data = extract(summary)
    if data["repeats"] != repeats:  # --extract-only of an experiment run with other repeats
        repeats = data["repeats"]
        command = experiment_command(
            settings,
            repeats=repeats,
            seed=SEED,
            out=repo_relative(out),
            eval_workers=args.eval_workers,
        )
    n = f"{data['repeats']} repeats per condition (seeds {figures(data)['seeds']})"
    # A parallel run's commands are the single-repeat experiments and the aggregation; the
    # serial command, which gives the same runs, is recorded too.
    commands = [t["command"] for t in timings] if args.parallel > 1 else [command_text(command)]
    previous = previous_record("families")
    if args.extract_only and previous and previous["data"].get("command") == command_text(command):
        # The run's commands and cost, not those of this re-reading.
        commands, timings = previous["commands"], previous["timings"]
        totals, git = previous.get("totals"), previous.get("git")
    data["command"] = command_text(command)
    write_figure_set(
        "families",
        commands=commands,
        data=data,
        n=n,
        totals=totals,
        git=git,
        spread="mean ± sample std over repeats; differences of means with the "
        "interval and test named in each comparison",
        quick=args.quick,
        timings=timings,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
