"""A run's ``report.md``: settings, merged figures, per-node tables, champions, budget, plots.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dei_framework.analysis.formatting import (
    markdown_image,
    markdown_table,
    number,
    scored_against,
    value_at,
)
from dei_framework.contract.run_summary import Champion, MergedSummary, NodeSummary, RunSummary
from dei_framework.report.plots import PLOTS, run_plots
from dei_framework.runtime.files.run_files import FinishedRun

#: Champion listings longer than this many lines are cut in the report.
CHAMPION_LINES = 40


def run_report(run: FinishedRun) -> str:
    """The markdown of a finished run's ``report.md`` (its plots are written meanwhile)."""
    summary = run.summary
    nodes = summary.nodes
    merged = summary.merged
    images = run_plots(run, run.path / PLOTS)
    out = _introduction(summary)
    out.extend(_merged_section(merged, images))
    out.extend(_nodes_section(nodes))
    out.extend(_per_round_section(merged, nodes, images))
    out.extend(_divergence_section(summary.operator_divergence))
    out.extend(_budget_section(summary))
    out.extend(_champions_section(nodes))
    return "\n".join(out)


def _introduction(summary: RunSummary) -> list[str]:
    """The title and the run's settings: nodes, rounds, seed, transport, sharing, grid."""
    space = summary.space
    return [
        f"# DEI run: {summary.domain}\n",
        f"{len(summary.nodes)} node(s), {summary.rounds} round(s) "
        f"({summary.lifecycle} archives), seed "
        f"{summary.seed}, transport `{summary.transport}`, sharing "
        f"`{summary.sharing}`; grid {' x '.join(map(str, space.get('shape', [])))} "
        f"over {', '.join(space.get('axes', []))} ({space.get('cells', '?')} cells).\n",
    ]


def _merged_section(merged: MergedSummary, images: Mapping[str, str]) -> list[str]:
    """``## Merged archive``: its raw figures and, where measured, its common-ground ones (one
    row when they agree), how common ground was scored, and the archives' heatmaps."""
    out = ["## Merged archive\n"]
    out.append(
        "Best elite per cell across every node's final-round archive. **Raw**: fitness as "
        "each node measured it, against its own opponent pool."
    )
    common, stats = merged.common, merged.stats
    rows = [
        [
            "raw",
            number(stats.coverage, ".1%"),
            number(stats.qd_score, ".2f"),
            stats.num_elites,
            number(stats.obj_max),
            number(stats.obj_mean),
        ]
    ]
    if common:
        k = common.get("common_seeds")
        scored = (
            f" The kept elites were then scored as the mean of K = {k} fresh seeds "
            f"(standard error of the QD-score from them: "
            f"{number(common.get('qd_score_sem'), '.2f')}; on the selection measurement it "
            f"was {number(common.get('selection_qd_gap'), '+.2f')} higher)."
            if k
            else ""
        )
        if common.get("deterministic"):  # scored once: there were no fresh seeds to average
            scored = (
                " The domain is deterministic, so that one evaluation is each kept "
                "elite's score (no fresh seeds: they would give the same value)."
            )
        against = scored_against(common.get("reference"))
        out.append(
            f" **Common ground**: every elite re-evaluated {against} with one selection "
            "seed, placed by its common-ground descriptor, the best per cell kept "
            f"(`merged_archive.json`).{scored}"
        )
        row = [
            "common ground",
            number(common.get("coverage"), ".1%"),
            number(common.get("qd_score"), ".2f"),
            common.get("num_elites", 0),
            number(common.get("obj_max")),
            number(common.get("obj_mean")),
        ]
        if row[1:] == rows[0][1:]:  # nothing differs between the pools: one row says both
            rows = [["raw = common ground", *row[1:]]]
        else:
            rows.append(row)
    out.append("\n")
    out.append(
        markdown_table(
            ["measure", "coverage", "QD-score", "elites", "best fitness", "mean fitness"], rows
        )
    )
    out.append(markdown_image("archives", images.get("heatmaps")))
    return out


