"""Equal-compute experiments: Solo / Homo / Diverse (or custom) ensembles over repeated seeds.

An experiment runs every *condition* ``repeats`` times with the same total operator-call budget
(DEI's equal-compute protocol): Solo is one node with the whole budget, Homo ``N`` nodes of one
operator (``homo:<operator>``, one such condition per distinct operator when several are
given), Diverse ``N`` nodes cycling the given operators; custom conditions list one operator
per node. Repeat ``k`` of every condition uses seed ``seed + k``, so conditions meet the same
seeds. Every run measures common ground (:mod:`dei_framework.common`), and the summary compares
Diverse with every other condition (:mod:`dei_framework.stats`). Layout of the output
directory::

    experiment.json                 the plan (base config, conditions, budget, repeats)
    <condition>/repeat-<k>/         a normal run directory (see dei_framework.runlog)
    summary.json                    per-condition aggregates and comparisons
                                    (see docs/experiments.md)

An interrupted experiment continues with ``dei experiment --resume OUT``: finished repeats (those
with ``summary.json``) are kept, unfinished ones resume from their last checkpoint.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from dei_framework.config import (
    DEFAULT_CALLS_PER_NODE,
    NodeConfig,
    RunConfig,
    load_toml,
    resolve_config,
)
from dei_framework.context import FactoryContext
from dei_framework.errors import ConfigError
from dei_framework.plugins import PluginRegistry
from dei_framework.presets import get_preset, warn_overrides
from dei_framework.runlog import write_json_atomic
from dei_framework.stats import compare, holm

#: The built-in conditions, in report order.
BUILTIN_CONDITIONS = ("solo", "homo", "diverse")
#: Nodes of Homo and Diverse when ``--nodes`` is not given (the DEI paper's four).
DEFAULT_EXPERIMENT_NODES = 4
#: Version of ``experiment.json`` and of the experiment ``summary.json``.
EXPERIMENT_VERSION = 1
#: Per-node fields of a run summary too bulky to copy into the experiment summary.
_TRIMMED_NODE_FIELDS = ("operator_status",)
#: The condition :func:`comparisons` compares every other condition with.
REFERENCE_CONDITION = "diverse"
#: Metrics compared between conditions: the common-ground ones first, then the raw ones.
COMPARED_METRICS = ("merged.common.coverage", "merged.common.qd_score", "merged.coverage",
                    "merged.qd_score")  # fmt: skip


@attrs.frozen(kw_only=True)
class Condition:
    """One arm of an experiment.

    Attributes:
        name: Condition name (``solo``, ``homo``, ``diverse`` or a custom name); also the
            folder name of its runs.
        operators: The operator of each node, in node order (its length is the node count).
    """

    name: str
    operators: tuple[str, ...] = attrs.field(converter=tuple)

    @property
    def nodes(self) -> int:
        return len(self.operators)

    @property
    def folder(self) -> str:
        """The folder of its runs: the name with ``:`` as ``-`` and ``/`` (from model strings) as
        ``_``, so that it is a valid file name everywhere (``homo:openai/gpt-4.1`` ->
        ``homo-openai_gpt-4.1``)."""
        return self.name.replace(":", "-").replace("/", "_")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "operators": list(self.operators)}


@attrs.frozen(kw_only=True)
class ExperimentPlan:
    """Everything an experiment runs, recorded as ``experiment.json``.

    Attributes:
        base: The resolved ``dei-run`` configuration conditions derive from (its ``nodes``
            carry each operator's options; its ``budget`` is the per-condition budget).
        conditions: The conditions, in order.
        budget: Total operator calls of every condition (identical by construction).
        repeats: Repeats per condition; repeat ``k`` uses seed ``base.seed + k``.
        preset: The ``--preset`` the plan was built with, if any (recorded, not re-applied).
    """

    base: RunConfig
    conditions: tuple[Condition, ...] = attrs.field(converter=tuple)
    budget: int
    repeats: int
    preset: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.repeats < 1:
            raise ConfigError(f"--repeats must be at least 1, got {self.repeats}")
        if not self.conditions:
            raise ConfigError("an experiment needs at least one condition")
        names = [c.name for c in self.conditions]
        if len(set(names)) != len(names):
            raise ConfigError(f"condition names repeat: {names}")
        folders = [c.folder for c in self.conditions]
        if len(set(folders)) != len(folders):
            raise ConfigError(f"condition folders repeat: {folders}")
        if self.base.compute_axis == "tokens":
            check_equal_token_split(self.budget, self.conditions, self.base.iterations)
        else:
            check_equal_split(self.budget, self.conditions, self.base.rounds)

    def seed(self, repeat: int) -> int:
        return self.base.seed + repeat

    def run_config(self, condition: Condition, repeat: int) -> RunConfig:
        """The run configuration of one repeat of one condition."""
        options = {node.operator: dict(node.options) for node in reversed(self.base.nodes)}
        common = dict(self.base.nodes[0].options)
        nodes = tuple(
            NodeConfig(name=f"node-{index}", operator=operator,
                       options=options.get(operator, common))
            for index, operator in enumerate(condition.operators)
        )  # fmt: skip
        config = attrs.evolve(self.base, nodes=nodes, budget=self.budget,
                              iterations=self.call_bound(condition), seed=self.seed(repeat),
                              common_ground=True)  # fmt: skip
        # The protocol itself: every condition gets exactly the same total budget on the
        # compute axis (a real check, not ``assert``: it must hold under ``python -O`` too).
        total, expected = config.compute_limit(), self.base.compute_limit()
        if config.compute_axis == "calls":
            expected = self.budget
        if total != expected or config.budget != self.budget:
            raise ConfigError(
                f"equal compute violated: condition {condition.name!r} would get {total} "
                f"{config.compute_axis}, not {expected}"
            )
        return config

    def call_bound(self, condition: Condition) -> int | None:
        """On the ``tokens`` axis, each node's calls per round at most (``iterations``).

        ``--iterations`` is the bound of a node in the condition with the most nodes; a node
        of a smaller condition has a proportionally larger token share and gets a
        proportionally larger bound, so that the same kind of limit (tokens) ends every node
        (as on the ``calls`` axis Solo's one node makes as many calls as all of Homo's).
        ``None`` on the other axes, where ``budget`` bounds the calls.
        """
        if self.base.compute_axis != "tokens":
            return None
        largest = max(c.nodes for c in self.conditions)
        return self.base.iterations * largest // condition.nodes

    def run_dir(self, out: Path, condition: Condition, repeat: int) -> Path:
        return out / condition.folder / f"repeat-{repeat}"

    def to_json(self) -> dict[str, Any]:
        return {
            "version": EXPERIMENT_VERSION,
            "base": self.base.to_json(),
            "conditions": [c.to_json() for c in self.conditions],
            "budget": self.budget,
            "repeats": self.repeats,
            "preset": self.preset,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExperimentPlan:
        return cls(
            base=RunConfig.from_json(data["base"]),
            conditions=tuple(Condition(name=c["name"], operators=c["operators"])
                             for c in data["conditions"]),
            budget=int(data["budget"]),
            repeats=int(data["repeats"]),
            preset=data.get("preset"),
        )  # fmt: skip


def check_equal_split(budget: int, conditions: Sequence[Condition], rounds: int) -> None:
    """Checks that ``budget`` splits into whole, equal per-node and per-round call quotas in
    every condition.

    Raises:
        ConfigError: it does not (equal compute would then hold only approximately); the
            message names the smallest budget step that works for every condition.
    """
    step = math.lcm(*(c.nodes * rounds for c in conditions))
    for condition in conditions:
        per_node, rest = divmod(budget, condition.nodes)
        if per_node < 1 or rest:
            problem = f"across the {condition.nodes} nodes of condition {condition.name!r}"
        elif per_node % rounds:
            problem = (f"across {rounds} rounds ({per_node} calls per node in condition "
                       f"{condition.name!r})")  # fmt: skip
        else:
            continue
        raise ConfigError(f"--budget {budget} does not split equally {problem}; use a multiple "
                          f"of {step} (nodes x rounds of every condition)")  # fmt: skip


_TOKENS_NEED_ITERATIONS = ("--compute-axis tokens needs --iterations (calls per node per round "
                           "at most, for a node of the largest condition)")


def check_equal_token_split(budget: int, conditions: Sequence[Condition],
                            iterations: int | None) -> None:
    """On the ``tokens`` axis: checks that ``budget`` tokens split into equal node shares, and
    the call bound ``iterations`` scales to a whole number per node, in every condition.

    Raises:
        ConfigError: it does not; the message names a value that works.
    """
    if iterations is None:
        raise ConfigError(_TOKENS_NEED_ITERATIONS)
    step = math.lcm(*(c.nodes for c in conditions))
    largest = max(c.nodes for c in conditions)
    for condition in conditions:
        if budget % condition.nodes or budget < condition.nodes:
            raise ConfigError(f"--budget {budget} tokens does not split equally across the "
                              f"{condition.nodes} nodes of condition {condition.name!r}; use a "
                              f"multiple of {step}")  # fmt: skip
        if iterations * largest % condition.nodes:
            raise ConfigError(
                f"--iterations {iterations} does not scale to whole calls per round for the "
                f"{condition.nodes} nodes of condition {condition.name!r} ({iterations} x "
                f"{largest} / {condition.nodes}); use a multiple of "
                f"{step // math.gcd(step, largest)}"
            )


def parse_conditions(
    names: Sequence[str],
    custom: Sequence[str],
    operators: Sequence[str],
    nodes: int,
) -> list[Condition]:
    """Builds the conditions from ``--conditions`` names and ``--condition NAME=op,op`` specs.

    Args:
        names: Built-in condition names (``solo``, ``homo``, ``diverse``).
        custom: ``NAME=op1,op2,...`` specs, one node per listed operator.
        operators: The operators given: Solo uses the first; Homo is ``homo`` with one distinct
            operator, else one ``homo:<operator>`` condition per distinct operator; Diverse
            cycles them.
        nodes: Node count of Homo and Diverse.

    Raises:
        ConfigError: an unknown condition, a malformed spec, or Diverse with one operator.
    """
    if nodes < 1:
        raise ConfigError(f"--nodes must be at least 1, got {nodes}")
    conditions: list[Condition] = []
    for name in names:
        if name == "solo":
            conditions.append(Condition(name="solo", operators=[operators[0]]))
        elif name == "homo":
            distinct = list(dict.fromkeys(operators))
            if len(distinct) == 1:
                conditions.append(Condition(name="homo", operators=[operators[0]] * nodes))
            else:
                conditions += [Condition(name=f"homo:{operator}", operators=[operator] * nodes)
                               for operator in distinct]  # fmt: skip
        elif name == "diverse":
            if len(set(operators)) < 2:
                raise ConfigError(
                    "condition 'diverse' needs at least two different operators: give "
                    "--operator more than once (e.g. --operator gp --operator templates)"
                )
            conditions.append(Condition(
                name="diverse", operators=[operators[i % len(operators)] for i in range(nodes)]
            ))  # fmt: skip
        else:
            raise ConfigError(
                f"unknown condition {name!r}; built-in: {', '.join(BUILTIN_CONDITIONS)} "
                "(define others with --condition NAME=op1,op2,...)"
            )
    for spec in custom:
        name, sep, listed = spec.partition("=")
        name = name.strip()
        ops = [op.strip() for op in listed.split(",") if op.strip()]
        if not sep or not name or not ops:
            raise ConfigError(f"--condition takes NAME=op1,op2,... (one node per operator), "
                              f"got {spec!r}")  # fmt: skip
        if "/" in name or name.startswith("."):
            raise ConfigError(f"condition name {name!r} must be usable as a folder name")
        conditions.append(Condition(name=name, operators=ops))
    return conditions


def plan_from_flags(flags: dict[str, Any], plugins: PluginRegistry) -> ExperimentPlan:
    """Resolves ``dei experiment`` flags (every ``dei-run`` option plus the experiment's own)."""
    file = load_toml(flags["config_file"]) if flags.get("config_file") else {}
    file = {key.replace("-", "_"): value for key, value in file.items()}  # as resolve_config
    preset = get_preset(flags.get("preset") or file.get("preset"))
    protocol = dict(preset.settings) if preset else {}
    protocol.update(preset.experiment if preset else {})
    axis = flags.get("compute_axis") or file.get("compute_axis") or protocol.get("compute_axis")
    tokens = axis == "tokens"
    if not tokens and (flags.get("iterations") is not None or file.get("iterations") is not None):
        raise ConfigError("experiments take --budget (total calls per condition), not "
                          "--iterations (the call bound of --compute-axis tokens)")  # fmt: skip
    if tokens and not (flags.get("budget") or file.get("budget")):
        raise ConfigError("--compute-axis tokens needs --budget (total tokens per condition)")
    if tokens and flags.get("iterations") is None and file.get("iterations") is None:
        raise ConfigError(_TOKENS_NEED_ITERATIONS)
    if flags.get("replay") or flags.get("reask_mismatched"):
        raise ConfigError(
            "dei experiment does not replay; replay single runs with "
            "dei-run --replay OUT/<condition>/repeat-<k>"
        )
    # One base node per operator: it carries that operator's options (api_base, [[node]] ...).
    # On the tokens axis the budget and the call bound stay: the base configuration must hold.
    calls_only = {} if tokens else {"budget": None, "iterations": None}
    base = resolve_config({**flags, "nodes": None, **calls_only}, plugins)
    operators = list(dict.fromkeys(node.operator for node in base.nodes))
    nodes = flags.get("nodes") or protocol.get("nodes") or DEFAULT_EXPERIMENT_NODES
    listed = flags.get("conditions") or protocol.get("conditions") or ""
    names = [n.strip() for n in listed.split(",") if n.strip()]
    if not names and not flags.get("condition"):
        names = list(BUILTIN_CONDITIONS)
    conditions = parse_conditions(names, flags.get("condition") or (), operators, nodes)
    if preset is not None:
        warn_overrides(preset, [
            f"--{key} {flags.get(key) or file.get(key)} (preset: {protocol.get(key)})"
            for key in ("nodes", "budget")
            if (flags.get(key) or file.get(key)) not in (None, protocol.get(key))
        ])  # fmt: skip
    budget = (
        flags.get("budget")
        or file.get("budget")
        or protocol.get("budget")
        or DEFAULT_CALLS_PER_NODE * max(c.nodes for c in conditions)
    )
    for condition in conditions:
        for operator in condition.operators:
            plugins.operator(operator)  # unknown operator names fail before any run starts
    # Bad domain options (e.g. a generality set overlapping the opponents) fail here too.
    from dei_framework.builders import build_plugin, domain_lifecycle

    domain = build_plugin(plugins.domains, base.domain, plugins.domain(base.domain).factory,
                           FactoryContext(registry=plugins, options=dict(base.domain_options),
                                          seed=base.seed))  # fmt: skip
    # Every condition runs with the same lifecycle, recorded in the plan as it is in each run.
    base = attrs.evolve(base, lifecycle=base.lifecycle or domain_lifecycle(domain))
    return ExperimentPlan(base=attrs.evolve(base, budget=budget), conditions=conditions,
                          budget=budget, repeats=flags.get("repeats") or 1,
                          preset=preset.name if preset else None)  # fmt: skip


def load_plan(out: Path) -> ExperimentPlan:
    """Reads ``experiment.json`` of an experiment directory.

    Raises:
        ConfigError: ``out`` holds no experiment.
    """
    path = Path(out) / "experiment.json"
    if not path.exists():
        raise ConfigError(f"{out} is not an experiment directory (no experiment.json)")
    try:
        return ExperimentPlan.from_json(json.loads(path.read_text()))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path} is damaged: {exc}") from None


# --- running ----------------------------------------------------------------------------------


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
        progress: Progress mode of each run (see :func:`dei_framework.progress.make_progress`).
        announce: Called with one line per run started, skipped or finished.
        parallel: Runs at once (``--parallel``).

    Raises:
        ConfigError: ``out`` holds a different experiment, or ``parallel`` is below 1.
    """
    if parallel < 1:
        raise ConfigError(f"--parallel must be at least 1, got {parallel}")
    from dei_framework.ensemble import run
    from dei_framework.plugins import load_plugins
    from dei_framework.progress import make_progress

    out = Path(out)
    registry = registry or load_plugins()
    announce = announce or (lambda line: None)
    plan_path = out / "experiment.json"
    if plan_path.exists():
        recorded = load_plan(out)
        if _canonical(attrs.evolve(recorded, repeats=plan.repeats)) != _canonical(plan):
            raise ConfigError(f"{out} holds a different experiment; continue it with "
                              f"--resume {out} or choose another --out")  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(plan_path, plan.to_json())
    total = plan.repeats * len(plan.conditions)
    done = 0
    apart: list[tuple[str, RunConfig, Path, bool]] = []  # runs for other processes
    for repeat in range(plan.repeats):
        for condition in plan.conditions:
            done += 1
            run_dir = plan.run_dir(out, condition, repeat)
            label = f"[{done}/{total}] {condition.name} repeat {repeat} (seed {plan.seed(repeat)})"
            if (run_dir / "summary.json").exists():
                announce(f"{label}: already finished")
                continue
            config = plan.run_config(condition, repeat)
            resume = (run_dir / "config.json").exists()
            if resume:
                from dei_framework.runlog import RunDir

                recorded = RunConfig.from_json(RunDir(run_dir).read_config())
                if not config.lifecycle:  # the domain's default: the run recorded which it was
                    config = attrs.evolve(config, lifecycle=recorded.lifecycle)
                if _canonical(recorded) != _canonical(config):
                    raise ConfigError(f"{run_dir} holds a run with another configuration")
            announce(f"{label}: {'resuming' if resume else 'running'} "
                     f"{condition.nodes} node(s), {plan.budget} calls")  # fmt: skip
            if parallel > 1:
                apart.append((label, config, run_dir, resume))
                continue
            started = time.monotonic()
            display = make_progress(progress, config)
            with display:
                summary = run(config, run_dir, registry=registry, resume=resume,
                              progress=display.update)  # fmt: skip
            _announce_finished(announce, label, summary, started)
    if apart:
        _run_apart(apart, parallel, announce)
    summary = summarize_experiment(out, plan)
    write_json_atomic(out / "summary.json", summary)
    return summary


def _announce_finished(announce: Announce, label: str, summary: Mapping[str, Any],
                       started: float) -> None:
    common = summary["merged"].get("common") or {}
    announce(f"{label}: common-ground coverage {common.get('coverage', 0.0):.1%}, "
             f"QD-score {common.get('qd_score', 0.0):.2f} (raw "
             f"{summary['merged'].get('coverage', 0.0):.1%}, "
             f"{summary['merged'].get('qd_score', 0.0):.2f}), "
             f"{summary['budget']['calls']}/{summary['budget']['limit']} calls, "
             f"{time.monotonic() - started:.0f}s")  # fmt: skip


def _run_apart(runs: Sequence[tuple[str, RunConfig, Path, bool]], parallel: int,
               announce: Announce) -> None:
    """Runs ``(label, config, run directory, resume)`` items ``parallel`` at a time, each in a
    process of its own (spawned: the parent may hold an event loop and HTTP clients).

    Each run checkpoints as it goes, so an interrupted fan-out resumes like a sequential one.
    The first run that fails stops the others from starting; its error is raised.
    """
    import concurrent.futures
    import multiprocessing

    started = time.monotonic()
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=parallel,
                                                mp_context=context) as pool:  # fmt: skip
        pending = {pool.submit(_run_in_process, config, str(run_dir), resume): label
                   for label, config, run_dir, resume in runs}  # fmt: skip
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

    from dei_framework.ensemble import run
    from dei_framework.plugins import DISABLE_PLUGINS_VARIABLE, load_plugins

    disabled = [name.strip() for name in os.environ.get(DISABLE_PLUGINS_VARIABLE, "").split(",")
                if name.strip()]  # fmt: skip
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


# --- aggregation ------------------------------------------------------------------------------


#: The unit of a statistic over one value per repeat.
PER_REPEAT = "repeats"
#: The unit of a statistic pooled over every (node, repeat) pair.
PER_NODE_REPEAT = "nodes x repeats"


def describe(values: Sequence[float | None], *, unit: str = PER_REPEAT) -> dict[str, Any]:
    """``{"mean", "std", "n", "unit", "values"}`` of the values that are present.

    ``std`` is the sample standard deviation (``n - 1``), ``None`` below two values; ``mean``
    is ``None`` without values. ``values`` keeps the ``None`` entries in place. ``unit`` says
    what one value is (:data:`PER_REPEAT`, or :data:`PER_NODE_REPEAT` when pooled over the
    nodes of every repeat, so that ``n`` is nodes x repeats).
    """
    present = [float(v) for v in values if v is not None and not _isnan(v)]
    return {
        "mean": statistics.fmean(present) if present else None,
        "std": statistics.stdev(present) if len(present) > 1 else None,
        "n": len(present),
        "unit": unit,
        "values": [None if v is None or _isnan(v) else float(v) for v in values],
    }


def _isnan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _trim(summary: Mapping[str, Any]) -> dict[str, Any]:
    trimmed = dict(summary)
    trimmed["nodes"] = {
        name: {k: v for k, v in node.items() if k not in _TRIMMED_NODE_FIELDS}
        for name, node in summary.get("nodes", {}).items()
    }
    return trimmed


def summarize_condition(
    condition: Condition, runs: Sequence[Mapping[str, Any]], budget: int
) -> dict[str, Any]:
    """Aggregates the finished runs of one condition (see ``docs/experiments.md``)."""
    merged = [run["merged"] for run in runs]
    rounds = max((len(m.get("per_round", [])) for m in merged), default=0)
    per_round = []
    for index in range(rounds):
        entries = [m["per_round"][index] if index < len(m.get("per_round", [])) else {}
                   for m in merged]  # fmt: skip
        per_round.append({
            "round": index,
            "coverage": describe([e.get("coverage") for e in entries]),
            "qd_score": describe([e.get("qd_score") for e in entries]),
        })  # fmt: skip
    node_names = [f"node-{i}" for i in range(condition.nodes)]
    per_node: dict[str, Any] = {}
    for index, name in enumerate(node_names):
        nodes = [run["nodes"].get(name, {}) for run in runs]
        per_round_generality = []
        for r in range(max((len(n.get("generality_per_round", [])) for n in nodes), default=0)):
            per_round_generality.append(describe(
                [n["generality_per_round"][r] if r < len(n.get("generality_per_round", []))
                 else None for n in nodes]
            ))  # fmt: skip
        per_node[name] = {
            "operator": condition.operators[index],
            "calls": [n.get("calls") for n in nodes],
            "generality": describe([n.get("generality") for n in nodes]),
            "generality_peak": describe([n.get("generality_peak") for n in nodes]),
            "generality_per_round": per_round_generality,
            "niche_novelty": describe([n.get("niche_novelty") for n in nodes]),
            "champion_fitness": describe(
                [(n.get("champion") or {}).get("fitness") for n in nodes]
            ),  # fmt: skip
            "champion_common_fitness": describe(
                [(n.get("champion") or {}).get("common_fitness") for n in nodes]
            ),  # fmt: skip
        }

    def over_nodes(field: str) -> dict[str, Any]:
        # Mean over nodes and repeats: every (node, repeat) pair is one value.
        return describe([run["nodes"].get(name, {}).get(field)
                         for run in runs for name in node_names], unit=PER_NODE_REPEAT)  # fmt: skip

    calls = [run["budget"]["calls"] for run in runs]
    limits = [run["budget"]["limit"] for run in runs]
    commons = [m.get("common") or {} for m in merged]
    common = {
        field: describe([c.get(field) for c in commons])
        for field in ("coverage", "qd_score", "num_elites", "obj_max", "qd_score_sem",
                      "elite_std_mean", "selection_qd_gap")
    }  # fmt: skip
    common["common_seeds"] = _one_record([c.get("common_seeds") for c in commons])
    common["reference"] = _one_record([c.get("reference") for c in commons])
    common["fitness_scale"] = _one_record([c.get("fitness_scale") for c in commons])
    # The scales of the raw figures: each node's final round, over nodes and repeats.
    scales = sorted({scale for run in runs for node in run["nodes"].values()
                     for scale in (node.get("fitness_scale_per_round") or [None])[-1:]
                     if scale is not None})  # fmt: skip
    generality = over_nodes("generality")
    generality["reference"] = _one_record(
        [(run.get("generality") or {}).get("reference") for run in runs]
    )
    axis = next((run["budget"].get("axis", "calls") for run in runs), "calls")
    return {
        "operators": list(condition.operators),
        "nodes": condition.nodes,
        "repeats_completed": len(runs),
        "merged": {
            "coverage": describe([m.get("coverage") for m in merged]),
            "qd_score": describe([m.get("qd_score") for m in merged]),
            "num_elites": describe([m.get("num_elites") for m in merged]),
            "obj_max": describe([m.get("obj_max") for m in merged]),
            "per_round": per_round,
            "common": common,
            "raw_fitness_scales": scales,
        },
        "generality": generality,
        "champion_common_fitness": _champions_common_fitness(runs, node_names),
        "generality_peak": over_nodes("generality_peak"),
        "niche_novelty": over_nodes("niche_novelty"),
        "per_node": per_node,
        "operator_divergence": describe(
            [(run.get("operator_divergence") or {}).get("mean") for run in runs]
        ),  # fmt: skip
        "budget": {
            "limit": budget,
            "per_node": budget // condition.nodes,
            "calls": calls,
            "limits": limits,
            "attempts": [run["budget"].get("attempts") for run in runs],
            "cost_usd": [run["budget"].get("cost_usd") for run in runs],
            "axis": axis,
            "spent": [run["budget"].get("spent", run["budget"]["calls"]) for run in runs],
            "equal_compute": equal_on_axis(axis, runs, budget),
        },
        "invalid": [run.get("invalid") for run in runs],
        "evaluated": [run.get("evaluated") for run in runs],
        "runs": runs,
    }


def _champions_common_fitness(
    runs: Sequence[Mapping[str, Any]], names: Sequence[str]
) -> dict[str, Any]:
    """The final champions' common-ground fitness over nodes and repeats."""
    return describe([((run["nodes"].get(name) or {}).get("champion") or {}).get("common_fitness")
                     for run in runs for name in names], unit=PER_NODE_REPEAT)  # fmt: skip


def _one_record(values: Sequence[Any]) -> Any:
    """The value all runs agree on; the distinct values as a list when they do not.

    A reference set differs between runs only if a run's domain options differ, which an
    experiment never does; a list makes that visible instead of hiding it.
    """
    distinct = []
    for value in values:
        if value is not None and value not in distinct:
            distinct.append(value)
    if not distinct:
        return None
    return distinct[0] if len(distinct) == 1 else distinct


def metric_values(condition: Mapping[str, Any], metric: str) -> list[float | None]:
    """Per-repeat values of a dotted metric (``merged.common.qd_score``) of a condition."""
    node: Any = condition
    for part in metric.split("."):
        node = (node or {}).get(part)
    return list((node or {}).get("values") or [])


def comparisons(conditions: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Diverse against every other condition on every :data:`COMPARED_METRICS` entry.

    Each entry is a :func:`dei_framework.stats.compare` entry over repeats (``diff`` the
    difference of means, ``shift`` and ``ci`` the Hodges–Lehmann shift and its interval at the
    achieved ``ci_level``, ``a12``, ``p_value`` of the two-sided exact Mann–Whitney U test)
    plus ``unit`` (``"repeats"``: every statistic is over one value per repeat) and
    ``p_holm``: the p-value Holm-adjusted within the entry's metric (the family is the
    comparisons of Diverse with every other condition on that one metric). Empty without a
    ``diverse`` condition.
    """
    if REFERENCE_CONDITION not in conditions:
        return []
    a = conditions[REFERENCE_CONDITION]
    entries = []
    for metric in COMPARED_METRICS:
        family = [
            compare(REFERENCE_CONDITION, metric_values(a, metric), name,
                    metric_values(other, metric), metric)
            for name, other in conditions.items()
            if name != REFERENCE_CONDITION
        ]  # fmt: skip
        for entry, adjusted in zip(family, holm([e["p_value"] for e in family]), strict=True):
            entry["unit"] = PER_REPEAT  # one value per repeat and condition
            entry["p_holm"] = adjusted
            entry["holm_family"] = len([e for e in family if e["p_value"] is not None])
        entries += family
    return entries


def equal_on_axis(axis: str, runs: Sequence[Mapping[str, Any]], budget: int) -> bool:
    """Whether the runs of a condition got equal compute on ``axis``.

    On ``calls`` every run made exactly ``budget`` calls. On ``tokens`` and ``cost`` every node
    spent its share up to the worst case of one attempt: each ended because the next attempt no
    longer fitted its share (``exhausted_cap``), and all runs had the same limit.
    """
    if axis == "calls":
        return all(run["budget"]["calls"] == budget and run["budget"]["limit"] == budget
                   for run in runs)  # fmt: skip
    cap = {"tokens": "token", "cost": "cost"}[axis]
    limits = {run["budget"]["limit"] for run in runs}
    return len(limits) <= 1 and all(
        node.get("exhausted_cap") == cap
        for run in runs for node in run["budget"]["nodes"].values()
    )  # fmt: skip


def summarize_experiment(out: str | Path, plan: ExperimentPlan | None = None) -> dict[str, Any]:
    """Reads every finished run of an experiment and aggregates it per condition.

    Unfinished repeats are left out (``repeats_completed`` says how many are in).
    """
    out = Path(out)
    plan = plan or load_plan(out)
    conditions: dict[str, Any] = {}
    space = None
    for condition in plan.conditions:
        runs = []
        for repeat in range(plan.repeats):
            path = plan.run_dir(out, condition, repeat) / "summary.json"
            if not path.exists():
                continue
            run = _trim(json.loads(path.read_text()))
            run["repeat"] = repeat
            run["dir"] = str(path.parent.relative_to(out))
            space = space or run.get("space")
            runs.append(run)
        conditions[condition.name] = summarize_condition(condition, runs, plan.budget)
    return {
        "kind": "experiment",
        "version": EXPERIMENT_VERSION,
        "domain": plan.base.domain,
        "budget": plan.budget,
        "rounds": plan.base.rounds,
        "repeats": plan.repeats,
        "seeds": [plan.seed(k) for k in range(plan.repeats)],
        "space": space,
        "equal_compute": all(c["budget"]["equal_compute"] for c in conditions.values()),
        "common_reference": _one_record(
            [c["merged"]["common"]["reference"] for c in conditions.values()]
        ),
        "generality_reference": _one_record(
            [c["generality"]["reference"] for c in conditions.values()]
        ),
        "raw_fitness_scales_differ": len(
            {tuple(c["merged"]["raw_fitness_scales"]) for c in conditions.values()
             if c["merged"]["raw_fitness_scales"]}
        ) > 1,  # fmt: skip
        "compute_axis": plan.base.compute_axis,
        "compute_limit": plan.base.compute_limit(),
        "conditions": conditions,
        "comparisons": comparisons(conditions),
    }
