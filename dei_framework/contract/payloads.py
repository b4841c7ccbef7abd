"""The JSON a run writes, typed field by field: the lines of ``events.jsonl`` and the
``summary.json`` of a run and of an experiment.

In the process, the events and the run's summary travel as records, whose ``to_json()`` gives
these dicts: the events of :mod:`dei_framework.search.events` (``EvaluatedEvent``,
``RoundEvent``: :class:`EvaluatedEventJSON`, :class:`RoundEventJSON`) and
:class:`~dei_framework.contract.run_summary.RunSummary` (:class:`RunSummaryJSON`). Readers of a
run's files get these dicts; an experiment's summary is :class:`ExperimentSummary` everywhere.

Re-exported by :mod:`dei_framework.plugin.hookspecs` (the path plugins and docs name them by).
"""

from __future__ import annotations

import warnings
from typing import Literal, NotRequired, TypeAlias, TypedDict

from dei_framework._deprecation import DEIDeprecationWarning
from dei_framework.contract.kinds import CandidateSource, EventKind, WorkKind

# TypedDicts rather than classes: they describe what a file holds, key by key, without
# changing what is written.

#: A value as JSON holds it (what ``json.loads`` returns): used only for the parts of a payload
#: whose shape a plugin defines (an operator's status) or that other documents describe.
JSONValue: TypeAlias = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]


class CandidateRecord(TypedDict):
    """A :class:`~dei_framework.contract.records.Candidate` as JSON (``Candidate.to_json()``)."""

    #: Canonical program text.
    text: str
    #: Candidate id, unique within a run (``node-r2-s17``); empty for opponents.
    id: str
    #: Fitness measured in the round of ``round`` (``None`` when not measured).
    fitness: float | None
    #: Raw descriptor values by axis name.
    descriptor: dict[str, float]
    #: Archive cell, one index per axis (empty when not placed in an archive).
    cell: list[int]
    #: Node that evaluated (or, for opponents and received champions, produced) it.
    node: str
    #: Label of the operator that wrote it (or ``"initial"``, ``"peer:<node>"`` ...).
    operator: str
    #: Round it was evaluated in, or champion of (``-1`` for initial opponents).
    round: int
    #: Id of the elite it was mutated from, if any.
    parent: str | None
    #: Where it came from: an opponent ``"initial"``, ``"own"``, ``"peer"``, a seed program
    #: ``"seed"``; else empty (:class:`~dei_framework.contract.kinds.CandidateSource`).
    source: CandidateSource


class ArchiveStatsRecord(TypedDict):
    """An :class:`~dei_framework.search.archives.ArchiveStats` as JSON (pyribs' names)."""

    #: Number of occupied cells.
    num_elites: int
    #: Number of cells in the archive.
    cells: int
    #: ``num_elites / cells``.
    coverage: float
    #: Sum over elites of ``fitness - qd_offset``.
    qd_score: float
    #: The offset subtracted from each fitness in ``qd_score`` (the domain's fitness floor).
    qd_offset: float
    #: Best fitness, or ``None`` when empty.
    obj_max: float | None
    #: Mean elite fitness, or ``None`` when empty.
    obj_mean: float | None


class Timings(TypedDict):
    """Seconds spent on one candidate (wall clock, rounded to microseconds)."""

    #: Parsing and evaluating it in the evaluation backend.
    eval_s: float
    #: The operator call that wrote it (only for ``new`` and ``mutate`` candidates).
    call_s: NotRequired[float]


class EvaluatedEventJSON(TypedDict):
    """One candidate evaluated (or found invalid): an ``evaluated`` line of ``events.jsonl``."""

    #: Always ``"evaluated"``.
    event: Literal[EventKind.EVALUATED]
    #: The candidate's id, unique within the run (``node-r2-s17``).
    id: str
    #: The node that evaluated it.
    node: str
    #: The round (0-based) it was evaluated in.
    round: int
    #: Label of the operator that wrote it (``"initial"``, ``"seed"``, ``"peer:<node>"`` for
    #: others).
    operator: str
    #: ``"new"`` or ``"mutate"`` (an operator wrote it this round), ``"warm"`` (a pool program
    #: re-evaluated at a round's start, or a seed program) or ``"peer"`` (a champion received
    #: from another node): a :class:`~dei_framework.contract.kinds.WorkKind`.
    kind: WorkKind
    #: Id of the elite it was mutated from (``mutate`` only; else ``None``).
    parent: str | None
    #: Its slot in the round (results are admitted in slot order).
    slot: int
    #: What the archive did (``"new"``, ``"improve_existing"``, ``"not_added"``: an
    #: :class:`~dei_framework.search.archives.AddStatus` label) or ``"invalid"``.
    status: str
    #: Why it is invalid (only when ``status`` is ``"invalid"``).
    error: NotRequired[str | None]
    #: Measured fitness (``None`` when invalid).
    fitness: float | None
    #: Measured raw descriptor by axis name (``None`` when invalid).
    descriptor: dict[str, float] | None
    #: The archive cell it falls in (``None`` when invalid).
    cell: list[int] | None
    #: Seconds spent evaluating it and writing it.
    timings: Timings
    #: Reference programs it is identical to (``Domain.reference_matches``); present only when
    #: there are some (they are left out of the node's generality).
    generality_matches: NotRequired[list[str]]
    #: The domain's extra figures (``Evaluation.info``); present only when it gave some.
    info: NotRequired[dict[str, JSONValue]]