def _nodes_section(nodes: Mapping[str, NodeSummary]) -> list[str]:
    """``## Nodes``: each node's calls, champion, generality, novelty and final archive."""
    return [
        "\n## Nodes\n",
        markdown_table(
            [
                "node",
                "operator",
                "calls",
                "rounds",
                "champion fitness",
                "generality (final / peak)",
                "niche novelty",
                "coverage",
                "QD-score",
                "stopped",
            ],
            [
                [
                    name,
                    node.operator,
                    f"{node.calls}/{'?' if node.quota is None else node.quota}",
                    node.rounds_completed,
                    number(node.champion.fitness if node.champion else None),
                    f"{number(node.generality)} / {number(node.generality_peak)}",
                    number(node.niche_novelty),
                    number(_last(node.coverage_per_round), ".1%"),
                    number(_last(node.qd_score_per_round), ".2f"),
                    node.stopped or "",
                ]
                for name, node in nodes.items()
            ],
        ),
        "\nGenerality: share of the domain's reference programs the champion beats or ties "
        "(– when the domain has none). Niche novelty: share of received peer champions that "
        "landed in a cell empty in the receiver's previous-round archive (– when none "
        "arrived).\n",
    ]


def _per_round_section(
    merged: MergedSummary, nodes: Mapping[str, NodeSummary], images: Mapping[str, str]
) -> list[str]:
    """``## Per round``: the merged archive's and each node's figures per round, and their
    plots."""
    per_round = merged.per_round
    names = list(nodes)
    return [
        "\n## Per round\n",
        markdown_table(
            [
                "round",
                "merged coverage",
                "merged QD-score",
                *[f"{n} coverage" for n in names],
                *[f"{n} generality" for n in names],
            ],
            [
                [
                    entry.get("round", i),
                    number(entry.get("coverage"), ".1%"),
                    number(entry.get("qd_score"), ".2f"),
                    *[number(value_at(nodes[n].coverage_per_round, i), ".1%") for n in names],
                    *[number(value_at(nodes[n].generality_per_round, i)) for n in names],
                ]
                for i, entry in enumerate(per_round)
            ],
        ),
        markdown_image("coverage and QD-score per round", images.get("progress")),
        markdown_image("generality per round", images.get("generality")),
        markdown_image("niche novelty per round", images.get("niche_novelty")),
    ]


def _divergence_section(divergence: Mapping[str, Any]) -> list[str]:
    """``## Operator divergence``: its mean and, where there are pairs of nodes, each pair's."""
    out = ["\n## Operator divergence\n"]
    out.append(
        "Jensen–Shannon divergence (base 2) between the cell distributions of the candidates "
        "two nodes' operators produced: 0 = same cells in the same proportions, 1 = disjoint. "
        f"Mean: **{number(divergence.get('mean'))}**.\n\n"
    )
    pairs = divergence.get("pairs") or {}
    if pairs:
        out.append(
            markdown_table(
                ["nodes", "divergence"],
                [[key.replace("|", " vs "), number(value)] for key, value in pairs.items()],
            )
        )
    return out


def _budget_section(summary: RunSummary) -> list[str]:
    """``## Budget``: each node's and the run's usage, wall time, evaluations, and the notes
    the table cannot show."""
    budget = summary.budget
    out = ["\n## Budget\n"]
    out.append(
        markdown_table(
            [
                "node",
                "model",
                "calls",
                "quota",
                "attempts",
                "prompt tokens",
                "completion tokens",
                "cost (USD)",
                "call seconds",
            ],
            [
                [
                    name,
                    usage.get("model", ""),
                    usage.get("calls"),
                    usage.get("quota"),
                    usage.get("attempts"),
                    usage.get("prompt_tokens"),
                    usage.get("completion_tokens"),
                    number(usage.get("cost_usd"), ".4f"),
                    number(usage.get("call_seconds"), ".1f"),
                ]
                for name, usage in (budget.get("nodes") or {}).items()
            ]
            + [
                [
                    "**total**",
                    "",
                    budget.get("calls"),
                    budget.get("limit"),
                    budget.get("attempts"),
                    budget.get("prompt_tokens"),
                    budget.get("completion_tokens"),
                    number(budget.get("cost_usd"), ".4f"),
                    number(budget.get("call_seconds"), ".1f"),
                ]
            ],
        )
    )
    out.append(
        f"\nWall time {number(budget.get('wall_seconds'), '.1f')} s; "
        f"{summary.evaluated} evaluations, {summary.invalid} invalid"
        f"{_stopped_note(summary.stopped)}.\n"
    )
    if summary.no_elite:
        out.append(f"\n**{summary.no_elite}**\n")
    out.extend(_budget_notes(budget))
    return out


