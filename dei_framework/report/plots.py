"""The PNG plots of a run's and an experiment's report, and the archives they draw.

matplotlib is imported lazily (Agg backend): the rest of the framework does not need it.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dei_framework.analysis.formatting import MERGED_COLOR, node_colors
from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.payloads import ExperimentSummary
from dei_framework.experiment.summary import PER_NODE_REPEAT, condition_common, describe
from dei_framework.runtime.files import run_layout
from dei_framework.runtime.files.run_files import FinishedRun, damaged
from dei_framework.runtime.files.run_layout import MERGED_ARCHIVE_FILE
from dei_framework.search.archives import GridArchive

#: Folder of the plots, relative to ``report.md``.
PLOTS = "plots"
#: Heatmap cells are annotated with their value up to this many cells.
ANNOTATE_CELLS = 64


#: Most tick labels per heatmap axis: a 100-bin axis labels every 9th bin, not all 100.
MAX_TICKS = 12


def final_archives(run: FinishedRun) -> dict[str, GridArchive]:
    """Each node's archive of its last finished round (``nodes/<node>/round-NNN.json``), in
    the run's grid.

    A node may search over axes of its own (``[[node]] axes``) or with another archive kind;
    its elites carry the run's axes too, and are placed in the run's grid here as the run's own
    merge places them, so that panels and merges compare like with like.
    """
    documents = {name: rounds[-1]["archive"] for name, rounds in run.rounds.items() if rounds}
    space = _run_grid(run.summary.space, documents)
    archives: dict[str, GridArchive] = {}
    for name, document in documents.items():
        try:
            if space is None:
                archives[name] = GridArchive.from_json(document)
            else:
                archives[name] = GridArchive(
                    space=space, qd_offset=document.get("qd_offset", 0.0)
                ).fill_from_json(document)
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise damaged(
                run_layout.round_path(run.path, name, len(run.rounds[name]) - 1),
                f"its archive cannot be placed in the run's grid ({exc})",
            ) from None
    return archives


def _run_grid(
    space: Mapping[str, Any], documents: Mapping[str, Mapping[str, Any]]
) -> DescriptorSpace | None:
    """The run's grid: recorded in ``summary.json``, else (older runs) the space of a node
    that searched over the run's axes; ``None`` when neither is known."""
    with contextlib.suppress(KeyError, TypeError, ConfigError):  # an older run's summary
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
    fig, axes = plt.subplots(
        rows, columns, figsize=(4.6 * columns, 4.2 * rows), squeeze=False, layout="constrained"
    )
    cmap = plt.get_cmap("viridis").with_extremes(bad="#e6e6e6")
    x_axis = space.axes[0]
    y_axis = space.axes[1] if len(space.axes) > 1 else None
    image = None
    for ax, (title, _), grid in zip(axes.flat, panels, grids, strict=False):
        image = ax.imshow(
            np.ma.masked_invalid(grid.T),
            origin="lower",
            aspect="auto",
            cmap=cmap,
            vmin=value_range[0],
            vmax=value_range[1],
        )
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
    colors: Sequence[str] | None = None,
) -> bool:
    """Lines (with an optional ±spread band) against round; returns whether anything was drawn.

    ``colors`` gives each series its colour (the nodes': :func:`node_colors`); without it, the
    series are coloured by position.
    """
    drawn = False
    for index, (label, means, spreads) in enumerate(series):
        x = [i for i, m in enumerate(means) if m is not None]
        if not x:
            continue
        y = np.array([means[i] for i in x], dtype=float)
        # Colour by position, so a series keeps its colour when another one is missing.
        color = colors[index] if colors is not None else f"C{index % 10}"
        (line,) = ax.plot(x, y, marker="o", label=label, color=color)
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


