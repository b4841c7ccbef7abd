"""Reports: ``report.md`` with tables and PNG plots for a run directory or an experiment directory.

:func:`write_run_report` is what ``dei-run`` calls at the end of a run and what ``dei report DIR``
calls; it tells a run from an experiment by the shape of ``summary.json`` (an experiment's has
``conditions``). Plots go to ``plots/`` next to ``report.md`` and are linked relatively, so the
directory can be moved or published as it is. matplotlib is imported lazily (Agg backend): the
rest of the framework does not need it.
"""

from __future__ import annotations

import contextlib
import json
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dei_framework.archive import GridArchive
from dei_framework.descriptors import DescriptorSpace
from dei_framework.errors import ConfigError

#: Folder of the plots, relative to ``report.md``.
PLOTS = "plots"
#: Champion listings longer than this many lines are cut in the report.
CHAMPION_LINES = 40
#: Heatmap cells are annotated with their value up to this many cells.
ANNOTATE_CELLS = 64
#: Most tick labels per heatmap axis: a 100-bin axis labels every 9th bin, not all 100.
MAX_TICKS = 12


def write_run_report(path: Path) -> Path:
    """Writes ``report.md`` and ``plots/*.png`` for a run or an experiment directory.

    Args:
        path: A run directory (``summary.json`` with ``nodes``) or an experiment directory
            (``experiment.json``; its ``summary.json`` is recomputed from the finished runs
            when missing, e.g. after an interruption).

    Returns:
        The path of ``report.md``.

    Raises:
        ConfigError: ``path`` holds neither a finished run nor an experiment.
    """
    path = Path(path)
    summary = _load_summary(path)
    if "conditions" in summary:
        markdown = _experiment_report(path, summary)
    elif "nodes" in summary:
        markdown = _run_report(path, summary)
    else:
        raise ConfigError(f"{path / 'summary.json'} is neither a run nor an experiment summary")
    report = path / "report.md"
    report.write_text(markdown, encoding="utf-8")
    return report


def _load_summary(path: Path) -> dict[str, Any]:
    summary_path = path / "summary.json"
    if summary_path.exists():
        try:
            return json.loads(summary_path.read_text())
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{summary_path} is damaged: {exc}") from None
    if (path / "experiment.json").exists():
        from dei_framework.experiment_summary import summarize_experiment

        return summarize_experiment(path)
    if (path / "config.json").exists():
        raise ConfigError(f"{path} has no summary.json: the run has not finished "
                          f"(continue it with dei-run --resume {path})")  # fmt: skip
    raise ConfigError(f"{path} is neither a run nor an experiment directory")


# --- formatting ---------------------------------------------------------------------------------


def _budget_notes(budget: dict[str, Any]) -> list[str]:
    """Lines on what the budget table cannot show: the compute axis, unknown costs, caps hit."""
    notes = []
    axis = budget.get("axis", "calls")
    if axis != "calls":
        notes.append(f"\nEqual compute on **{axis}**: {budget.get('spent')} of "
                     f"{budget.get('limit')} spent.\n")  # fmt: skip
    for name in budget.get("unpriced_nodes") or []:
        model = (budget.get("nodes") or {}).get(name, {}).get("model", "?")
        notes.append(f"\nCost of {name} unknown: no price for {model} (give one with "
                     "`--price MODEL=IN,OUT`); the total cost is unknown too.\n")  # fmt: skip
    for name, usage in (budget.get("nodes") or {}).items():
        if usage.get("exhausted"):
            notes.append(f"\n{name} reached a cap: {usage['exhausted']}.\n")
    return notes