def _champions_section(nodes: Mapping[str, NodeSummary]) -> list[str]:
    """``## Champions``: each node's champion program (cut after :data:`CHAMPION_LINES` lines),
    where it came from, its fitness and cell."""
    out = ["\n## Champions\n"]
    for name, node in nodes.items():
        champion = node.champion
        if not champion:
            out.append(f"- {name}: no valid champion\n")
            continue
        lines = champion.text.splitlines()
        shown = "\n".join(lines[:CHAMPION_LINES])
        if len(lines) > CHAMPION_LINES:
            shown += f"\n... ({len(lines) - CHAMPION_LINES} more lines)"
        out.append(
            f"<details><summary>{name} ({node.operator}){_origin(champion, nodes)}: "
            f"fitness {number(champion.fitness)}, cell {list(champion.cell)}</summary>\n\n"
            f"```\n{shown}\n```\n</details>\n\n"
        )
    return out


def _budget_notes(budget: dict[str, Any]) -> list[str]:
    """Lines on what the budget table cannot show: the compute axis, unknown costs, caps hit."""
    notes = []
    axis = budget.get("axis", "calls")
    if axis != "calls":
        notes.append(
            f"\nEqual compute on **{axis}**: {budget.get('spent')} of "
            f"{budget.get('limit')} spent.\n"
        )
    for name in budget.get("unpriced_nodes") or []:
        model = (budget.get("nodes") or {}).get(name, {}).get("model", "?")
        notes.append(
            f"\nCost of {name} unknown: no price for {model} (give one with "
            "`--price MODEL=IN,OUT`); the total cost is unknown too.\n"
        )
    for name, usage in (budget.get("nodes") or {}).items():
        if usage.get("exhausted"):
            notes.append(f"\n{name} reached a cap: {usage['exhausted']}.\n")
    return notes


def _origin(champion: Champion, nodes: Mapping[str, NodeSummary]) -> str:
    """``", received from node-0 (gp)"`` for a champion another node wrote, a mark for an
    initial or seed program, else ``""``.

    A received champion keeps the label ``peer:<node>`` where it is admitted; the operator
    that wrote it is the origin node's.
    """
    label = champion.operator
    if label in ("initial", "seed"):
        # Not the search's find: nothing the node's operator wrote did better.
        return f", the run's {label} program (no candidate of the search beat it)"
    if not label.startswith("peer:"):
        return ""
    origin = label.removeprefix("peer:")
    operator = nodes[origin].operator if origin in nodes else None
    return f", received from {origin}" + (f" ({operator})" if operator else "")


def _last(values: Sequence[Any] | None) -> Any:
    return values[-1] if values else None


#: How the report words each kind of stopped candidate.
_STOPPED_WORDS = {
    "timeout": "over the time limit",
    "memory": "over the memory limit",
    "file": "over the file size limit",
    "processes": "over the process limit",
    "killed": "killed by a signal",
    "sandbox": "took their sandbox down",
}


def _stopped_note(stopped: Mapping[str, int] | None) -> str:
    """``" (of which 1 over the time limit, ...)"`` for a sandboxed run's stopped candidates."""
    if stopped is None:
        return ""
    parts = [
        f"{count} {_STOPPED_WORDS.get(kind, kind)}"
        for kind, count in stopped.items()
        if isinstance(count, int) and count
    ]
    return f" (of which {', '.join(parts)})" if parts else " (none stopped by a limit)"
