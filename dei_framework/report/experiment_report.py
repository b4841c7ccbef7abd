"""An experiment's ``report.md``: conditions at equal compute, comparisons, runs, plots.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dei_framework.analysis.formatting import (
    MISSING,
    markdown_image,
    markdown_table,
    number,
    plus_minus,
    reference_text,
    scored_against,
    value_at,
)
from dei_framework.contract.payloads import ExperimentSummary
from dei_framework.experiment.summary import condition_common
from dei_framework.report.plots import PLOTS, experiment_plots
from dei_framework.runtime.files.run_files import FinishedRun


def _equal_compute_terms(summary: ExperimentSummary) -> str:
    """What every condition got, on the experiment's compute axis."""
    axis, budget = summary.get("compute_axis", "calls"), summary.get("budget")
    if axis == "tokens":
        return f"**{budget} tokens** (prompt + completion)"
    if axis == "cost":
        return f"**{number(summary.get('compute_limit'), '.4f')} USD** (at most {budget} calls)"
    return f"**{budget} operator calls**"


def experiment_report(
    path: Path, summary: ExperimentSummary, runs: Mapping[str, FinishedRun]
) -> str:
    """The markdown of an experiment's ``report.md`` (its plots are written meanwhile).

    Args:
        path: The experiment directory.
        summary: Its summary.
        runs: Its finished runs, by their folder relative to ``path``.
    """
    conditions: Mapping[str, Any] = summary["conditions"]
    images = experiment_plots(summary, runs, path / PLOTS)
    # Where every raw figure is its common-ground one (a domain without opponents and without
    # noise), the raw columns and comparisons would only repeat them.
    raw_shown = not _raw_is_common(conditions)
    out = [*_introduction(summary), *_conditions_section(summary, raw_shown)]
    out.append(_comparisons(_shown_comparisons(summary, raw_shown)))
    out.append(markdown_image("final merged coverage and QD-score", images.get("final")))
    out.append(markdown_image("coverage and QD-score per round", images.get("progress")))
    out.extend(_per_round_section(conditions))
    out.extend(_nodes_section(conditions, raw_shown))
    out.append(markdown_image("generality per round", images.get("generality")))
    out.append(markdown_image("niche novelty", images.get("niche_novelty")))
    out.append(markdown_image("merged-archive occupancy", images.get("heatmaps")))
    out.extend(_runs_section(conditions))
    out.extend(_unfinished_note(path, summary))
    return "\n".join(out)


def _introduction(summary: ExperimentSummary) -> list[str]:
    """The title and the terms of the comparison: equal compute, rounds, repeats, seeds."""
    equal = "holds" if summary.get("equal_compute") else "**does not hold** (see budget below)"
    return [
        f"# DEI experiment: {summary.get('domain', '?')}\n",
        f"Equal compute: every condition gets {_equal_compute_terms(summary)} in "
        f"total over {summary.get('rounds')} round(s); {summary.get('repeats')} repeat(s) per "
        f"condition with seeds {summary.get('seeds')} (the same seeds for every condition). "
        f"Equal compute {equal}. Values are mean ± sample standard deviation over **repeats** "
        "(n = the repeats column), except where an n follows them: those are pooled over "
        "**nodes × repeats** (every node of every repeat is one value, so n = nodes × "
        "repeats; such values are not independent).\n",
    ]