def _num(value: Any, spec: str = ".3f") -> str:
    """A number formatted with ``spec``; ``–`` for missing values."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return format(value, spec)


def _pm(stats: Mapping[str, Any] | None, spec: str = ".3f") -> str:
    """``mean ± std`` of a :func:`dei_framework.experiment_summary.describe` value; ``(n = k)``
    when the value is pooled over nodes and repeats (its n is then not the repeats')."""
    if not stats or stats.get("mean") is None:
        return "–"
    text = format(stats["mean"], spec)
    if stats.get("std") is not None:
        text += f" ± {format(stats['std'], spec)}"
    if stats.get("unit") == "nodes x repeats":
        text += f" (n = {stats.get('n')})"
    return text


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _image(title: str, relative: str | None) -> str:
    return f"![{title}]({relative})\n" if relative else ""


# --- archives -----------------------------------------------------------------------------------


def final_archives(run_dir: Path) -> dict[str, GridArchive]:
    """Each node's archive of its last finished round (from ``nodes/<node>/round-NNN.json``),
    in the run's grid.

    A node may search over axes of its own (``[[node]] axes``) or with another archive kind;
    its elites carry the run's axes too, and are placed in the run's grid here as the run's own
    merge places them, so that panels and merges compare like with like.
    """
    documents: dict[str, dict[str, Any]] = {}
    nodes_dir = run_dir / "nodes"
    if not nodes_dir.is_dir():
        return {}
    for node_dir in sorted(p for p in nodes_dir.iterdir() if p.is_dir()):
        rounds = sorted(node_dir.glob("round-*.json"))
        if rounds:
            with contextlib.suppress(json.JSONDecodeError, KeyError, OSError):
                documents[node_dir.name] = json.loads(rounds[-1].read_text())["archive"]
    space = _run_grid(run_dir, documents)
    archives: dict[str, GridArchive] = {}
    for name, document in documents.items():
        try:
            if space is None:
                archives[name] = GridArchive.from_json(document)
            else:
                archives[name] = GridArchive(
                    space=space, qd_offset=document.get("qd_offset", 0.0)
                ).fill_from_json(document)  # fmt: skip
        except (KeyError, TypeError, ConfigError):
            continue  # a damaged file only costs its heatmap
    return archives


def _run_grid(run_dir: Path, documents: Mapping[str, Mapping[str, Any]]) -> DescriptorSpace | None:
    """The run's grid: recorded in ``summary.json``, else (older runs) the space of a node
    that searched over the run's axes; ``None`` when neither is known."""
    with contextlib.suppress(OSError, json.JSONDecodeError, KeyError, TypeError, ConfigError):
        space = json.loads((run_dir / "summary.json").read_text())["space"]
        if "grid" in space:
            return DescriptorSpace.from_json(space["grid"])
        for document in documents.values():
            candidate = DescriptorSpace.from_json(document["space"])
            if list(candidate.names) == list(space["axes"]):
                return candidate
    return None


def _grid_2d(grid: np.ndarray, reduce: str = "max") -> np.ndarray:
    """A grid as 2-D: 1-D grids become one row; axes beyond the second are reduced away."""
    if grid.ndim == 1:
        return grid[:, None]
    if grid.ndim > 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices stay NaN
            extra = tuple(range(2, grid.ndim))
            grid = np.nanmax(grid, axis=extra) if reduce == "max" else np.nanmean(grid, axis=extra)
    return grid


# --- plotting -----------------------------------------------------------------------------------


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    _pyplot().close(fig)


def _ticks(labels: Sequence[str]) -> tuple[list[int], list[str]]:
    """Positions and labels of at most :data:`MAX_TICKS` evenly spaced bins, the first included."""
    step = math.ceil(len(labels) / MAX_TICKS) or 1
    positions = list(range(0, len(labels), step))
    return positions, [labels[i] for i in positions]


def plot_heatmaps(
    panels: Sequence[tuple[str, np.ndarray]],
    space: DescriptorSpace,
    path: Path,
    *,
    colorbar: str,
    value_range: tuple[float, float] | None = None,
    fmt: str = ".2f",
) -> None:
    """One heatmap per panel over the first two descriptor axes, with a shared colour scale.

    Args:
        panels: ``(title, grid)`` pairs; grids are shaped like ``space`` (NaN: empty cell).
        space: The descriptor space (tick labels come from its axes' bins).
        path: The PNG to write.
        colorbar: Label of the colour bar.
        value_range: Colour scale; default: the finite range over all panels.
        fmt: Format of the per-cell annotations (small grids only).
    """
    plt = _pyplot()
    grids = [_grid_2d(np.asarray(grid, dtype=float)) for _, grid in panels]
    finite = np.concatenate([g[np.isfinite(g)] for g in grids]) if grids else np.array([])
    if value_range is None:
        low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        value_range = (low, high if high > low else low + 1.0)
    columns = min(len(panels), 3)
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 4.2 * rows), squeeze=False,
                             layout="constrained")  # fmt: skip
    cmap = plt.get_cmap("viridis").with_extremes(bad="#e6e6e6")
    x_axis = space.axes[0]
    y_axis = space.axes[1] if len(space.axes) > 1 else None
    image = None
    for ax, (title, _), grid in zip(axes.flat, panels, grids, strict=False):
        image = ax.imshow(np.ma.masked_invalid(grid.T), origin="lower", aspect="auto", cmap=cmap,
                          vmin=value_range[0], vmax=value_range[1])  # fmt: skip
        filled = int(np.isfinite(grid).sum())
        ax.set_title(f"{title} ({filled}/{grid.size} cells)", fontsize=10)
        ax.set_xticks(*_ticks(x_axis.labels()), rotation=45, fontsize=7, ha="right")
        ax.set_xlabel(x_axis.name, fontsize=8)
        if y_axis is not None:
            ax.set_yticks(*_ticks(y_axis.labels()), fontsize=7)
            ax.set_ylabel(y_axis.name, fontsize=8)
        else:
            ax.set_yticks([])
        if grid.size <= ANNOTATE_CELLS:
            for (i, j), value in np.ndenumerate(grid):
                if np.isfinite(value):
                    ax.text(
                        i,
                        j,
                        format(value, fmt),
                        ha="center",
                        va="center",
                        fontsize=6,
                        color="white" if value < np.mean(value_range) else "black",
                    )
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8, label=colorbar)
    if len(space.axes) > 2:
        fig.suptitle(f"first two of {len(space.axes)} axes (others: maximum)", fontsize=9)
    _save(fig, path)


