"""A run's results as a record: :class:`RunSummary`, what ``Ensemble.run`` and
:func:`~dei_framework.run` return and ``dei_run_finished`` receives.

Its attributes are the top-level keys of ``summary.json`` (``summary.merged``,
``summary.nodes``, ``summary.budget``, ...); their values are that file's JSON, typed by
:mod:`~dei_framework.contract.payloads` (``summary.merged["coverage"]``,
``summary.nodes["node-0"]["champion"]``). ``to_json()`` is the file, key for key, and
``from_json()`` reads it back. Reading the record itself as a dict (``summary["merged"]``, as
before 0.2) still works, with a deprecation warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from dei_framework.contract._json_view import ReadAsJSON
from dei_framework.contract.payloads import (
    GeneralityRecord,
    JSONValue,
    MergedRecord,
    NodeSummary,
    RunSummaryJSON,
    SpaceRecord,
)

__all__ = ["RunSummary"]


@attrs.frozen(kw_only=True)
class RunSummary(ReadAsJSON):
    """A run's results, as ``summary.json`` holds them (docs/concepts.md#metrics-in-summaryjson
    describes the figures).

    Attributes:
        domain: The domain's name (``--domain``).
        transport: The transport's name (``--transport``).
        sharing: The sharing policy's name (``--sharing``).
        seed: The run seed.
        rounds: Red Queen rounds asked for.
        lifecycle: ``"reset"`` or ``"continual"``: the archive lifecycle.
        space: The run's descriptor grid.
        merged: The merged archive's statistics (``coverage``, ``qd_score``, ``per_round``,
            ``common`` with ``--common-ground``, ...).
        generality: How generality was measured.
        nodes: Per node, by name, its results.
        operator_divergence: Pairwise Jensen–Shannon divergence of the nodes' cell
            distributions: ``pairs`` and their ``mean``.
        budget: The equal-compute ledger: per-node usage and quotas, caps, wall time.
        compute_axis: What equal compute is measured on: ``"calls"``, ``"tokens"`` or
            ``"cost"``.
        invalid: Candidates found invalid.
        evaluated: Candidates evaluated (valid or not; warm-start and peer re-evaluations
            included).
        stopped: How many candidates the sandbox stopped, by cause (``None`` where programs
            ran in no sandbox: the key is then absent from the file).
        no_elite: Why the run kept no elite, in one line naming the commonest reason of its
            invalid candidates (``None`` when it kept one: the key is then absent).
        extra: Keys of the file this version does not know (kept, and written back).
    """

    domain: str
    transport: str
    sharing: str
    seed: int
    rounds: int
    lifecycle: str
    space: SpaceRecord
    merged: MergedRecord
    generality: GeneralityRecord
    nodes: Mapping[str, NodeSummary]
    operator_divergence: Mapping[str, JSONValue]
    budget: Mapping[str, JSONValue]
    compute_axis: str
    invalid: int
    evaluated: int
    stopped: Mapping[str, int] | None = None
    no_elite: str | None = None
    extra: Mapping[str, JSONValue] = attrs.field(factory=dict)

    def to_json(self) -> RunSummaryJSON:
        """What ``summary.json`` holds."""
        data: dict[str, Any] = {
            "domain": self.domain,
            "transport": self.transport,
            "sharing": self.sharing,
            "seed": self.seed,
            "rounds": self.rounds,
            "lifecycle": self.lifecycle,
            "space": self.space,
            "merged": self.merged,
            "generality": self.generality,
            "nodes": dict(self.nodes),
            "operator_divergence": self.operator_divergence,
            "budget": self.budget,
            "compute_axis": self.compute_axis,
            "invalid": self.invalid,
            "evaluated": self.evaluated,
        }
        if self.stopped is not None:
            data["stopped"] = dict(self.stopped)
        if self.no_elite is not None:
            data["no_elite"] = self.no_elite
        data.update(self.extra)
        return data  # type: ignore[return-value]  # the keys above are RunSummaryJSON's

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunSummary:
        """Reads ``summary.json`` (of a run, not an experiment) back."""
        known = {field.name for field in attrs.fields(cls)} - {"extra"}
        return cls(
            **{key: value for key, value in data.items() if key in known},
            extra={key: value for key, value in data.items() if key not in known},
        )