def run_plots(run: FinishedRun, plots: Path) -> dict[str, str]:
    """Writes the run's PNGs; returns their paths relative to the run directory by name."""
    images: dict[str, str] = {}
    summary = run.summary
    nodes = summary.nodes
    archives = final_archives(run)  # first: a damaged archive ends it before any plot
    plt = _pyplot()
    if archives:
        space = next(iter(archives.values())).space
        panels = [
            (f"{name} ({nodes[name].operator if name in nodes else ''})", a.fitness_grid())
            for name, a in archives.items()
        ]
        panels.append(("merged", GridArchive.merge(archives.values()).fitness_grid()))
        plot_heatmaps(panels, space, plots / "heatmaps.png", colorbar="fitness")
        images["heatmaps"] = f"{PLOTS}/heatmaps.png"
    per_round = summary.merged.per_round
    fig, (ax_cov, ax_qd) = plt.subplots(1, 2, figsize=(11, 4))
    coverage = [("merged", [e.get("coverage") for e in per_round], None)]
    qd = [("merged", [e.get("qd_score") for e in per_round], None)]
    for name, node in nodes.items():
        coverage.append((name, list(node.coverage_per_round), None))
        qd.append((name, list(node.qd_score_per_round), None))
    colors = [MERGED_COLOR, *node_colors(nodes).values()]  # as the watch page colours them
    _line_plot(ax_cov, coverage, ylabel="coverage", colors=colors)
    _line_plot(ax_qd, qd, ylabel="QD-score", colors=colors)
    fig.suptitle("Archive coverage and QD-score per round (merged = best per cell over nodes)")
    _save(fig, plots / "progress.png")
    images["progress"] = f"{PLOTS}/progress.png"
    for key, field, label in (
        ("generality", "generality_per_round", "champion generality"),
        ("niche_novelty", "niche_novelty_per_round", "niche novelty"),
    ):
        series = [
            (f"{name} ({node.operator})", list(getattr(node, field)), None)
            for name, node in nodes.items()
        ]
        if not any(v is not None for _, values, _ in series for v in values):
            continue  # nothing measured: no empty plot in the report
        fig, ax = plt.subplots(figsize=(6, 4))
        _line_plot(ax, series, ylabel=label, colors=list(node_colors(nodes).values()))
        ax.set_title(f"{label} per round, per node")
        _save(fig, plots / f"{key}.png")
        images[key] = f"{PLOTS}/{key}.png"
    return images


def experiment_plots(
    summary: ExperimentSummary, runs: Mapping[str, FinishedRun], plots: Path
) -> dict[str, str]:
    """Writes the experiment's PNGs; returns their relative paths by name.

    Args:
        summary: The experiment's summary.
        runs: Its finished runs, by their folder relative to the experiment directory.
        plots: The folder to write to.
    """
    # The runs' archives first: a damaged one ends the report before any plot is written.
    occupancies = {folder: merged_occupancy(run) for folder, run in runs.items()}
    conditions: Mapping[str, Any] = summary["conditions"]
    images = {
        "final": _experiment_final_plot(summary, plots),
        "progress": _experiment_progress_plot(conditions, plots),
    }
    # The rest only where something was measured: no empty plot in the report.
    optional = {
        "generality": _experiment_generality_plot(conditions, plots),
        "niche_novelty": _experiment_niche_novelty_plot(conditions, plots),
        "heatmaps": _experiment_occupancy_plot(conditions, occupancies, plots),
    }
    images.update({key: image for key, image in optional.items() if image is not None})
    return images


def _experiment_final_plot(summary: Mapping[str, Any], plots: Path) -> str:
    """``final.png``: final merged coverage / QD-score on common ground (what the comparisons
    use), mean ± std bars with every repeat as a dot. Raw figures only for experiments from
    before common ground, and labelled so."""
    plt = _pyplot()
    conditions: Mapping[str, Any] = summary["conditions"]
    names = list(conditions)
    kind, final = final_figures(conditions)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, field, label in (
        (axes[0], "coverage", "merged coverage"),
        (axes[1], "qd_score", "merged QD-score"),
    ):
        _bars_with_dots(ax, names, [final[name][field] for name in names])
        ax.set_ylabel(f"{label} ({kind})")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(
        f"Final merged archive, {kind}, at equal compute ({summary.get('budget')} "
        f"calls per condition; bars: mean ± std over repeats, dots: repeats)"
    )
    _save(fig, plots / "final.png")
    return f"{PLOTS}/final.png"