def _line_plot(
    ax,
    series: Sequence[tuple[str, Sequence[float | None], Sequence[float | None] | None]],
    *,
    ylabel: str,
) -> bool:
    """Lines (with an optional ±spread band) against round; returns whether anything was drawn."""
    drawn = False
    for index, (label, means, spreads) in enumerate(series):
        x = [i for i, m in enumerate(means) if m is not None]
        if not x:
            continue
        y = np.array([means[i] for i in x], dtype=float)
        # Colour by position, so a series keeps its colour when another one is missing.
        (line,) = ax.plot(x, y, marker="o", label=label, color=f"C{index % 10}")
        if spreads is not None:
            s = np.array([spreads[i] if spreads[i] is not None else 0.0 for i in x], dtype=float)
            ax.fill_between(x, y - s, y + s, alpha=0.2, color=line.get_color())
        drawn = True
    ax.set_xlabel("round")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    rounds = max((len(m) for _, m, _ in series), default=0)
    ax.set_xticks(range(rounds))
    if drawn:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "not measured", transform=ax.transAxes, ha="center", va="center")
    return drawn


# --- run report ---------------------------------------------------------------------------------


def _run_report(path: Path, summary: Mapping[str, Any]) -> str:
    nodes: Mapping[str, Any] = summary["nodes"]
    merged = summary.get("merged", {})
    budget = summary.get("budget", {})
    plots = path / PLOTS
    images = _run_plots(path, summary, plots)
    space = summary.get("space") or {}
    out = [f"# DEI run: {summary.get('domain', '?')}\n"]
    out.append(
        f"{len(nodes)} node(s), {summary.get('rounds', '?')} round(s) "
        f"({summary.get('lifecycle', 'reset')} archives), seed "
        f"{summary.get('seed', '?')}, transport `{summary.get('transport', '?')}`, sharing "
        f"`{summary.get('sharing', '?')}`; grid {' x '.join(map(str, space.get('shape', [])))} "
        f"over {', '.join(space.get('axes', []))} ({space.get('cells', '?')} cells).\n"
    )
    out.append("## Merged archive\n")
    out.append("Best elite per cell across every node's final-round archive. **Raw**: fitness as "
               "each node measured it, against its own opponent pool.")
    common = merged.get("common")
    rows = [["raw", _num(merged.get("coverage"), ".1%"), _num(merged.get("qd_score"), ".2f"),
             merged.get("num_elites", 0), _num(merged.get("obj_max")),
             _num(merged.get("obj_mean"))]]  # fmt: skip
    if common:
        k = common.get("common_seeds")
        scored = (f" The kept elites were then scored as the mean of K = {k} fresh seeds "
                  f"(standard error of the QD-score from them: "
                  f"{_num(common.get('qd_score_sem'), '.2f')}; on the selection measurement it "
                  f"was {_num(common.get('selection_qd_gap'), '+.2f')} higher)."
                  if k else "")  # fmt: skip
        out.append(" **Common ground**: every elite re-evaluated against the reference set "
                   f"({_reference(common.get('reference'))}) with one selection seed, placed by "
                   "its common-ground descriptor, the best per cell kept "
                   f"(`merged_archive.json`).{scored}")  # fmt: skip
        rows.append(["common ground", _num(common.get("coverage"), ".1%"),
                     _num(common.get("qd_score"), ".2f"), common.get("num_elites", 0),
                     _num(common.get("obj_max")), _num(common.get("obj_mean"))])  # fmt: skip
    out.append("\n")
    out.append(_table(["measure", "coverage", "QD-score", "elites", "best fitness",
                       "mean fitness"], rows))  # fmt: skip
    out.append(_image("archives", images.get("heatmaps")))
    out.append("\n## Nodes\n")
    out.append(_table(
        ["node", "operator", "calls", "rounds", "champion fitness", "generality (final / peak)",
         "niche novelty", "coverage", "QD-score", "stopped"],
        [[name, node.get("operator", ""), f"{node.get('calls', 0)}/{node.get('quota', '?')}",
          node.get("rounds_completed", "?"), _num((node.get("champion") or {}).get("fitness")),
          f"{_num(node.get('generality'))} / {_num(node.get('generality_peak'))}",
          _num(node.get("niche_novelty")), _num(_last(node.get("coverage_per_round")), ".1%"),
          _num(_last(node.get("qd_score_per_round")), ".2f"), node.get("stopped") or ""]
         for name, node in nodes.items()],
    ))  # fmt: skip
    out.append(
        "\nGenerality: share of the domain's reference programs the champion beats or ties "
        "(– when the domain has none). Niche novelty: share of received peer champions that "
        "landed in a cell empty in the receiver's previous-round archive (– when none "
        "arrived).\n"
    )
    out.append("\n## Per round\n")
    per_round = merged.get("per_round", [])
    names = list(nodes)
    out.append(_table(
        ["round", "merged coverage", "merged QD-score",
         *[f"{n} coverage" for n in names], *[f"{n} generality" for n in names]],
        [[entry.get("round", i), _num(entry.get("coverage"), ".1%"),
          _num(entry.get("qd_score"), ".2f"),
          *[_num(_at(nodes[n].get("coverage_per_round"), i), ".1%") for n in names],
          *[_num(_at(nodes[n].get("generality_per_round"), i)) for n in names]]
         for i, entry in enumerate(per_round)],
    ))  # fmt: skip
    out.append(_image("coverage and QD-score per round", images.get("progress")))
    out.append(_image("generality per round", images.get("generality")))
    out.append(_image("niche novelty per round", images.get("niche_novelty")))
    divergence = summary.get("operator_divergence") or {}
    out.append("\n## Operator divergence\n")
    out.append(
        "Jensen–Shannon divergence (base 2) between the cell distributions of the candidates "
        "two nodes' operators produced: 0 = same cells in the same proportions, 1 = disjoint. "
        f"Mean: **{_num(divergence.get('mean'))}**.\n\n"
    )
    pairs = divergence.get("pairs") or {}
    if pairs:
        out.append(_table(["nodes", "divergence"],
                          [[key.replace("|", " vs "), _num(value)]
                           for key, value in pairs.items()]))  # fmt: skip
    out.append("\n## Budget\n")
    out.append(_table(
        ["node", "model", "calls", "quota", "attempts", "prompt tokens", "completion tokens",
         "cost (USD)", "call seconds"],
        [[name, usage.get("model", ""), usage.get("calls"), usage.get("quota"),
          usage.get("attempts"), usage.get("prompt_tokens"), usage.get("completion_tokens"),
          _num(usage.get("cost_usd"), ".4f"), _num(usage.get("call_seconds"), ".1f")]
         for name, usage in (budget.get("nodes") or {}).items()]
        + [["**total**", "", budget.get("calls"), budget.get("limit"), budget.get("attempts"),
            budget.get("prompt_tokens"), budget.get("completion_tokens"),
            _num(budget.get("cost_usd"), ".4f"), _num(budget.get("call_seconds"), ".1f")]],
    ))  # fmt: skip
    out.append(
        f"\nWall time {_num(budget.get('wall_seconds'), '.1f')} s; "
        f"{summary.get('evaluated', '?')} evaluations, {summary.get('invalid', '?')} invalid.\n"
    )
    out.extend(_budget_notes(budget))
    out.append("\n## Champions\n")
    for name, node in nodes.items():
        champion = node.get("champion")
        if not champion:
            out.append(f"- {name}: no valid champion\n")
            continue
        lines = str(champion.get("text", "")).splitlines()
        shown = "\n".join(lines[:CHAMPION_LINES])
        if len(lines) > CHAMPION_LINES:
            shown += f"\n... ({len(lines) - CHAMPION_LINES} more lines)"
        out.append(
            f"<details><summary>{name} ({node.get('operator', '')}){_origin(champion, nodes)}: "
            f"fitness {_num(champion.get('fitness'))}, cell {champion.get('cell')}</summary>\n\n"
            f"```\n{shown}\n```\n</details>\n\n"
        )
    return "\n".join(out)


