"""An experiment's ``summary.json``: each condition's runs aggregated, Diverse compared.

Per condition, every figure over its finished repeats (:func:`describe`: mean, sample standard
deviation, n and the values), and the comparisons of Diverse with every other condition
(:mod:`dei_framework.analysis.stats`); the fields are described in ``docs/experiments.md``.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dei_framework.analysis.stats import compare, holm
from dei_framework.contract.payloads import ExperimentSummary
from dei_framework.experiment.plan import EXPERIMENT_VERSION, Condition, ExperimentPlan, load_plan
from dei_framework.runtime.files.run_files import read_finished_summary
from dei_framework.runtime.files.run_layout import SUMMARY_FILE

#: Per-node fields of a run summary too bulky to copy into the experiment summary.
_TRIMMED_NODE_FIELDS = ("operator_status",)
#: The condition :func:`comparisons` compares every other condition with.
REFERENCE_CONDITION = "diverse"
#: Metrics compared between conditions: the common-ground ones first, then the raw ones.
COMPARED_METRICS = (
    "merged.common.coverage",
    "merged.common.qd_score",
    "merged.coverage",
    "merged.qd_score",
)


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
    node_names = [f"node-{i}" for i in range(condition.nodes)]
    generality = _over_nodes(runs, node_names, "generality")
    generality["reference"] = _one_record(
        [(run.get("generality") or {}).get("reference") for run in runs]
    )
    return {
        "operators": list(condition.operators),
        "nodes": condition.nodes,
        "repeats_completed": len(runs),
        "merged": {
            "coverage": describe([m.get("coverage") for m in merged]),
            "qd_score": describe([m.get("qd_score") for m in merged]),
            "num_elites": describe([m.get("num_elites") for m in merged]),
            "obj_max": describe([m.get("obj_max") for m in merged]),
            "per_round": _merged_per_round(merged),
            "common": _merged_common(merged),
            "raw_fitness_scales": _raw_fitness_scales(runs),
        },
        "generality": generality,
        "champion_common_fitness": _champions_common_fitness(runs, node_names),
        "generality_peak": _over_nodes(runs, node_names, "generality_peak"),
        "niche_novelty": _over_nodes(runs, node_names, "niche_novelty"),
        "per_node": _per_node(condition, runs, node_names),
        "operator_divergence": describe(
            [(run.get("operator_divergence") or {}).get("mean") for run in runs]
        ),
        "budget": _budget_summary(condition, runs, budget),
        "invalid": [run.get("invalid") for run in runs],
        "evaluated": [run.get("evaluated") for run in runs],
        "runs": runs,
    }


def _merged_per_round(merged: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Coverage and QD-score of the merged archive, round by round, over repeats."""
    rounds = max((len(m.get("per_round", [])) for m in merged), default=0)
    per_round = []
    for index in range(rounds):
        entries = [
            m["per_round"][index] if index < len(m.get("per_round", [])) else {} for m in merged
        ]
        per_round.append(
            {
                "round": index,
                "coverage": describe([e.get("coverage") for e in entries]),
                "qd_score": describe([e.get("qd_score") for e in entries]),
            }
        )
    return per_round


def _per_node(
    condition: Condition, runs: Sequence[Mapping[str, Any]], node_names: Sequence[str]
) -> dict[str, Any]:
    """Each node's figures over repeats: calls, generality, niche novelty, champion fitness."""
    per_node: dict[str, Any] = {}
    for index, name in enumerate(node_names):
        nodes = [run["nodes"].get(name, {}) for run in runs]
        per_round_generality = []
        for r in range(max((len(n.get("generality_per_round", [])) for n in nodes), default=0)):
            per_round_generality.append(
                describe(
                    [
                        n["generality_per_round"][r]
                        if r < len(n.get("generality_per_round", []))
                        else None
                        for n in nodes
                    ]
                )
            )
        per_node[name] = {
            "operator": condition.operators[index],
            "calls": [n.get("calls") for n in nodes],
            "generality": describe([n.get("generality") for n in nodes]),
            "generality_peak": describe([n.get("generality_peak") for n in nodes]),
            "generality_per_round": per_round_generality,
            "niche_novelty": describe([n.get("niche_novelty") for n in nodes]),
            "champion_fitness": describe([(n.get("champion") or {}).get("fitness") for n in nodes]),
            "champion_common_fitness": describe(
                [(n.get("champion") or {}).get("common_fitness") for n in nodes]
            ),
        }
    return per_node