def _experiment_progress_plot(conditions: Mapping[str, Any], plots: Path) -> str:
    """``progress.png``: per round, per condition.

    Common ground measures each round's champions (not each round's archives), so the first
    panel (where measured) is the champions' common-ground fitness; the archives' per-round
    figures are raw, labelled so.
    """
    plt = _pyplot()
    champions = {name: champion_common_per_round(c) for name, c in conditions.items()}
    panels = 3 if any(champions.values()) else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4))
    if panels == 3:
        _line_plot(
            axes[0],
            [
                (name, [s["mean"] for s in rounds], [s["std"] for s in rounds])
                for name, rounds in champions.items()
            ],
            ylabel="champion fitness (common ground)",
        )
        axes[0].set_title(
            "round champions, common ground\n(mean ± std over nodes × repeats)", fontsize=9
        )
    for ax, field, label in (
        (axes[-2], "coverage", "merged coverage (raw)"),
        (axes[-1], "qd_score", "merged QD-score (raw)"),
    ):
        _line_plot(
            ax,
            [
                (
                    name,
                    [e[field]["mean"] for e in c["merged"]["per_round"]],
                    [e[field]["std"] for e in c["merged"]["per_round"]],
                )
                for name, c in conditions.items()
            ],
            ylabel=label,
        )
        ax.set_title(
            "raw: each node's own pool, not comparable\nacross conditions "
            "(mean ± std over repeats)",
            fontsize=9,
        )
    _save(fig, plots / "progress.png")
    return f"{PLOTS}/progress.png"


def _experiment_generality_plot(conditions: Mapping[str, Any], plots: Path) -> str | None:
    """``generality.png``: generality per round, one panel per condition, one line per node;
    ``None`` (nothing written) when no node's generality was measured."""
    measured = any(
        s["mean"] is not None
        for c in conditions.values()
        for n in c["per_node"].values()
        for s in n["generality_per_round"]
    )
    if not measured:
        return None
    plt = _pyplot()
    names = list(conditions)
    fig, axes = plt.subplots(
        1, len(names), figsize=(4.5 * len(names), 3.8), squeeze=False, sharey=True
    )
    for ax, name in zip(axes.flat, names, strict=True):
        series = [
            (
                f"{node} ({stats['operator']})",
                [s["mean"] for s in stats["generality_per_round"]],
                [s["std"] for s in stats["generality_per_round"]],
            )
            for node, stats in conditions[name]["per_node"].items()
        ]
        _line_plot(
            ax,
            series,
            ylabel="champion generality",
            colors=list(node_colors(conditions[name]["per_node"]).values()),
        )
        ax.set_title(name)
    fig.suptitle("Champion generality per round and node (mean ± std over repeats)")
    _save(fig, plots / "generality.png")
    return f"{PLOTS}/generality.png"


def _experiment_niche_novelty_plot(conditions: Mapping[str, Any], plots: Path) -> str | None:
    """``niche_novelty.png``: niche novelty per condition, the mean over nodes and repeats with
    every (node, repeat) a dot; ``None`` (nothing written) when no condition measured it."""
    if not any(c["niche_novelty"]["mean"] is not None for c in conditions.values()):
        return None
    plt = _pyplot()
    names = list(conditions)
    fig, ax = plt.subplots(figsize=(6, 4))
    _bars_with_dots(ax, names, [conditions[name]["niche_novelty"] for name in names])
    ax.set_ylabel("niche novelty")
    ax.set_title("Niche novelty per condition (mean ± std over nodes and repeats)")
    ax.grid(axis="y", alpha=0.3)
    _save(fig, plots / "niche_novelty.png")
    return f"{PLOTS}/niche_novelty.png"