def _origin(champion: Mapping[str, Any], nodes: Mapping[str, Any]) -> str:
    """``", received from node-0 (gp)"`` for a champion another node wrote, else ``""``.

    A received champion keeps the label ``peer:<node>`` where it is admitted; the operator
    that wrote it is the origin node's.
    """
    label = str(champion.get("operator") or "")
    if not label.startswith("peer:"):
        return ""
    origin = label.removeprefix("peer:")
    operator = (nodes.get(origin) or {}).get("operator")
    return f", received from {origin}" + (f" ({operator})" if operator else "")


def _reference(record: Any) -> str:
    """``4 programs, sha256 1a2b3c4d…`` of a ``{"count", "sha256"}`` record."""
    if isinstance(record, Mapping):
        return f"{record.get('count')} programs, sha256 `{str(record.get('sha256'))[:12]}`"
    if isinstance(record, list):
        return "**differs between runs**: " + "; ".join(_reference(r) for r in record)
    return "–"


def _last(values: Sequence[Any] | None) -> Any:
    return values[-1] if values else None


def _at(values: Sequence[Any] | None, index: int) -> Any:
    return values[index] if values and index < len(values) else None


def _run_plots(path: Path, summary: Mapping[str, Any], plots: Path) -> dict[str, str]:
    """Writes the run's PNGs; returns their paths relative to the run directory by name."""
    images: dict[str, str] = {}
    nodes: Mapping[str, Any] = summary["nodes"]
    plt = _pyplot()
    archives = final_archives(path)
    if archives:
        space = next(iter(archives.values())).space
        panels = [(f"{name} ({nodes.get(name, {}).get('operator', '')})", a.fitness_grid())
                  for name, a in archives.items()]  # fmt: skip
        panels.append(("merged", GridArchive.merge(archives.values()).fitness_grid()))
        plot_heatmaps(panels, space, plots / "heatmaps.png", colorbar="fitness")
        images["heatmaps"] = f"{PLOTS}/heatmaps.png"
    per_round = summary.get("merged", {}).get("per_round", [])
    fig, (ax_cov, ax_qd) = plt.subplots(1, 2, figsize=(11, 4))
    coverage = [("merged", [e.get("coverage") for e in per_round], None)]
    qd = [("merged", [e.get("qd_score") for e in per_round], None)]
    for name, node in nodes.items():
        coverage.append((name, list(node.get("coverage_per_round") or []), None))
        qd.append((name, list(node.get("qd_score_per_round") or []), None))
    _line_plot(ax_cov, coverage, ylabel="coverage")
    _line_plot(ax_qd, qd, ylabel="QD-score")
    fig.suptitle("Archive coverage and QD-score per round (merged = best per cell over nodes)")
    _save(fig, plots / "progress.png")
    images["progress"] = f"{PLOTS}/progress.png"
    for key, field, label in (
        ("generality", "generality_per_round", "champion generality"),
        ("niche_novelty", "niche_novelty_per_round", "niche novelty"),
    ):
        series = [(f"{name} ({node.get('operator', '')})", list(node.get(field) or []), None)
                  for name, node in nodes.items()]  # fmt: skip
        if not any(v is not None for _, values, _ in series for v in values):
            continue  # nothing measured: no empty plot in the report
        fig, ax = plt.subplots(figsize=(6, 4))
        _line_plot(ax, series, ylabel=label)
        ax.set_title(f"{label} per round, per node")
        _save(fig, plots / f"{key}.png")
        images[key] = f"{PLOTS}/{key}.png"
    return images


