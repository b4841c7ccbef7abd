"""A run's results as records: :class:`RunSummary`, what ``Ensemble.run`` and
:func:`~dei_framework.run` return and ``dei_run_finished`` receives, with its parts
:class:`NodeSummary` (one node's results), :class:`Champion` and :class:`MergedSummary`.

Their attributes are the keys of ``summary.json`` (``summary.merged.stats.coverage``,
``summary.nodes["node-0"].champion``); ``to_json()`` is the file, key for key, and
``from_json()`` reads it back (both derived from the fields:
:mod:`~dei_framework.contract.json_form`).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from dei_framework.contract.archive_stats import ArchiveStats
from dei_framework.contract.json_form import json_field, json_form
from dei_framework.contract.payloads import JSONValue
from dei_framework.contract.records import Candidate

__all__ = ["Champion", "MergedSummary", "NodeSummary", "RunSummary"]

#: Written only when the node's own process summarised it (see :attr:`NodeSummary.complete`).
_COMPLETE = "complete"


@json_form()
@attrs.frozen(kw_only=True, repr=False)
class Champion(Candidate):
    """A node's final champion in ``summary.json``: the candidate and, with
    ``--common-ground``, its common-ground fitness.

    Attributes:
        common_fitness: The mean over the scoring seeds (``None``: not measured).
        common_fitness_std: The spread of that mean over the scoring seeds.
    """

    common_fitness: float | None = json_field(default=None, omit_none=True)
    common_fitness_std: float | None = json_field(default=None, omit_none=True)


@json_form()
@attrs.frozen(kw_only=True)
class NodeSummary:
    """One node's results. A node whose process ended without a summary (a run over a
    networked transport) has only the required fields, read from its last checkpoint (the
    others are ``None`` and left out of the file), and says so in ``stopped``.

    Attributes:
        operator: Label of its operator (``--operator``).
        model: The same label (kept for readers of older summaries).
        calls: Completed operator calls.
        attempts: Billed attempts (retries included).
        cost_usd: Cost of its calls in US dollars (``None`` when a price was unknown).
        array_path: Whether its calls took the array path (docs/performance.md): then they
            are counted here but not logged in ``calls.jsonl``.
        quota: Its equal-compute share of the budget.
        rounds_completed: Rounds it finished.
        generality: Generality of its last round's champion (share of the reference set
            beaten or tied).
        generality_peak: The best generality over its rounds.
        generality_per_round: Generality per round.
        generality_excluded: Reference programs left out of its generality (it fought or
            produced them).
        champion_initial_per_round: Per round, whether the champion was an initial opponent.
        niche_novelty: Mean niche novelty over its rounds (``None`` when it received nothing).
        niche_novelty_per_round: Niche novelty per round.
        coverage_per_round: Archive coverage per round.
        qd_score_per_round: QD-score per round.
        champion: Its last round's champion (``None`` when there is none).
        champion_common_fitness_per_round: Common-ground fitness of each round's champion
            (``None`` without ``--common-ground``).
        fitness_scale_per_round: The fitness scale of each round's archive.
        stopped: Why it stopped early (a budget cap, a failing operator, a lost process).
        sharing: Its champion-sharing counters: ``published``, ``accepted``, ``late``,
            ``dropped`` by cause, and the transport's own ``transport`` counters.
        operator_status: The operator's own counters (``Operator.status()``).
        pid: The id of the process that ran it.
        extra: Keys this version does not declare (a launcher's ``transport_process``,
            ``failed``): kept, and written back.
    """

    operator: str
    model: str
    calls: int
    attempts: int
    cost_usd: float | None = json_field(default=None, when=_COMPLETE)
    array_path: bool | None = json_field(default=None, when=_COMPLETE)
    quota: int | None
    rounds_completed: int
    generality: float | None = json_field(default=None, when=_COMPLETE)
    generality_peak: float | None = json_field(default=None, when=_COMPLETE)
    generality_per_round: tuple[float | None, ...] = json_field(default=(), when=_COMPLETE)
    generality_excluded: tuple[str, ...] | None = json_field(default=None, when=_COMPLETE)
    champion_initial_per_round: tuple[bool, ...] = json_field(default=(), when=_COMPLETE)
    niche_novelty: float | None = json_field(default=None, when=_COMPLETE)
    niche_novelty_per_round: tuple[float | None, ...] = json_field(default=(), when=_COMPLETE)
    coverage_per_round: tuple[float, ...] = json_field(default=(), when=_COMPLETE)
    qd_score_per_round: tuple[float, ...] = json_field(default=(), when=_COMPLETE)
    champion: Champion | None
    champion_common_fitness_per_round: tuple[float | None, ...] | None = json_field(
        default=None, when="common_known"
    )
    fitness_scale_per_round: tuple[float | None, ...] = json_field(default=(), when=_COMPLETE)
    stopped: str | None
    sharing: Mapping[str, JSONValue] | None = json_field(default=None, when=_COMPLETE)
    operator_status: Mapping[str, JSONValue] | None = json_field(default=None, when=_COMPLETE)
    pid: int | None = json_field(default=None, omit_none=True)
    extra: Mapping[str, JSONValue] = json_field(factory=dict, extra=True)

    @property
    def complete(self) -> bool:
        """Whether its own process summarised it (a node read from its last checkpoint has
        no sharing counters, and only the required fields)."""
        return self.sharing is not None

    @property
    def common_known(self) -> bool:
        """Whether its champions' common-ground fitness is a key of the file: always for a
        complete node, for another when a merge measured it."""
        return self.complete or self.champion_common_fitness_per_round is not None


@json_form()
@attrs.frozen(kw_only=True)
class MergedSummary:
    """The nodes' final archives merged best-per-cell.

    Attributes:
        stats: The merge's statistics (their keys are this object's in the file).
        common: The merge re-evaluated on the common reference set (``--common-ground``
            only; docs/experiments.md#common-ground).
        per_round: The same statistics for each round's archives merged (and ``round``).
    """

    stats: ArchiveStats = json_field(inline=True)
    common: Mapping[str, JSONValue] | None = json_field(default=None, omit_none=True)
    per_round: tuple[Mapping[str, JSONValue], ...] = attrs.field(converter=tuple)


@json_form()
@attrs.frozen(kw_only=True)
class RunSummary:
    """A run's results, as ``summary.json`` holds them (docs/concepts.md#metrics-in-summaryjson
    describes the figures).

    Attributes:
        domain: The domain's name (``--domain``).
        transport: The transport's name (``--transport``).
        sharing: The sharing policy's name (``--sharing``).
        seed: The run seed.
        rounds: Red Queen rounds asked for.
        lifecycle: ``"reset"`` or ``"continual"``: the archive lifecycle.
        space: The run's descriptor grid: ``axes``, ``shape``, ``cells`` and ``grid`` (the
            :class:`~dei_framework.contract.descriptors.DescriptorSpace` as JSON).
        merged: The merged archive's statistics.
        generality: How generality was measured: the ``reference`` set's ``count`` and
            ``sha256``, and per node how many reference programs were ``excluded``.
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
        extra: Keys of the file this version does not know (kept, and written back).
    """

    domain: str
    transport: str
    sharing: str
    seed: int
    rounds: int
    lifecycle: str
    space: Mapping[str, JSONValue]
    merged: MergedSummary
    generality: Mapping[str, JSONValue]
    nodes: Mapping[str, NodeSummary]
    operator_divergence: Mapping[str, JSONValue]
    budget: Mapping[str, JSONValue]
    compute_axis: str
    invalid: int
    evaluated: int
    stopped: Mapping[str, int] | None = json_field(default=None, omit_none=True)
    extra: Mapping[str, JSONValue] = json_field(factory=dict, extra=True)