def _experiment_occupancy_plot(
    conditions: Mapping[str, Any],
    occupancies: Mapping[str, tuple[DescriptorSpace, np.ndarray, str] | None],
    plots: Path,
) -> str | None:
    """``heatmaps.png``: where each condition's merged archive reaches, as the share of repeats
    covering each cell, on common ground (the cells of merged_archive.json) when measured, else
    raw; ``None`` (nothing written) when no run's merged archive holds an elite.

    Args:
        conditions: The experiment summary's conditions.
        occupancies: Each run's :func:`merged_occupancy`, by its folder.
        plots: The folder to write to.
    """
    panels, space, kinds = [], None, set()
    for name, c in conditions.items():
        occupancy = []
        for run in c.get("runs", []):
            found = occupancies.get(run.get("dir", ""))
            if found is not None:
                grid_space, grid, kind = found
                space = space or grid_space
                kinds.add(kind)
                occupancy.append(grid)
        if occupancy:
            frequency = np.mean(occupancy, axis=0)
            panels.append(
                (f"{name} (n={len(occupancy)} repeats)", np.where(frequency > 0, frequency, np.nan))
            )
    if not panels or space is None:
        return None
    plot_heatmaps(
        panels,
        space,
        plots / "heatmaps.png",
        colorbar=f"share of repeats with the cell filled ({' and '.join(sorted(kinds))})",
        value_range=(0.0, 1.0),
    )
    return f"{PLOTS}/heatmaps.png"


def final_figures(conditions: Mapping[str, Any]) -> tuple[str, dict[str, dict[str, Any]]]:
    """What ``final.png`` draws: ``("common ground", ...)`` with each condition's
    common-ground coverage and QD-score statistics, or ``("raw", ...)`` when no condition
    measured common ground (an experiment from before it)."""
    if any(
        (condition_common(c).get("qd_score") or {}).get("mean") is not None
        for c in conditions.values()
    ):
        empty = {"mean": None, "std": None, "values": []}
        return "common ground", {
            name: {
                field: condition_common(c).get(field) or empty for field in ("coverage", "qd_score")
            }
            for name, c in conditions.items()
        }
    return "raw", {
        name: {field: c["merged"][field] for field in ("coverage", "qd_score")}
        for name, c in conditions.items()
    }


def champion_common_per_round(condition: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per round, the round champions' common-ground fitness over nodes × repeats (empty when
    no run measured it)."""
    series = [
        node.get("champion_common_fitness_per_round") or []
        for run in condition.get("runs", [])
        for node in run.get("nodes", {}).values()
    ]
    rounds = max((len(s) for s in series), default=0)
    if not any(v is not None for s in series for v in s):
        return []
    return [
        describe([s[r] if r < len(s) else None for s in series], unit=PER_NODE_REPEAT)
        for r in range(rounds)
    ]


def merged_occupancy(run: FinishedRun) -> tuple[DescriptorSpace, np.ndarray, str] | None:
    """A run's merged-archive occupancy (1 filled, 0 empty) in the run's grid, and its kind:
    ``"common ground"`` from ``merged_archive.json``'s common-ground cells, else ``"raw"``
    from the nodes' final archives; ``None`` when neither holds an elite."""
    entries = run.merged
    space = None
    with contextlib.suppress(KeyError, TypeError, ConfigError):  # an older run's summary
        space = DescriptorSpace.from_json(run.summary.space["grid"])
    if space is not None and entries and all(e.get("common_fitness") is not None for e in entries):
        grid = np.zeros(space.shape)
        try:
            for entry in entries:
                grid[tuple(entry["cell"])] = 1.0
        except IndexError:
            raise damaged(
                run.path / MERGED_ARCHIVE_FILE, "a cell lies outside the run's grid"
            ) from None
        return space, grid, "common ground"
    archives = final_archives(run)
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