# --- experiment report --------------------------------------------------------------------------


def _equal_compute_terms(summary: Mapping[str, Any]) -> str:
    """What every condition got, on the experiment's compute axis."""
    axis, budget = summary.get("compute_axis", "calls"), summary.get("budget")
    if axis == "tokens":
        return f"**{budget} tokens** (prompt + completion)"
    if axis == "cost":
        return f"**{_num(summary.get('compute_limit'), '.4f')} USD** (at most {budget} calls)"
    return f"**{budget} operator calls**"


def _experiment_report(path: Path, summary: Mapping[str, Any]) -> str:
    conditions: Mapping[str, Any] = summary["conditions"]
    images = _experiment_plots(path, summary, path / PLOTS)
    out = [f"# DEI experiment: {summary.get('domain', '?')}\n"]
    equal = "holds" if summary.get("equal_compute") else "**does not hold** (see budget below)"
    out.append(
        f"Equal compute: every condition gets {_equal_compute_terms(summary)} in "
        f"total over {summary.get('rounds')} round(s); {summary.get('repeats')} repeat(s) per "
        f"condition with seeds {summary.get('seeds')} (the same seeds for every condition). "
        f"Equal compute {equal}. Values are mean ± sample standard deviation over **repeats** "
        "(n = the repeats column), except where an n follows them: those are pooled over "
        "**nodes × repeats** (every node of every repeat is one value, so n = nodes × "
        "repeats; such values are not independent).\n"
    )
    out.append("## Conditions\n")
    out.append(_table(
        ["condition", "nodes", "operators", "repeats", "coverage (common)", "QD-score (common)",
         "coverage (raw)", "QD-score (raw)", "generality", "peak generality", "niche novelty",
         "operator divergence"],
        [[name, c["nodes"], _operators(c["operators"]), c["repeats_completed"],
          _pm(_common(c).get("coverage"), ".1%"), _pm(_common(c).get("qd_score"), ".2f"),
          _pm(c["merged"]["coverage"], ".1%"), _pm(c["merged"]["qd_score"], ".2f"),
          _pm(c.get("generality")), _pm(c.get("generality_peak")), _pm(c.get("niche_novelty")),
          _pm(c.get("operator_divergence"))]
         for name, c in conditions.items()],
    ))  # fmt: skip
    out.append(
        "\nCommon ground: the best-per-cell merge of a run's final-round archives after every "
        f"elite was re-evaluated against one reference set "
        f"({_reference(summary.get('common_reference'))}); "
        f"{_scoring_terms({n: _common(c) for n, c in conditions.items()})} The same program "
        "scores the same in every condition. Raw: the same merge with fitness as each node "
        "measured it against its own opponent pool (pools differ between conditions). "
        "Generality, peak generality and niche novelty: mean over nodes × repeats (final-round "
        "champion, best round's champion, and share of received champions that filled an "
        "empty niche); generality set: "
        f"{_reference(summary.get('generality_reference'))}. Operator divergence: mean pairwise "
        "Jensen–Shannon divergence of the nodes' candidate-cell distributions (undefined for "
        "one node).\n"
    )
    if summary.get("raw_fitness_scales_differ"):
        scales = "; ".join(
            f"{name}: {', '.join(_num(x, 'g') for x in c['merged']['raw_fitness_scales'])}"
            for name, c in conditions.items()
        )
        out.append(
            "\n**Battle sizes differ between conditions**, so raw fitness is on different "
            f"scales (the domain's fitness scale of the nodes' final rounds — {scales}). Compare "
            "conditions on the common-ground figures.\n"
        )
    out.append(_comparisons(summary.get("comparisons") or []))
    out.append(_image("final merged coverage and QD-score", images.get("final")))
    out.append(_image("coverage and QD-score per round", images.get("progress")))
    out.append("\n## Per round (merged archive)\n")
    rounds = max((len(c["merged"]["per_round"]) for c in conditions.values()), default=0)
    names = list(conditions)
    out.append(_table(
        ["round", *[f"{n} coverage" for n in names], *[f"{n} QD-score" for n in names]],
        [[r, *[_pm(_round_stat(conditions[n], r, "coverage"), ".1%") for n in names],
          *[_pm(_round_stat(conditions[n], r, "qd_score"), ".2f") for n in names]]
         for r in range(rounds)],
    ))  # fmt: skip
    out.append("\n## Nodes\n")
    rows = []
    for name, c in conditions.items():
        for node, stats in c["per_node"].items():
            rows.append([name, node, stats["operator"], _pm(stats["champion_fitness"]),
                         _pm(stats.get("champion_common_fitness")),
                         _pm(stats["generality"]), _pm(stats["generality_peak"]),
                         _pm(stats["niche_novelty"])])  # fmt: skip
    out.append(_table(["condition", "node", "operator", "champion fitness (raw)",
                       "champion fitness (common)", "generality", "peak generality",
                       "niche novelty"], rows))  # fmt: skip
    out.append(_image("generality per round", images.get("generality")))
    out.append(_image("niche novelty", images.get("niche_novelty")))
    out.append(_image("merged-archive occupancy", images.get("heatmaps")))
    out.append("\n## Runs\n")
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
                    _num(merged.get("coverage"), ".1%"),
                    _num(merged.get("qd_score"), ".2f"),
                    f"{budget.get('calls')}/{budget.get('limit')}",
                    budget.get("attempts"),
                    _num(budget.get("wall_seconds"), ".1f"),
                ]
            )
    out.append(
        _table(
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
        )
    )
    missing = [
        f"{n} ({c['repeats_completed']}/{summary.get('repeats')})"
        for n, c in conditions.items()
        if c["repeats_completed"] < summary.get("repeats", 0)
    ]
    if missing:
        out.append(f"\nUnfinished: {', '.join(missing)} repeats done; continue with "
                   f"`dei experiment --resume {path}`.\n")  # fmt: skip
    return "\n".join(out)