def _over_nodes(
    runs: Sequence[Mapping[str, Any]], node_names: Sequence[str], field: str
) -> dict[str, Any]:
    """A node figure described over nodes and repeats."""
    # Mean over nodes and repeats: every (node, repeat) pair is one value.
    return describe(
        [run["nodes"].get(name, {}).get(field) for run in runs for name in node_names],
        unit=PER_NODE_REPEAT,
    )


def _merged_common(merged: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The merged archive's common-ground figures over repeats, and what they were scored on."""
    commons = [m.get("common") or {} for m in merged]
    common = {
        field: describe([c.get(field) for c in commons])
        for field in (
            "coverage",
            "qd_score",
            "num_elites",
            "obj_max",
            "qd_score_sem",
            "elite_std_mean",
            "selection_qd_gap",
        )
    }
    common["common_seeds"] = _one_record([c.get("common_seeds") for c in commons])
    common["reference"] = _one_record([c.get("reference") for c in commons])
    common["fitness_scale"] = _one_record([c.get("fitness_scale") for c in commons])
    return common


def _raw_fitness_scales(runs: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The scales of the raw figures: each node's final round, over nodes and repeats."""
    return sorted(
        {
            scale
            for run in runs
            for node in run["nodes"].values()
            for scale in (node.get("fitness_scale_per_round") or [None])[-1:]
            if scale is not None
        }
    )


def _budget_summary(
    condition: Condition, runs: Sequence[Mapping[str, Any]], budget: int
) -> dict[str, Any]:
    """What the condition's runs spent, on which axis, and whether compute was equal."""
    axis = next((run["budget"].get("axis", "calls") for run in runs), "calls")
    return {
        "limit": budget,
        "per_node": budget // condition.nodes,
        "calls": [run["budget"]["calls"] for run in runs],
        "limits": [run["budget"]["limit"] for run in runs],
        "attempts": [run["budget"].get("attempts") for run in runs],
        "cost_usd": [run["budget"].get("cost_usd") for run in runs],
        "axis": axis,
        "spent": [run["budget"].get("spent", run["budget"]["calls"]) for run in runs],
        "equal_compute": equal_on_axis(axis, runs, budget),
    }


def _champions_common_fitness(
    runs: Sequence[Mapping[str, Any]], names: Sequence[str]
) -> dict[str, Any]:
    """The final champions' common-ground fitness over nodes and repeats."""
    return describe(
        [
            ((run["nodes"].get(name) or {}).get("champion") or {}).get("common_fitness")
            for run in runs
            for name in names
        ],
        unit=PER_NODE_REPEAT,
    )


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

    Each entry is a :func:`dei_framework.analysis.stats.compare` entry over repeats (``diff`` the
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
            compare(
                REFERENCE_CONDITION,
                metric_values(a, metric),
                name,
                metric_values(other, metric),
                metric,
            )
            for name, other in conditions.items()
            if name != REFERENCE_CONDITION
        ]
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
        return all(
            run["budget"]["calls"] == budget and run["budget"]["limit"] == budget for run in runs
        )
    cap = {"tokens": "token", "cost": "cost"}[axis]
    limits = {run["budget"]["limit"] for run in runs}
    return len(limits) <= 1 and all(
        node.get("exhausted_cap") == cap for run in runs for node in run["budget"]["nodes"].values()
    )


def summarize_experiment(out: str | Path, plan: ExperimentPlan | None = None) -> ExperimentSummary:
    """Reads every finished run of an experiment and aggregates it per condition.

    Unfinished repeats are left out (``repeats_completed`` says how many are in).

    Raises:
        ConfigError: The plan or a finished run's summary is damaged.
    """
    out = Path(out)
    plan = plan or load_plan(out)
    conditions: dict[str, Any] = {}
    space = None
    for condition in plan.conditions:
        runs = []
        for repeat in range(plan.repeats):
            path = plan.run_dir(out, condition, repeat) / SUMMARY_FILE
            if not path.exists():
                continue
            run = _trim(read_finished_summary(path.parent).to_json())
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
            {
                tuple(c["merged"]["raw_fitness_scales"])
                for c in conditions.values()
                if c["merged"]["raw_fitness_scales"]
            }
        )
        > 1,
        "compute_axis": plan.base.compute_axis,
        "compute_limit": plan.base.compute_limit(),
        "conditions": conditions,
        "comparisons": comparisons(conditions),
    }


def condition_common(condition: Mapping[str, Any]) -> Mapping[str, Any]:
    """A condition's common-ground figures (``merged.common``; empty without common ground)."""
    return condition["merged"].get("common") or {}