class OpponentRecord(TypedDict):
    """One program of the Red Queen pool a round's candidates fought."""

    #: ``"initial"``, ``"own"`` (a champion of this node) or ``"peer"`` (received).
    source: Literal[CandidateSource.INITIAL, CandidateSource.OWN, CandidateSource.PEER]
    #: The round it was champion of (``-1`` for initial opponents).
    round: int
    #: The node that produced it (empty for initial opponents).
    node: str


class RoundEventJSON(TypedDict):
    """A node's round, finished: a ``round`` line of ``events.jsonl``."""

    #: Always ``"round"``.
    event: Literal[EventKind.ROUND]
    #: The node.
    node: str
    #: The round just finished (0-based).
    round: int
    #: Operator calls the round completed.
    calls: int
    #: The round's final archive.
    stats: ArchiveStatsRecord
    #: The round's best elite (``None`` when the archive is empty).
    champion: CandidateRecord | None
    #: Whether the champion is one of the initial opponents or seed programs (evaluated in the
    #: warm start: no work of the search).
    champion_initial: bool
    #: Valid champions of other nodes evaluated this round.
    received: int
    #: Share of those that fell in a cell the node's previous round left empty (``None`` when
    #: none was received).
    niche_novelty: float | None
    #: The opponent pool the round's candidates fought.
    opponents: list[OpponentRecord]
    #: The node's parent selector (``--emitter``).
    emitter: str
    #: The archive's kind (``--archive``).
    archive_kind: str
    #: The champion's generality: ``None`` in the event, since it is measured afterwards
    #: (``summary.json`` has the measured values).
    generality: float | None
    #: The best elite other than an initial opponent or seed, when ``champion_initial`` (the subject
    #: of champion-level figures such as generality).
    generality_champion: NotRequired[CandidateRecord | None]


class SpaceRecord(TypedDict):
    """The run's descriptor grid (the common space of merges and reports)."""

    #: Axis names.
    axes: list[str]
    #: Bins per axis.
    shape: list[int]
    #: Number of cells.
    cells: int
    #: The :class:`~dei_framework.contract.descriptors.DescriptorSpace` as JSON: one description per
    #: axis (``kind``, ``name`` and its binning), from which the space is rebuilt.
    grid: list[dict[str, JSONValue]]


class MergedRecord(ArchiveStatsRecord):
    """The nodes' final archives merged best-per-cell (stats of the merge)."""

    #: The same statistics for each round's archives merged.
    per_round: list[dict[str, JSONValue]]
    #: The merge re-evaluated on the common reference set (``--common-ground`` only;
    #: docs/experiments.md#common-ground).
    common: NotRequired[dict[str, JSONValue]]


class GeneralityRecord(TypedDict):
    """How generality was measured."""

    #: ``{"count", "sha256"}`` of the domain's generality reference set (``None`` if it has
    #: none).
    reference: dict[str, JSONValue] | None
    #: Per node, how many reference programs were left out of its generality (``None`` when
    #: not measured).
    excluded: dict[str, int | None]


class ChampionRecord(CandidateRecord):
    """A node's final champion in ``summary.json``."""

    #: Its common-ground fitness: the mean over the scoring seeds (``--common-ground`` only;
    #: ``None`` when not measured or invalid).
    common_fitness: NotRequired[float | None]
    #: The spread of that mean over the scoring seeds (``--common-ground`` only).
    common_fitness_std: NotRequired[float | None]


class SharingRecord(TypedDict):
    """A node's champion-sharing counters."""

    #: Champions it published.
    published: int
    #: Valid champions of other nodes taken in at a round start.
    accepted: int
    #: Valid champions that arrived after its last round had started (never fought).
    late: int
    #: Messages dropped, by cause (``invalid_signature``, ``nonmember``, ``inbox_overflow``,
    #: ...).
    dropped: dict[str, int]
    #: The transport's own counters (or the virtual-time timeline's), as it reports them.
    transport: dict[str, JSONValue]