def _common(condition: Mapping[str, Any]) -> Mapping[str, Any]:
    return condition["merged"].get("common") or {}


def _scoring_terms(commons: Mapping[str, Mapping[str, Any]]) -> str:
    """How common-ground fitness was measured: the K scoring seeds, or (older runs) one seed."""
    seeds = {c.get("common_seeds") for c in commons.values() if c.get("common_seeds") is not None}
    if not seeds:
        return ("each elite measured once, with one seed, and the best per cell kept on that "
                "same measurement (a run from before K-seed scoring: biased upward).")  # fmt: skip
    k = ", ".join(str(s) for s in sorted(seeds))
    text = (f"the elite of each cell chosen on one measurement (the selection seed), then "
            f"scored as the mean of **K = {k}** fresh seeds (independent of the choice, so "
            "free of the winner's curse).")  # fmt: skip
    gaps = [f"{name} {_pm(c.get('selection_qd_gap'), '.2f')}" for name, c in commons.items()
            if (c.get("selection_qd_gap") or {}).get("mean") is not None]  # fmt: skip
    sems = [f"{name} {_num((c.get('qd_score_sem') or {}).get('mean'), '.2f')}"
            for name, c in commons.items()
            if (c.get("qd_score_sem") or {}).get("mean") is not None]  # fmt: skip
    if gaps:
        text += (" QD-score on the selection measurement minus the scored one (the bias the "
                 f"scoring removed; over repeats): {'; '.join(gaps)}.")  # fmt: skip
    if sems:
        text += (" Standard error of a run's common QD-score from its K seeds (mean over "
                 f"repeats): {'; '.join(sems)}.")  # fmt: skip
    return text


