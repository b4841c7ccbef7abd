"""Benchmark: DEI against OpenEvolve on the same task, model and number of calls.

Both tools evolve the same task folder: a bundled task of the ``python`` plugin
(``plugins/python/tasks/NAME``, in OpenEvolve's layout, so OpenEvolve reads the folder as it
is) or, for a name that is not bundled, a folder of OpenEvolve's own ``examples/`` (``--examples
DIR``, an OpenEvolve checkout's examples folder, read as it is: by default the third task,
``function_minimization``). Both run against the same scripted models
(``benchmarks/scripted_model.py``: a loopback OpenAI-compatible server that changes the evolve
block of the program each request shows; by default two model names, ``scripted-mixed-diff``
and ``scripted-ast-diff``, which answer SEARCH/REPLACE edits, OpenEvolve's default form): DEI
binds the models to its nodes in turn (one ``--operator`` per model, a Diverse ensemble);
OpenEvolve gets them as its ``llm.models`` ensemble with equal weights. Same number of calls,
islands / nodes, evaluation workers and seed list. Per run the script records:

* ``best``: the best ``combined_score`` of any program the run evaluated (DEI: the merged
  archive; OpenEvolve: its best program);
* ``calls`` the model served, and ``calls_per_s``: those calls over the window from the first
  request's arrival to the last reply sent (interpreter start-up and the final write-out are
  outside it for both tools), and ``wall_s`` of the whole process;
* ``valid`` / ``invalid`` evaluations, and ``coverage`` and ``qd`` of every valid program on
  one common grid: the task's features (``config.yaml``; for a task without any, the
  evaluator metrics of :data:`COMMON_FEATURES`), 10 bins each over ``[0, 1]``, QD-score offset
  -1 (bin packing) or 0 (the others).

Per tool and task: mean, sample std and 95 % t-interval over the seeds; per task, DEI against
OpenEvolve on ``best`` and ``calls_per_s``: the Hodges-Lehmann shift with its exact interval,
A12 and the exact two-sided Mann-Whitney p (``dei_framework.analysis.stats.compare``).

OpenEvolve is not a dependency of DEI: install it next to DEI to run its half
(``pip install openevolve``; measured with 0.4.1). Without it the script says so on standard
error, runs DEI's half and marks OpenEvolve ``skipped`` in the JSON.

Usage::

    python benchmarks/vs_openevolve.py [--tasks bin_packing,circle_packing,function_minimization]
        [--examples OPENEVOLVE/examples] [--seeds 5] [--calls 80] [--nodes 4] [--rounds 4]
        [--workers 2] [--models scripted-mixed-diff,scripted-ast-diff] [--latency-s 0]
        [--tools dei,openevolve]

A task that is neither bundled nor in ``--examples`` is skipped with its reason (on standard
error and under ``tasks_skipped`` in the JSON).

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scripted_model import ScriptedModel  # noqa: E402

from dei_framework.analysis.stats import compare, mean_interval  # noqa: E402

TASKS = ROOT / "plugins" / "python" / "tasks"
#: The QD-score offset of each task on the common grid: a score no program goes below.
FLOORS = {"bin_packing": -1.0, "circle_packing": 0.0}
#: The common grid's features of a task whose ``config.yaml`` names none: evaluator metrics in
#: ``[0, 1]`` (function_minimization: how close the value and the point come to the minimum).
COMMON_FEATURES = {"function_minimization": ("value_score", "distance_score")}
DEFAULT_TASKS = "bin_packing,circle_packing,function_minimization"
DEFAULT_MODELS = "scripted-mixed-diff,scripted-ast-diff"
#: Bins per feature of the common grid (over [0, 1], as DEI reads config.yaml's features).
GRID_BINS = 10
EVAL_TIMEOUT_S = 30
SEED0 = 100


def environment() -> dict[str, str]:
    """The children's environment: a key for the loopback model, no proxy, no cost map
    download."""
    env = dict(os.environ, OPENAI_API_KEY="sk-scripted", LITELLM_LOCAL_MODEL_COST_MAP="True")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env.pop(name, None)
    return env


def features_of(task: Path) -> list[str]:
    """The common grid's features: the task's ``config.yaml`` ``database.feature_dimensions``,
    else :data:`COMMON_FEATURES`."""
    import yaml

    config = yaml.safe_load((task / "config.yaml").read_text()) or {}
    named = list((config.get("database") or {}).get("feature_dimensions") or [])
    return named or list(COMMON_FEATURES.get(task.name, ()))


def find_task(name: str, examples: Path | None) -> tuple[Path | None, str | None]:
    """The folder of task ``name`` (bundled first, then in OpenEvolve's ``examples``), or the
    reason there is none."""
    for folder in (TASKS / name, *((examples / name,) if examples else ())):
        if (folder / "evaluator.py").is_file():
            return folder, None
    where = f"{TASKS}" + (f" or {examples}" if examples else "")
    hint = "" if examples else " (give OpenEvolve's examples folder with --examples DIR)"
    return None, f"no task {name!r} in {where}{hint}"


def common_grid(
    points: Iterable[tuple[float, Mapping[str, float]]], features: Sequence[str], floor: float
) -> dict[str, float]:
    """Coverage and QD-score of valid programs ``(score, features)`` on the common grid."""
    best: dict[tuple[int, ...], float] = {}
    for score, values in points:
        if not math.isfinite(score) or any(values.get(f) is None for f in features):
            continue
        cell = tuple(
            min(GRID_BINS - 1, max(0, int(float(values[f]) * GRID_BINS))) for f in features
        )
        best[cell] = max(best.get(cell, -math.inf), score)
    return {
        "coverage": len(best) / GRID_BINS ** len(features),
        "qd": sum(score - floor for score in best.values()),
    }


def run_dei(
    task: Path, *, seed: int, args: argparse.Namespace, model: ScriptedModel, scratch: Path
) -> dict[str, Any]:
    """One ``dei-run`` of ``task`` against the scripted model; its measures."""
    out = scratch / f"dei-{task.name}-{seed}"
    operators = [part for name in models(args) for part in ("--operator", f"openai/{name}")]
    command = [
        str(Path(sys.executable).parent / "dei-run"),
        "--domain",
        "python",
        "--task",
        str(task),
        *operators,
        "--api-base",
        model.api_base,
        "--nodes",
        str(args.nodes),
        "--budget",
        str(args.calls),
        "--rounds",
        str(args.rounds),
        "--seed",
        str(seed),
        "--eval-workers",
        str(args.workers),
        "--eval-timeout",
        str(EVAL_TIMEOUT_S),
        "--out",
        str(out),
        "--progress",
        "quiet",
        "--no-report",
    ]
    start = time.perf_counter()
    done = subprocess.run(command, env=environment(), capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"error: dei-run failed ({done.returncode}): {done.stderr[-2000:]}")
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    evaluated = [e for e in events if e["event"] == "evaluated"]
    valid = [e for e in evaluated if e["status"] != "invalid" and e.get("fitness") is not None]
    # The common grid may name evaluator metrics that are not the run's descriptor.
    points = [
        (e["fitness"], {**((e.get("info") or {}).get("metrics") or {}), **e["descriptor"]})
        for e in valid
    ]
    proposed = [e for e in evaluated if e["kind"] in ("new", "mutate")]
    archive = json.loads((out / "merged_archive.json").read_text())
    return {
        "best": max(elite["fitness"] for elite in archive),
        "proposed": len(proposed),
        "invalid": sum(e["status"] == "invalid" for e in proposed),
        "points": points,
        "wall_s": wall,
    }


def run_openevolve(
    task: Path, *, seed: int, args: argparse.Namespace, model: ScriptedModel, scratch: Path
) -> dict[str, Any]:
    """One OpenEvolve run of ``task`` (in a child process, as its CLI would be)."""
    out = scratch / f"openevolve-{task.name}-{seed}"
    request = {
        "task": str(task),
        "seed": seed,
        "calls": args.calls,
        "nodes": args.nodes,
        "workers": args.workers,
        "models": models(args),
        "api_base": model.api_base,
        "out": str(out),
    }
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--openevolve-child", json.dumps(request)],
        env=environment(),
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(
            f"error: the OpenEvolve run failed ({done.returncode}): {done.stderr[-2000:]}"
        )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {**result, "wall_s": wall}


def openevolve_child(request: Mapping[str, Any]) -> None:
    """Runs OpenEvolve once (``--openevolve-child``) and prints its measures as JSON."""
    import asyncio
    import logging

    from openevolve.config import Config, LLMModelConfig
    from openevolve.controller import OpenEvolve

    task = Path(request["task"])
    config = Config.from_yaml(task / "config.yaml")
    config.random_seed = request["seed"]
    config.database.random_seed = request["seed"]
    config.max_iterations = request["calls"]
    config.checkpoint_interval = request["calls"] + 1  # the run's end writes the only one
    config.log_level = "WARNING"
    config.database.num_islands = request["nodes"]
    config.evaluator.parallel_evaluations = request["workers"]
    config.evaluator.timeout = EVAL_TIMEOUT_S
    # OpenEvolve 0.4.1 ends a cascade whose evaluator has no evaluate_stage2 at stage 1, so it
    # would never call evaluate(): without the cascade both tools score with evaluate().
    config.evaluator.cascade_evaluation = False
    config.llm.api_base = request["api_base"]
    config.llm.retries = 0
    ensemble = [
        LLMModelConfig(
            name=name,
            api_base=request["api_base"],
            api_key="sk-scripted",
            weight=1.0 / len(request["models"]),
            temperature=0.7,
            max_tokens=4096,
            timeout=60,
            retries=0,
            retry_delay=0,
            random_seed=request["seed"],
        )
        for name in request["models"]
    ]
    config.llm.models, config.llm.evaluator_models = ensemble, ensemble
    logging.disable(logging.WARNING)
    controller = OpenEvolve(
        initial_program_path=str(task / "initial_program.py"),
        evaluation_file=str(task / "evaluator.py"),
        config=config,
        output_dir=request["out"],
    )
    best = asyncio.run(controller.run(iterations=request["calls"]))
    programs = list(controller.database.programs.values())
    scored = [
        p
        for p in programs
        if isinstance((p.metrics or {}).get("combined_score"), int | float)
        and "error" not in (p.metrics or {})
    ]
    print(
        json.dumps(
            {
                "best": float((best.metrics or {}).get("combined_score", math.nan))
                if best
                else None,
                "proposed": len(programs) - 1,  # the initial program is not a call's
                "invalid": len(programs) - len(scored),
                "points": [(float(p.metrics["combined_score"]), p.metrics) for p in scored],
            }
        )
    )


def stat(values: Sequence[float]) -> dict[str, Any]:
    """Mean, sample std, 95 % t-interval, n and the values."""
    mean, std, half = mean_interval(values)
    return {
        "mean": mean,
        "std": std,
        "n": len(values),
        "values": list(values),
        "ci95": None if half is None else [mean - half, mean + half],
    }


def run_once(
    tool: str, task: Path, seed: int, args: argparse.Namespace, scratch: Path
) -> dict[str, Any]:
    """One run of ``tool`` on ``task`` against a fresh scripted model; its measures."""
    runner = run_dei if tool == "dei" else run_openevolve
    model = ScriptedModel(seed=seed, latency_s=args.latency_s).start()
    try:
        run = runner(task, seed=seed, args=args, model=model, scratch=scratch)
        window, calls = model.window_s(), sum(model.by_model.values())
    finally:
        model.stop()
    grid = common_grid(run.pop("points"), features_of(task), FLOORS.get(task.name, 0.0))
    print(
        f"{tool} {task.name} seed {seed}: best {run['best']:.6f}, {calls} calls in {window:.2f} s",
        file=sys.stderr,
        flush=True,
    )
    return {
        "seed": seed,
        **run,
        **grid,
        "calls": calls,
        "window_s": window,
        "calls_per_s": calls / window if window else None,
        "unreadable_prompts": model.unreadable,
    }


def summarise(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The runs and, per measure, :func:`stat` over them."""
    summary = {
        key: stat([run[key] for run in runs if run[key] is not None])
        for key in ("best", "calls_per_s", "coverage", "qd", "wall_s", "calls", "invalid")
    }
    return {"runs": list(runs), **summary}


def models(args: argparse.Namespace) -> list[str]:
    """The scripted model names of ``--models``."""
    return [name for name in args.models.split(",") if name]


def openevolve_version() -> str | None:
    if importlib.util.find_spec("openevolve") is None:
        return None
    return importlib.metadata.version("openevolve")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=DEFAULT_TASKS)
    parser.add_argument(
        "--examples",
        type=Path,
        default=os.environ.get("OPENEVOLVE_EXAMPLES"),
        help="OpenEvolve's examples folder (default: $OPENEVOLVE_EXAMPLES), for tasks not bundled",
    )
    parser.add_argument("--tools", default="dei,openevolve")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=80)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--models", default=DEFAULT_MODELS, help="scripted model names, a,b")
    parser.add_argument("--latency-s", type=float, default=0.0)
    parser.add_argument("--openevolve-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.openevolve_child:
        openevolve_child(json.loads(args.openevolve_child))
        return 0
    tools = args.tools.split(",")
    version = openevolve_version()
    skipped = None
    if "openevolve" in tools and version is None:
        skipped = (
            "OpenEvolve is not installed (it is not a DEI dependency): "
            "pip install openevolve, then run this again"
        )
        print(f"vs_openevolve: {skipped}; running DEI's half only", file=sys.stderr)
        tools.remove("openevolve")
    result: dict[str, Any] = {
        "settings": {
            key: getattr(args, key)
            for key in ("seeds", "calls", "nodes", "rounds", "workers", "latency_s")
        }
        | {"models": models(args)},
        "seeds": list(range(SEED0, SEED0 + args.seeds)),
        "openevolve_version": version,
        "openevolve_skipped": skipped,
        "grid": {"bins": GRID_BINS, "bounds": [0.0, 1.0], "floors": FLOORS},
        "common_features": COMMON_FEATURES,
        "tasks": {},
        "tasks_skipped": {},
    }
    with tempfile.TemporaryDirectory(prefix="vs-openevolve-") as scratch:
        for name in args.tasks.split(","):
            task, reason = find_task(name, args.examples)
            if task is None:
                print(f"vs_openevolve: skipped: {reason}", file=sys.stderr)
                result["tasks_skipped"][name] = reason
                continue
            block: dict[str, Any] = {"features": features_of(task), "folder": str(task)}
            runs: dict[str, list[dict[str, Any]]] = {tool: [] for tool in tools}
            for seed in result["seeds"]:  # the tools take turns: load drifts hit both alike
                for tool in tools:
                    runs[tool].append(run_once(tool, task, seed, args, Path(scratch)))
            block |= {tool: summarise(tool_runs) for tool, tool_runs in runs.items()}
            if "dei" in block and "openevolve" in block:
                block["comparisons"] = [
                    compare(
                        "dei",
                        block["dei"][metric]["values"],
                        "openevolve",
                        block["openevolve"][metric]["values"],
                        metric,
                    )
                    for metric in ("best", "calls_per_s", "coverage", "qd")
                ]
            result["tasks"][name] = block
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
