"""JSON values, and an experiment's ``summary.json`` typed key by key
(:class:`ExperimentSummary`).

A run's events and summary are records whose JSON form their fields declare
(:mod:`dei_framework.search.events`, :mod:`dei_framework.contract.run_summary`).

Internal: not public API (the public names are :mod:`dei_framework`'s, and
:mod:`dei_framework.plugin.hookspecs` re-exports ``JSONValue``); anything here may change in any
release.
"""

from __future__ import annotations

from typing import Literal, TypeAlias, TypedDict

# A TypedDict rather than a record: an experiment's summary is built and read as JSON.

#: A value as JSON holds it (what ``json.loads`` returns): used only for the parts of a payload
#: whose shape a plugin defines (an operator's status) or that other documents describe.
JSONValue: TypeAlias = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]


class ExperimentSummary(TypedDict):
    """An experiment's results, as written to its ``summary.json`` (docs/experiments.md
    describes the per-condition figures and the comparisons)."""

    #: ``"experiment"``: what the file is.
    kind: Literal["experiment"]
    #: The file's format version.
    version: int
    #: The domain's name.
    domain: str
    #: The equal budget every condition spends.
    budget: int
    #: Red Queen rounds per run.
    rounds: int
    #: Repeats per condition asked for.
    repeats: int
    #: Each repeat's seed.
    seeds: list[int]
    #: The runs' descriptor grid (``None`` before a run finished).
    space: dict[str, JSONValue] | None
    #: Whether every condition spent the same compute.
    equal_compute: bool
    #: The common-ground reference set the conditions were scored on.
    common_reference: JSONValue
    #: The generality reference set.
    generality_reference: JSONValue
    #: Whether raw fitness was measured on different scales across conditions.
    raw_fitness_scales_differ: bool
    #: What equal compute is measured on: ``"calls"``, ``"tokens"`` or ``"cost"``.
    compute_axis: str
    #: The compute limit each condition spends (``None``: none on its axis).
    compute_limit: float | None
    #: Per condition, by name: its aggregates over the finished repeats.
    conditions: dict[str, dict[str, JSONValue]]
    #: Pairwise comparisons of the conditions (n, spread, interval, test).
    comparisons: list[dict[str, JSONValue]]