def _comparisons(entries: Sequence[Mapping[str, Any]]) -> str:
    """The ``comparisons`` table: Diverse against every other condition."""
    if not entries:
        return ""
    out = ["\n## Comparisons\n"]
    legacy = all("ci" not in entry for entry in entries)  # an experiment summarised before
    n = sorted({f"{e.get('n_a')} / {e.get('n_b')}" for e in entries})
    if legacy:
        out.append(
            "Difference of means over repeats (a − b) with its 95 % percentile bootstrap "
            f"interval and the p-value of the {entries[0]['test']} (this summary predates the "
            "rank-based intervals, A12 and Holm's adjustment; `dei report` on a re-summarised "
            "experiment shows them).\n"
        )
    else:
        out.append(
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
    metrics = {"merged.common.coverage": ("coverage (common)", ".1%"),
               "merged.common.qd_score": ("QD-score (common)", ".2f"),
               "merged.coverage": ("coverage (raw)", ".1%"),
               "merged.qd_score": ("QD-score (raw)", ".2f")}  # fmt: skip
    rows = []
    for entry in entries:
        label, spec = metrics.get(entry["metric"], (entry["metric"], ".3f"))
        pair = [f"{entry['a']} − {entry['b']}", label, f"{entry.get('n_a')} / {entry.get('n_b')}",
                _num(entry.get("diff"), spec)]  # fmt: skip
        if legacy:
            ci = entry.get("ci95")
            rows.append([*pair, f"[{_num(ci[0], spec)}, {_num(ci[1], spec)}]" if ci else "–",
                         _num(entry.get("p_value"), ".3f")])  # fmt: skip
            continue
        rows.append([*pair, _num(entry.get("shift"), spec), _interval(entry, spec),
                     _num(entry.get("a12"), ".2f"), _num(entry.get("p_value"), ".3f"),
                     _num(entry.get("p_holm"), ".3f")])  # fmt: skip
    if legacy:
        out.append(_table(["a − b", "metric", "n", "difference", "95% CI", "p"], rows))
    else:
        out.append(_table(["a − b", "metric", "n (repeats)", "difference of means",
                           "shift (HL)", "CI [level]", "A12", "p", "p (Holm)"], rows))  # fmt: skip
    return "\n".join(out)


def _interval(entry: Mapping[str, Any], spec: str) -> str:
    """``[low, high] [96.8%]`` of a comparison; italic when it does not reach 95 %."""
    ci = entry.get("ci")
    if not ci:
        return "–"
    text = f"[{_num(ci[0], spec)}, {_num(ci[1], spec)}] [{_num(entry.get('ci_level'), '.1%')}]"
    return text if entry.get("ci95") else f"*{text}*"


def _round_stat(condition: Mapping[str, Any], index: int, field: str) -> Any:
    entry = _at(condition["merged"]["per_round"], index)
    return entry[field] if entry else None


def _operators(operators: Sequence[str]) -> str:
    """``gp x4`` or ``gp, templates, gp, templates``."""
    if len(set(operators)) == 1:
        return f"{operators[0]} x{len(operators)}"
    return ", ".join(operators)


def _experiment_plots(path: Path, summary: Mapping[str, Any], plots: Path) -> dict[str, str]:
    """Writes the experiment's PNGs; returns their relative paths by name."""
    plt = _pyplot()
    conditions: Mapping[str, Any] = summary["conditions"]
    images: dict[str, str] = {}
    names = list(conditions)

    # Final merged coverage / QD-score on common ground (what the comparisons use): mean ± std
    # bars with every repeat as a dot. Raw figures only for experiments from before common
    # ground, and labelled so.
    kind, final = final_figures(conditions)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, field, label in ((axes[0], "coverage", "merged coverage"),
                             (axes[1], "qd_score", "merged QD-score")):  # fmt: skip
        _bars_with_dots(ax, names, [final[name][field] for name in names])
        ax.set_ylabel(f"{label} ({kind})")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"Final merged archive, {kind}, at equal compute ({summary.get('budget')} "
                 f"calls per condition; bars: mean ± std over repeats, dots: repeats)")  # fmt: skip
    _save(fig, plots / "final.png")
    images["final"] = f"{PLOTS}/final.png"

    # Per round: common ground measures each round's champions (not each round's archives),
    # so the first panel is the champions' common-ground fitness; the archives' per-round
    # figures are raw, labelled so.
    champions = {name: champion_common_per_round(c) for name, c in conditions.items()}
    panels = 3 if any(champions.values()) else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4))
    if panels == 3:
        _line_plot(axes[0], [(name, [s["mean"] for s in rounds], [s["std"] for s in rounds])
                             for name, rounds in champions.items()],
                   ylabel="champion fitness (common ground)")  # fmt: skip
        axes[0].set_title("round champions, common ground\n(mean ± std over nodes × repeats)",
                          fontsize=9)  # fmt: skip
    for ax, field, label in ((axes[-2], "coverage", "merged coverage (raw)"),
                             (axes[-1], "qd_score", "merged QD-score (raw)")):  # fmt: skip
        _line_plot(ax, [(name, [e[field]["mean"] for e in c["merged"]["per_round"]],
                         [e[field]["std"] for e in c["merged"]["per_round"]])
                        for name, c in conditions.items()], ylabel=label)  # fmt: skip
        ax.set_title("raw: each node's own pool, not comparable\nacross conditions "
                     "(mean ± std over repeats)", fontsize=9)  # fmt: skip
    _save(fig, plots / "progress.png")
    images["progress"] = f"{PLOTS}/progress.png"

    # Generality per round: one panel per condition, one line per node.
    measured = any(
        s["mean"] is not None
        for c in conditions.values()
        for n in c["per_node"].values()
        for s in n["generality_per_round"]
    )
    if measured:
        fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.8), squeeze=False,
                                 sharey=True)  # fmt: skip
        for ax, name in zip(axes.flat, names, strict=True):
            series = [(f"{node} ({stats['operator']})",
                       [s["mean"] for s in stats["generality_per_round"]],
                       [s["std"] for s in stats["generality_per_round"]])
                      for node, stats in conditions[name]["per_node"].items()]  # fmt: skip
            _line_plot(ax, series, ylabel="champion generality")
            ax.set_title(name)
        fig.suptitle("Champion generality per round and node (mean ± std over repeats)")
        _save(fig, plots / "generality.png")
        images["generality"] = f"{PLOTS}/generality.png"

    # Niche novelty per condition: mean over nodes and repeats, every (node, repeat) a dot.
    if any(c["niche_novelty"]["mean"] is not None for c in conditions.values()):
        fig, ax = plt.subplots(figsize=(6, 4))
        _bars_with_dots(ax, names, [conditions[name]["niche_novelty"] for name in names])
        ax.set_ylabel("niche novelty")
        ax.set_title("Niche novelty per condition (mean ± std over nodes and repeats)")
        ax.grid(axis="y", alpha=0.3)
        _save(fig, plots / "niche_novelty.png")
        images["niche_novelty"] = f"{PLOTS}/niche_novelty.png"

    # Where each condition's merged archive reaches: share of repeats covering each cell, on
    # common ground (the cells of merged_archive.json) when measured, else raw.
    panels, space, kinds = [], None, set()
    for name, c in conditions.items():
        occupancy = []
        for run in c.get("runs", []):
            found = merged_occupancy(path / run.get("dir", ""))
            if found is not None:
                grid_space, grid, kind = found
                space = space or grid_space
                kinds.add(kind)
                occupancy.append(grid)
        if occupancy:
            frequency = np.mean(occupancy, axis=0)
            panels.append((f"{name} (n={len(occupancy)} repeats)",
                           np.where(frequency > 0, frequency, np.nan)))  # fmt: skip
    if panels and space is not None:
        plot_heatmaps(
            panels,
            space,
            plots / "heatmaps.png",
            colorbar=f"share of repeats with the cell filled ({' and '.join(sorted(kinds))})",
            value_range=(0.0, 1.0),
        )
        images["heatmaps"] = f"{PLOTS}/heatmaps.png"
    return images