def _conditions_section(summary: ExperimentSummary, raw_shown: bool) -> list[str]:
    """``## Conditions``: each condition's figures, what they measure, and a warning when raw
    fitness is on different scales between conditions."""
    conditions: Mapping[str, Any] = summary["conditions"]
    out = ["## Conditions\n"]
    raw_header = ["coverage (raw)", "QD-score (raw)"] if raw_shown else []
    out.append(
        markdown_table(
            [
                "condition",
                "nodes",
                "operators",
                "repeats",
                "coverage (common)",
                "QD-score (common)",
                *raw_header,
                "generality",
                "peak generality",
                "niche novelty",
                "operator divergence",
            ],
            [
                [
                    name,
                    c["nodes"],
                    _operators(c["operators"]),
                    c["repeats_completed"],
                    plus_minus(condition_common(c).get("coverage"), ".1%"),
                    plus_minus(condition_common(c).get("qd_score"), ".2f"),
                    *(
                        [
                            plus_minus(c["merged"]["coverage"], ".1%"),
                            plus_minus(c["merged"]["qd_score"], ".2f"),
                        ]
                        if raw_shown
                        else []
                    ),
                    plus_minus(c.get("generality")),
                    plus_minus(c.get("generality_peak")),
                    plus_minus(c.get("niche_novelty")),
                    plus_minus(c.get("operator_divergence")),
                ]
                for name, c in conditions.items()
            ],
        )
    )
    against = scored_against(summary.get("common_reference"), "against one reference set")
    out.append(
        "\nCommon ground: the best-per-cell merge of a run's final-round archives after every "
        f"elite was re-evaluated {against}; "
        f"{_scoring_terms({n: condition_common(c) for n, c in conditions.items()})} "
        "The same program "
        "scores the same in every condition. "
        f"{_raw_terms(raw_shown)} "
        "Generality, peak generality and niche novelty: mean over nodes × repeats (final-round "
        "champion, best round's champion, and share of received champions that filled an "
        "empty niche); generality set: "
        f"{reference_text(summary.get('generality_reference'))}. Operator divergence: mean "
        "pairwise "
        "Jensen–Shannon divergence of the nodes' candidate-cell distributions (undefined for "
        "one node).\n"
    )
    if summary.get("raw_fitness_scales_differ"):
        scales = "; ".join(
            f"{name}: {', '.join(number(x, 'g') for x in c['merged']['raw_fitness_scales'])}"
            for name, c in conditions.items()
        )
        out.append(
            "\n**Battle sizes differ between conditions**, so raw fitness is on different "
            f"scales (the domain's fitness scale of the nodes' final rounds — {scales}). Compare "
            "conditions on the common-ground figures.\n"
        )
    return out


def _shown_comparisons(summary: ExperimentSummary, raw_shown: bool) -> list[Mapping[str, Any]]:
    """The summary's comparisons, without the raw ones where raw figures are not shown."""
    comparisons = summary.get("comparisons") or []
    if not raw_shown:
        comparisons = [
            e for e in comparisons if e["metric"] not in ("merged.coverage", "merged.qd_score")
        ]
    return comparisons


def _per_round_section(conditions: Mapping[str, Any]) -> list[str]:
    """``## Per round (merged archive)``: each condition's coverage and QD-score per round."""
    rounds = max((len(c["merged"]["per_round"]) for c in conditions.values()), default=0)
    names = list(conditions)
    return [
        "\n## Per round (merged archive)\n",
        markdown_table(
            ["round", *[f"{n} coverage" for n in names], *[f"{n} QD-score" for n in names]],
            [
                [
                    r,
                    *[plus_minus(_round_stat(conditions[n], r, "coverage"), ".1%") for n in names],
                    *[plus_minus(_round_stat(conditions[n], r, "qd_score"), ".2f") for n in names],
                ]
                for r in range(rounds)
            ],
        ),
    ]


def _nodes_section(conditions: Mapping[str, Any], raw_shown: bool) -> list[str]:
    """``## Nodes``: each condition's nodes, their champions' fitness, generality, novelty."""
    rows = []
    for name, c in conditions.items():
        for node, stats in c["per_node"].items():
            raw = [plus_minus(stats["champion_fitness"])] if raw_shown else []
            rows.append(
                [
                    name,
                    node,
                    stats["operator"],
                    *raw,
                    plus_minus(stats.get("champion_common_fitness")),
                    plus_minus(stats["generality"]),
                    plus_minus(stats["generality_peak"]),
                    plus_minus(stats["niche_novelty"]),
                ]
            )
    return [
        "\n## Nodes\n",
        markdown_table(
            [
                "condition",
                "node",
                "operator",
                *(["champion fitness (raw)"] if raw_shown else []),
                "champion fitness (common)",
                "generality",
                "peak generality",
                "niche novelty",
            ],
            rows,
        ),
    ]


def _runs_section(conditions: Mapping[str, Any]) -> list[str]:
    """``## Runs``: every repeat of every condition, its folder, merged figures and budget."""
    run_rows = []
    for name, c in conditions.items():
        for run in c.get("runs", []):
            merged = run.get("merged", {})
            budget = run.get("budget", {})
            run_rows.append(
                [
                    name,
                    run.get("repeat"),
                    run.get("seed"),
                    f"`{run.get('dir', '')}`",
                    number(merged.get("coverage"), ".1%"),
                    number(merged.get("qd_score"), ".2f"),
                    f"{budget.get('calls')}/{budget.get('limit')}",
                    budget.get("attempts"),
                    number(budget.get("wall_seconds"), ".1f"),
                ]
            )
    return [
        "\n## Runs\n",
        markdown_table(
            [
                "condition",
                "repeat",
                "seed",
                "run",
                "merged coverage",
                "merged QD-score",
                "calls",
                "attempts",
                "wall s",
            ],
            run_rows,
        ),
    ]


