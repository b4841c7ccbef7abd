"""Equal-compute experiments: Solo / Homo / Diverse (or custom) ensembles over repeated seeds.

An experiment runs every *condition* ``repeats`` times with the same total operator-call budget
(DEI's equal-compute protocol): Solo is one node with the whole budget, Homo ``N`` nodes of one
operator (``homo:<operator>``, one such condition per distinct operator when several are
given), Diverse ``N`` nodes cycling the given operators; custom conditions list one operator
per node. Repeat ``k`` of every condition uses seed ``seed + k``, so conditions meet the same
seeds. Every run measures common ground (:mod:`dei_framework.analysis.common_ground`), and the
summary compares
Diverse with every other condition (:mod:`dei_framework.analysis.stats`). Layout of the output
directory::

    experiment.json                 the plan (base config, conditions, budget, repeats)
    <condition>/repeat-<k>/         a normal run directory (see dei_framework.runtime.files.run_dir)
    summary.json                    per-condition aggregates and comparisons
                                    (see docs/experiments.md)

An interrupted experiment continues with ``dei experiment --resume OUT``: finished repeats (those
with ``summary.json``) are kept, unfinished ones resume from their last checkpoint.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from dei_framework.contract.errors import ConfigError
from dei_framework.contract.run_summary import RunSummary
from dei_framework.experiment.plan import Condition, ExperimentPlan, load_plan
from dei_framework.experiment.summary import summarize_experiment
from dei_framework.plugin.manager import PluginRegistry
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.files.run_dir import RunDir, write_json_atomic
from dei_framework.runtime.files.run_files import read_finished_summary
from dei_framework.runtime.files.run_layout import (
    CHECKPOINT_FILE,
    CONFIG_FILE,
    EXPERIMENT_FILE,
    LOGS,
    SUMMARY_FILE,
)

#: Importable from here as the library examples do (docs/experiments.md).
__all__ = ["Condition", "ExperimentPlan", "run_experiment"]


Announce = Callable[[str], None]


def run_experiment(
    plan: ExperimentPlan,
    out: str | Path,
    *,
    registry: PluginRegistry | None = None,
    progress: str = "quiet",
    announce: Announce | None = None,
    parallel: int = 1,
) -> dict[str, Any]:
    """Runs (or continues) every repeat of every condition; returns the experiment summary.

    Repeats go outermost, so an interrupted experiment has balanced conditions. A repeat whose
    run directory holds ``summary.json`` is skipped; one with ``config.json`` only is resumed.
    With ``parallel > 1`` that many runs go at once, each in its own process (they are
    independent and seeded, so the summary is the one the sequential order gives; runs then
    show no progress display, and each loads the plugins its entry points provide).

    Args:
        plan: The experiment.
        out: The experiment directory (``experiment.json`` is written there).
        registry: Loaded plugins (default: discover them).
        progress: Progress mode of each run (see
        :func:`dei_framework.runtime.progress.make_progress`).
        announce: Called with one line per run started, skipped or finished.
        parallel: Runs at once (``--parallel``).

    Raises:
        ConfigError: ``out`` holds a different experiment, or ``parallel`` is below 1.
    """
    if parallel < 1:
        raise ConfigError(f"--parallel must be at least 1, got {parallel}")
    from dei_framework.plugin.manager import load_plugins
    from dei_framework.runtime.ensemble import run
    from dei_framework.runtime.progress import make_progress

    out = Path(out)
    registry = registry or load_plugins()
    announce = announce or (lambda line: None)
    plan_path = out / EXPERIMENT_FILE
    if plan_path.exists():
        recorded = load_plan(out)
        if _canonical(attrs.evolve(recorded, repeats=plan.repeats)) != _canonical(plan):
            raise ConfigError(
                f"{out} holds a different experiment; continue it with "
                f"--resume {out} or choose another --out"
            )
    runs = _planned_runs(plan, out)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(plan_path, plan.to_json())
    apart: list[tuple[str, RunConfig, Path, bool]] = []  # runs for other processes
    for label, config, run_dir, resume in runs:
        if config is None:
            announce(f"{label}: already finished")
            continue
        announce(
            f"{label}: {'resuming' if resume else 'running'} "
            f"{len(config.nodes)} node(s), {plan.budget} calls"
        )
        if parallel > 1:
            apart.append((label, config, run_dir, resume))
            continue
        started = time.monotonic()
        display = make_progress(progress, config)
        with display:
            summary = run(
                config, run_dir, registry=registry, resume=resume, progress=display.update
            )
        _announce_finished(announce, label, summary, started)
    if apart:
        _run_apart(apart, parallel, announce)
    summary = summarize_experiment(out, plan)
    write_json_atomic(out / SUMMARY_FILE, summary)
    return summary


def _planned_runs(
    plan: ExperimentPlan, out: Path
) -> list[tuple[str, RunConfig | None, Path, bool]]:
    """Every repeat of every condition, repeats outermost: ``(label, config, run directory,
    resume)``, with ``config`` ``None`` for a finished repeat.

    Every repeat is looked at before anything is written: a damaged one (a finished repeat's
    summary, an unfinished one's configuration) is refused with the directory as it was.

    Raises:
        ConfigError: a run directory holds a run of another configuration, or a run's logs
            without its ``config.json``.
    """
    total = plan.repeats * len(plan.conditions)
    runs: list[tuple[str, RunConfig | None, Path, bool]] = []
    for repeat in range(plan.repeats):
        for condition in plan.conditions:
            run_dir = plan.run_dir(out, condition, repeat)
            label = (
                f"[{len(runs) + 1}/{total}] {condition.name} repeat {repeat} "
                f"(seed {plan.seed(repeat)})"
            )
            if (run_dir / SUMMARY_FILE).exists():
                read_finished_summary(run_dir)
                runs.append((label, None, run_dir, False))
                continue
            config = plan.run_config(condition, repeat)
            resume = (run_dir / CONFIG_FILE).exists()
            if resume:
                recorded = RunDir(run_dir).read_config()
                if not config.lifecycle:  # the domain's default: the run recorded which it was
                    config = attrs.evolve(config, lifecycle=recorded.lifecycle)
                if _canonical(recorded) != _canonical(config):
                    raise ConfigError(f"{run_dir} holds a run with another configuration")
            else:
                logs = [name for name in (CHECKPOINT_FILE, *LOGS) if (run_dir / name).exists()]
                if logs:
                    raise ConfigError(
                        f"{run_dir / CONFIG_FILE} is missing, but the directory "
                        f"holds a run's {', '.join(logs)}: refusing to start a "
                        "new run over them"
                    )
            runs.append((label, config, run_dir, resume))
    return runs


def _announce_finished(announce: Announce, label: str, summary: RunSummary, started: float) -> None:
    merged, budget = summary.merged, summary.budget
    common = merged.common or {}
    announce(
        f"{label}: common-ground coverage {common.get('coverage', 0.0):.1%}, "
        f"QD-score {common.get('qd_score', 0.0):.2f} (raw "
        f"{merged.stats.coverage:.1%}, "
        f"{merged.stats.qd_score:.2f}), "
        f"{budget['calls']}/{budget['limit']} calls, "
        f"{time.monotonic() - started:.0f}s"
    )


def _run_apart(
    runs: Sequence[tuple[str, RunConfig, Path, bool]], parallel: int, announce: Announce
) -> None:
    """Runs ``(label, config, run directory, resume)`` items ``parallel`` at a time, each in a
    process of its own (spawned: the parent may hold an event loop and HTTP clients).

    Each run checkpoints as it goes, so an interrupted fan-out resumes like a sequential one.
    The first run that fails stops the others from starting; its error is raised.
    """
    import concurrent.futures
    import multiprocessing

    started = time.monotonic()
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=parallel, mp_context=context) as pool:
        pending = {
            pool.submit(_run_in_process, config, str(run_dir), resume): label
            for label, config, run_dir, resume in runs
        }
        try:
            for future in concurrent.futures.as_completed(pending):
                _announce_finished(announce, pending[future], future.result(), started)
        except BaseException:
            for future in pending:
                future.cancel()
            raise


def _run_in_process(config: RunConfig, run_dir: str, resume: bool) -> dict[str, Any]:
    """One run of a fan-out, in a worker process: the plugins the entry points provide."""
    import os

    from dei_framework.plugin.manager import DISABLE_PLUGINS_VARIABLE, load_plugins
    from dei_framework.runtime.ensemble import run

    disabled = [
        name.strip()
        for name in os.environ.get(DISABLE_PLUGINS_VARIABLE, "").split(",")
        if name.strip()
    ]
    return run(config, run_dir, registry=load_plugins(disabled=disabled), resume=resume)


#: RunConfig fields that say where evaluations run, not what a run computes: a resumed
#: experiment may change them (``--evaluator-address`` after the scheduler moved, ...).
PLACEMENT_FIELDS = ("eval_workers", "evaluator", "evaluator_address", "evaluator_options")


def _canonical(value: ExperimentPlan | RunConfig) -> str:
    # Compared through JSON: a recorded plan comes back with lists where tuples were.
    data = value.to_json()
    config = data.get("base", data) if isinstance(value, ExperimentPlan) else data
    for field in PLACEMENT_FIELDS:
        config.pop(field, None)
    return json.dumps(data, sort_keys=True)
