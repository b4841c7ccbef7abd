"""Figures as text: numbers, ``mean ± std``, Markdown tables and images, reference records.

One formatter for the reports and the command line, so that both print a missing value alike
(:data:`MISSING`).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dei_framework.contract.payloads import JSONValue

#: What a missing value prints as.
MISSING = "–"
#: One colour per node, by the node's place in the run's node list: the report's plots and the
#: watch page both colour a node with :func:`node_colors`, so a node looks the same in both.
NODE_COLORS = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#b07aa1",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#9c755f",
    "#ff9da7",
    "#bab0ac",
)
#: The merged archive's colour beside the nodes'.
MERGED_COLOR = "#111111"


def node_colors(names: Iterable[str]) -> dict[str, str]:
    """Each node's colour, by its place in ``names`` (the run's node order)."""
    return {
        name: NODE_COLORS[index % len(NODE_COLORS)]
        for index, name in enumerate(dict.fromkeys(names))
    }


def number(value: Any, spec: str = ".3f") -> str:
    """A number formatted with ``spec``; :data:`MISSING` for missing values. A value that
    rounds to zero is written without a sign (``0.00``, not ``-0.00``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    text = format(value, spec)
    if text.startswith("-") and not any(digit in text for digit in "123456789"):
        # a small negative value rounded to zero: zero's own sign (``+0.00`` when asked)
        return ("+" if "+" in spec else "") + text[1:]
    return text


def plus_minus(stats: Mapping[str, JSONValue] | None, spec: str = ".3f") -> str:
    """``mean ± std`` of a :func:`dei_framework.experiment.summary.describe` value, with
    ``(n = k)`` after it when the value is pooled over nodes and repeats (its n is then not the
    repeats'); :data:`MISSING` without a mean."""
    if not stats or stats.get("mean") is None:
        return MISSING
    text = number(stats["mean"], spec)
    if stats.get("std") is not None:
        text += f" ± {number(stats['std'], spec)}"
    if stats.get("unit") == "nodes x repeats":
        text += f" (n = {stats.get('n')})"
    return text


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table (``|`` and line breaks in cells escaped)."""

    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def markdown_image(title: str, relative: str | None) -> str:
    """A Markdown image line; empty without a path (the plot was not drawn)."""
    return f"![{title}]({relative})\n" if relative else ""


def reference_text(record: Any) -> str:
    """``4 programs, sha256 1a2b3c4d…`` of a ``{"count", "sha256"}`` record (``none`` for an
    empty set: a static domain has no opponents)."""
    if isinstance(record, Mapping):
        if record.get("count") == 0:
            return "none"
        return f"{record.get('count')} programs, sha256 `{str(record.get('sha256'))[:12]}`"
    if isinstance(record, list):
        return "**differs between runs**: " + "; ".join(reference_text(r) for r in record)
    return MISSING


def scored_against(record: Any, lead: str = "against the reference set") -> str:
    """What common ground scored programs against: ``lead`` and the set
    (:func:`reference_text`), or, for an empty set, that they were scored on their own."""
    if isinstance(record, Mapping) and record.get("count") == 0:
        return "on its own (the domain has no opponents: the reference set is empty)"
    return f"{lead} ({reference_text(record)})"


def value_at(values: Sequence[Any] | None, index: int) -> Any:
    """``values[index]``, or ``None`` past its end."""
    return values[index] if values and index < len(values) else None