class NodeSummary(TypedDict):
    """One node's results. A node whose process ended without a summary (a run over a
    networked transport) has only the required keys, read from its last checkpoint, and says
    so in ``stopped``."""

    #: Label of its operator (``--operator``).
    operator: str
    #: The same label (kept for readers of older summaries).
    model: str
    #: Completed operator calls.
    calls: int
    #: Billed attempts (retries included).
    attempts: int
    #: Its equal-compute share of the budget.
    quota: int
    #: Rounds it finished.
    rounds_completed: int
    #: Its last round's champion (``None`` when there is none).
    champion: ChampionRecord | None
    #: Why it stopped early (a budget cap, a failing operator, a lost process), or ``None``.
    stopped: str | None
    #: Cost of its calls in US dollars (``None`` when a price was unknown).
    cost_usd: NotRequired[float | None]
    #: Whether its calls took the array path (docs/performance.md): then they are counted
    #: here but not logged in ``calls.jsonl``.
    array_path: NotRequired[bool]
    #: Generality of its last round's champion (share of the reference set beaten or tied).
    generality: NotRequired[float | None]
    #: The best generality over its rounds.
    generality_peak: NotRequired[float | None]
    #: Generality per round.
    generality_per_round: NotRequired[list[float | None]]
    #: Reference programs left out of its generality (it fought or produced them).
    generality_excluded: NotRequired[list[str]]
    #: Per round, whether the champion was an initial opponent.
    champion_initial_per_round: NotRequired[list[bool]]
    #: Mean niche novelty over its rounds (``None`` when it received nothing).
    niche_novelty: NotRequired[float | None]
    #: Niche novelty per round.
    niche_novelty_per_round: NotRequired[list[float | None]]
    #: Archive coverage per round.
    coverage_per_round: NotRequired[list[float]]
    #: QD-score per round.
    qd_score_per_round: NotRequired[list[float]]
    #: Common-ground fitness of each round's champion (``None`` without ``--common-ground``).
    champion_common_fitness_per_round: NotRequired[list[float | None] | None]
    #: The fitness scale of each round's archive.
    fitness_scale_per_round: NotRequired[list[float | None]]
    #: Its champion-sharing counters.
    sharing: NotRequired[SharingRecord]
    #: The operator's own counters (``Operator.status()``: errors, retries, ...).
    operator_status: NotRequired[dict[str, JSONValue]]
    #: The id of the process that ran it.
    pid: NotRequired[int]


class RunSummaryJSON(TypedDict):
    """A run's results, as written to ``summary.json`` (docs/concepts.md#metrics-in-summaryjson
    describes the figures); :class:`~dei_framework.contract.run_summary.RunSummary` is the
    record."""

    #: The domain's name (``--domain``).
    domain: str
    #: The transport's name (``--transport``).
    transport: str
    #: The sharing policy's name (``--sharing``).
    sharing: str
    #: The run seed.
    seed: int
    #: Red Queen rounds asked for.
    rounds: int
    #: ``"reset"`` or ``"continual"``: the archive lifecycle.
    lifecycle: str
    #: The run's descriptor grid.
    space: SpaceRecord
    #: The merged archive's statistics.
    merged: MergedRecord
    #: How generality was measured.
    generality: GeneralityRecord
    #: Per node, by name.
    nodes: dict[str, NodeSummary]
    #: Pairwise Jensen–Shannon divergence of the nodes' cell distributions: ``pairs`` and
    #: their ``mean``.
    operator_divergence: dict[str, JSONValue]
    #: The equal-compute ledger: per-node usage and quotas, caps, wall time.
    budget: dict[str, JSONValue]
    #: What equal compute is measured on: ``"calls"``, ``"tokens"`` or ``"cost"``.
    compute_axis: str
    #: Candidates found invalid.
    invalid: int
    #: Candidates evaluated (valid or not; warm-start and peer re-evaluations included).
    evaluated: int
    #: How many candidates the sandbox stopped, by cause (only where programs ran in one).
    stopped: NotRequired[dict[str, int]]
    #: Why the run kept no elite, in one line (only when it kept none).
    no_elite: NotRequired[str]


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
    space: SpaceRecord | None
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


#: The names these TypedDicts had before the events became records (0.2).
_RENAMED = {"EvaluatedEvent": "EvaluatedEventJSON", "RoundEvent": "RoundEventJSON"}


def __getattr__(name: str) -> object:
    if name not in _RENAMED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"{__name__}.{name} is deprecated: the run log's dict is {_RENAMED[name]}; the event "
        f"hooks receive is the record dei_framework.{name}",
        DEIDeprecationWarning,
        stacklevel=2,
    )
    return globals()[_RENAMED[name]]