def final_figures(conditions: Mapping[str, Any]) -> tuple[str, dict[str, dict[str, Any]]]:
    """What ``final.png`` draws: ``("common ground", ...)`` with each condition's
    common-ground coverage and QD-score statistics, or ``("raw", ...)`` when no condition
    measured common ground (an experiment from before it)."""
    if any((_common(c).get("qd_score") or {}).get("mean") is not None
           for c in conditions.values()):  # fmt: skip
        empty = {"mean": None, "std": None, "values": []}
        return "common ground", {
            name: {field: _common(c).get(field) or empty for field in ("coverage", "qd_score")}
            for name, c in conditions.items()
        }  # fmt: skip
    return "raw", {name: {field: c["merged"][field] for field in ("coverage", "qd_score")}
                   for name, c in conditions.items()}  # fmt: skip


def champion_common_per_round(condition: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per round, the round champions' common-ground fitness over nodes × repeats (empty when
    no run measured it)."""
    from dei_framework.experiment_summary import PER_NODE_REPEAT, describe

    series = [node.get("champion_common_fitness_per_round") or []
              for run in condition.get("runs", [])
              for node in run.get("nodes", {}).values()]  # fmt: skip
    rounds = max((len(s) for s in series), default=0)
    if not any(v is not None for s in series for v in s):
        return []
    return [describe([s[r] if r < len(s) else None for s in series], unit=PER_NODE_REPEAT)
            for r in range(rounds)]  # fmt: skip


def merged_occupancy(run_dir: Path) -> tuple[DescriptorSpace, np.ndarray, str] | None:
    """A run's merged-archive occupancy (1 filled, 0 empty) in the run's grid, and its kind:
    ``"common ground"`` from ``merged_archive.json``'s common-ground cells, else ``"raw"``
    from the nodes' final archives; ``None`` when neither can be read."""
    with contextlib.suppress(OSError, json.JSONDecodeError, KeyError, TypeError, ConfigError):
        entries = json.loads((run_dir / "merged_archive.json").read_text())
        space = DescriptorSpace.from_json(json.loads((run_dir / "summary.json").read_text())
                                          ["space"]["grid"])  # fmt: skip
        if entries and all(e.get("common_fitness") is not None for e in entries):
            grid = np.zeros(space.shape)
            for entry in entries:
                grid[tuple(entry["cell"])] = 1.0
            return space, grid, "common ground"
    archives = final_archives(run_dir)
    if not archives:
        return None
    merged = GridArchive.merge(archives.values())
    return merged.space, np.isfinite(merged.fitness_grid()).astype(float), "raw"


def _bars_with_dots(ax, names: list[str], stats: list[dict[str, Any]]) -> None:
    """One bar per condition (mean ± std) with every repeat's value as a dot."""
    for x, item in enumerate(stats):
        if item["mean"] is None:
            continue
        ax.bar(x, item["mean"], yerr=item["std"] or 0.0, capsize=4, alpha=0.6, color=f"C{x % 10}")
        values = [v for v in item["values"] if v is not None]
        ax.scatter([x] * len(values), values, color="black", s=12, zorder=3)
    ax.set_xticks(range(len(names)), names)