def _unfinished_note(path: Path, summary: ExperimentSummary) -> list[str]:
    """The conditions with repeats still to run and how to continue them (none: no line)."""
    missing = [
        f"{n} ({c['repeats_completed']}/{summary.get('repeats')})"
        for n, c in summary["conditions"].items()
        if c["repeats_completed"] < summary.get("repeats", 0)
    ]
    if not missing:
        return []
    return [
        f"\nUnfinished: {', '.join(missing)} repeats done; continue with "
        f"`dei experiment --resume {path}`.\n"
    ]


def _raw_is_common(conditions: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether every condition's raw coverage, QD-score and node champion fitness (mean and
    spread) are its common-ground ones."""
    for condition in conditions.values():
        common, raw = condition_common(condition), condition["merged"]
        for metric in ("coverage", "qd_score"):
            mine, theirs = common.get(metric) or {}, raw.get(metric) or {}
            if mine.get("mean") is None or any(
                mine.get(k) != theirs.get(k) for k in ("mean", "std")
            ):
                return False
        for stats in condition["per_node"].values():
            mine, theirs = (
                stats.get("champion_common_fitness") or {},
                stats.get("champion_fitness") or {},
            )
            if any(mine.get(k) != theirs.get(k) for k in ("mean", "std")):
                return False
    return True


def _raw_terms(shown: bool) -> str:
    """What the raw figures are, or why they are not shown."""
    if shown:
        return (
            "Raw: the same merge with fitness as each node measured it against its own "
            "opponent pool (pools differ between conditions)."
        )
    return (
        "Raw figures (fitness as each node measured it) are the common-ground ones in every "
        "condition here, so they are not repeated."
    )


def _scoring_terms(commons: Mapping[str, Mapping[str, Any]]) -> str:
    """How common-ground fitness was measured: the K scoring seeds, or (older runs) one seed."""
    seeds = {c.get("common_seeds") for c in commons.values() if c.get("common_seeds") is not None}
    if not seeds:
        return (
            "each elite measured once, with one seed, and the best per cell kept on that "
            "same measurement (a run from before K-seed scoring: biased upward)."
        )
    k = ", ".join(str(s) for s in sorted(seeds))
    text = (
        f"the elite of each cell chosen on one measurement (the selection seed), then "
        f"scored as the mean of **K = {k}** fresh seeds (independent of the choice, so "
        "free of the winner's curse)."
    )
    gaps = [
        f"{name} {plus_minus(c.get('selection_qd_gap'), '.2f')}"
        for name, c in commons.items()
        if (c.get("selection_qd_gap") or {}).get("mean") is not None
    ]
    sems = [
        f"{name} {number((c.get('qd_score_sem') or {}).get('mean'), '.2f')}"
        for name, c in commons.items()
        if (c.get("qd_score_sem") or {}).get("mean") is not None
    ]
    if gaps:
        text += (
            " QD-score on the selection measurement minus the scored one (the bias the "
            f"scoring removed; over repeats): {'; '.join(gaps)}."
        )
    if sems:
        text += (
            " Standard error of a run's common QD-score from its K seeds (mean over "
            f"repeats): {'; '.join(sems)}."
        )
    return text


#: How the comparisons table names and formats the metrics it knows.
_COMPARED_METRICS = {
    "merged.common.coverage": ("coverage (common)", ".1%"),
    "merged.common.qd_score": ("QD-score (common)", ".2f"),
    "merged.coverage": ("coverage (raw)", ".1%"),
    "merged.qd_score": ("QD-score (raw)", ".2f"),
}


def _comparisons(entries: Sequence[Mapping[str, Any]]) -> str:
    """The ``comparisons`` table: Diverse against every other condition."""
    if not entries:
        return ""
    out = ["\n## Comparisons\n"]
    legacy = all("ci" not in entry for entry in entries)  # an experiment summarised before
    out.append(_comparisons_intro(entries, legacy=legacy))
    rows = []
    for entry in entries:
        label, spec = _COMPARED_METRICS.get(entry["metric"], (entry["metric"], ".3f"))
        pair = [
            f"{entry['a']} − {entry['b']}",
            label,
            f"{entry.get('n_a')} / {entry.get('n_b')}",
            number(entry.get("diff"), spec),
        ]
        if legacy:
            ci = entry.get("ci95")
            interval = f"[{number(ci[0], spec)}, {number(ci[1], spec)}]" if ci else MISSING
            rows.append([*pair, interval, number(entry.get("p_value"), ".3f")])
            continue
        rows.append(
            [
                *pair,
                number(entry.get("shift"), spec),
                _interval(entry, spec),
                number(entry.get("a12"), ".2f"),
                number(entry.get("p_value"), ".3f"),
                number(entry.get("p_holm"), ".3f"),
            ]
        )
    if legacy:
        out.append(markdown_table(["a − b", "metric", "n", "difference", "95% CI", "p"], rows))
    else:
        out.append(
            markdown_table(
                [
                    "a − b",
                    "metric",
                    "n (repeats)",
                    "difference of means",
                    "shift (HL)",
                    "CI [level]",
                    "A12",
                    "p",
                    "p (Holm)",
                ],
                rows,
            )
        )
        verdicts = [
            _verdict(entry, *_COMPARED_METRICS.get(entry["metric"], (entry["metric"], ".3f")))
            for entry in entries
            if entry["metric"].startswith("merged.common.")
        ]
        if verdicts:
            out.append(
                "\nIn words (common ground only: raw metrics are not comparable across "
                "conditions):\n"
            )
            out.extend(f"- {line}" for line in verdicts)
    return "\n".join(out)


def _comparisons_intro(entries: Sequence[Mapping[str, Any]], *, legacy: bool) -> str:
    """The paragraph before the ``comparisons`` table: what its statistics are (``legacy``: a
    summary made before the rank-based intervals)."""
    n = sorted({f"{e.get('n_a')} / {e.get('n_b')}" for e in entries})
    if legacy:
        return (
            "Difference of means over repeats (a − b) with its 95 % percentile bootstrap "
            f"interval and the p-value of the {entries[0]['test']} (this summary predates the "
            "rank-based intervals, A12 and Holm's adjustment; `dei report` on a re-summarised "
            "experiment shows them).\n"
        )
    return (
        f"Every statistic is over **repeats** (n = {', '.join(n)} per pair). Difference: "
        "of means (descriptive). Shift: the Hodges–Lehmann estimate (median of all "
        "pairwise differences a − b) with the distribution-free confidence interval that "
        "inverts the exact Mann–Whitney test; its exact level is discrete and given in "
        "brackets (the narrowest interval of at least 95 %; when the repeats are too few "
        "for 95 % the widest one, at its lower level, in italics). A12: Vargha–Delaney "
        "effect size, P(a > b) + P(a = b) / 2 (0.5: none). p: the "
        f"{entries[0]['test']}; Holm: adjusted within each metric over its "
        f"{max((e.get('holm_family') or 0) for e in entries)} comparisons. With n "
        "repeats per condition the smallest attainable p is 2 / C(n_a + n_b, n_a).\n"
    )


def _verdict(entry: Mapping[str, Any], label: str, spec: str) -> str:
    """One sentence on a common-ground comparison: who leads, by how much, how surely."""
    a, b = entry["a"], entry["b"]
    shift, holm = entry.get("shift"), entry.get("p_holm")
    if shift is None or holm is None:
        return f"{label}, {a} against {b}: not computed."
    if shift > 0:
        lead = f"{a} leads {b} by {number(shift, spec)}"
    elif shift < 0:
        lead = f"{b} leads {a} by {number(-shift, spec)}"
    else:
        lead = f"{a} and {b} are level, shift {number(shift, spec)}"
    interval = _interval(entry, spec).replace("*", "")
    sure = "significant after Holm" if holm < 0.05 else "not significant after Holm"
    text = (
        f"{label}: {lead} (interval {interval}, A12 {number(entry.get('a12'), '.2f')}); "
        f"{sure} (p = {number(holm, '.3f')})."
    )
    n_a, n_b = entry.get("n_a"), entry.get("n_b")
    if isinstance(n_a, int) and isinstance(n_b, int) and n_a > 0 and n_b > 0:
        smallest = min(1.0, 2 / math.comb(n_a + n_b, n_a))  # the exact two-sided test's floor
        if smallest >= 0.05:
            text += (
                f" With n = {n_a} / {n_b} repeats no difference can reach p < 0.05 "
                f"(the smallest attainable p is {number(smallest, '.3f')})."
            )
    return text


def _interval(entry: Mapping[str, Any], spec: str) -> str:
    """``[low, high] [96.8%]`` of a comparison; italic when it does not reach 95 %."""
    ci = entry.get("ci")
    if not ci:
        return MISSING
    text = (
        f"[{number(ci[0], spec)}, {number(ci[1], spec)}] [{number(entry.get('ci_level'), '.1%')}]"
    )
    return text if entry.get("ci95") else f"*{text}*"


def _round_stat(condition: Mapping[str, Any], index: int, field: str) -> Any:
    entry = value_at(condition["merged"]["per_round"], index)
    return entry[field] if entry else None


def _operators(operators: Sequence[str]) -> str:
    """``gp x4`` or ``gp, templates, gp, templates``."""
    if len(set(operators)) == 1:
        return f"{operators[0]} x{len(operators)}"
    return ", ".join(operators)
