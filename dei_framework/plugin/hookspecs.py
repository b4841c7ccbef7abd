"""The plugin contract: every hook a DEI plugin can implement, with when and how it is called.

A plugin is a module (or object) with functions marked ``@dei_framework.hookimpl`` whose names
match the specifications below. Third-party plugins are found through the entry-point group
``dei_framework``::

    [project.entry-points.dei_framework]
    myplugin = "my_package.plugin"

Each hook's docstring says, as pytest's ``hookspec.py`` does, when and how often it fires
(**Fires:**), what its callers do with what it returns (**Returns:**) and, for every argument,
what it holds (**Args:**); the event payloads are typed records defined here
(:class:`EvaluatedEvent`, :class:`RoundEvent`, :class:`RunSummary`), documented field by field.
``tests/core/test_hookspecs.py`` fails when a hook lacks one of these.

Every hook is called through pluggy, so ``@hookimpl(tryfirst=True)`` and ``trylast=True``
behave as pluggy documents: implementations run ``tryfirst`` first, then the plain ones from
the last registered to the first, then ``trylast``. Wrappers (``wrapper=True``, new style, and
``hookwrapper=True``, old style) run around all of them, on every hook **except the historic
one**, ``dei_addhooks``: pluggy refuses a wrapper on a historic hook when the plugin is
registered (reported in ``registry.problems``, and the plugin is left out).

Registration hooks (``dei_domains``, ``dei_operators``, ...) return a list. The core calls
them plugin by plugin and concatenates the lists, attributing each item to its plugin; names
must be unique across plugins (the first registered wins, a clash is reported).

Format hooks (``dei_export_program``) are ``firstresult``: plugins are asked in pluggy's order
and the first answer that is not ``None`` is used; a plugin answers only for its own domain.

Observation hooks (``dei_candidate_evaluated``, ...) are called for every plugin and their
return values are ignored. An exception raised in one is caught by the core's guard (the
outermost wrapper), reported once naming the plugin, and that plugin's implementation of the
hook is left out from then on; the run goes on. Observers ordered after the failing one miss
the event during which it failed. Treat a payload as read-only: the same object is handed to
every observer and is the one the core goes on to use.

Plugins may add hooks of their own through :func:`dei_addhooks` (the ``llm`` plugin adds
``dei_llm_providers`` this way); the core never calls those, the plugin that added them does.

``docs/architecture.md``'s hook table is generated from these docstrings
(``python scripts/hook_table.py``; a test checks that it is up to date).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NotRequired, TypeAlias, TypedDict

import pluggy

if TYPE_CHECKING:
    import click

    from dei_framework.contract.backend import EvaluatorSpec
    from dei_framework.contract.cli_options import RunOption
    from dei_framework.contract.descriptors import AxisSpec
    from dei_framework.contract.domain import DomainSpec
    from dei_framework.contract.operators import OperatorSpec
    from dei_framework.contract.records import ExportedProgram
    from dei_framework.contract.transport import TransportSpec
    from dei_framework.net.envelope import ChampionEnvelope
    from dei_framework.search.allocation import AllocatorSpec
    from dei_framework.search.archives import ArchiveSpec
    from dei_framework.search.emitters import EmitterSpec
    from dei_framework.search.sharing import SharingSpec

hookspec = pluggy.HookspecMarker("dei_framework")
hookimpl = pluggy.HookimplMarker("dei_framework")

#: The markers and the payload records (the hooks themselves are implemented, not imported).
__all__ = [
    "ArchiveStatsRecord", "CandidateRecord", "ChampionRecord", "EvaluatedEvent",
    "GeneralityRecord", "JSONValue", "MergedRecord", "NodeSummary", "OpponentRecord",
    "RoundEvent", "RunSummary", "SharingRecord", "SpaceRecord", "Timings",
    "hookimpl", "hookspec",
]  # fmt: skip


# --- payloads: what observation hooks receive --------------------------------------------------
# TypedDicts rather than classes: the core builds these payloads as the dicts it writes to
# events.jsonl and summary.json, and hands those very dicts to observers; a typed record names
# their keys without changing what is written.

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
    #: Where an opponent came from: ``"initial"``, ``"own"``, ``"peer"``; else empty.
    source: str


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


class EvaluatedEvent(TypedDict):
    """One candidate evaluated (or found invalid): an ``evaluated`` line of ``events.jsonl``."""

    #: Always ``"evaluated"``.
    event: Literal["evaluated"]
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
    #: from another node).
    kind: Literal["warm", "peer", "new", "mutate"]
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


class OpponentRecord(TypedDict):
    """One program of the Red Queen pool a round's candidates fought."""

    #: ``"initial"``, ``"own"`` (a champion of this node) or ``"peer"`` (received).
    source: str
    #: The round it was champion of (``-1`` for initial opponents).
    round: int
    #: The node that produced it (empty for initial opponents).
    node: str


class RoundEvent(TypedDict):
    """A node's round, finished: a ``round`` line of ``events.jsonl``."""

    #: Always ``"round"``.
    event: Literal["round"]
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
    #: The node's emitter (``--emitter``).
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


class RunSummary(TypedDict):
    """A run's results, as written to ``summary.json`` (docs/concepts.md#metrics-in-summaryjson
    describes the figures)."""

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


# --- the contract itself -----------------------------------------------------------------------


@hookspec(historic=True)
def dei_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Adds hook specifications a plugin defines (as pytest's ``pytest_addhooks``).

    Implement it as::

        @hookimpl
        def dei_addhooks(pluginmanager):
            from my_package import hookspecs
            pluginmanager.add_hookspecs(hookspecs)

    The added specifications use the same markers (:data:`hookspec`, :data:`hookimpl`); the
    plugin that adds a hook calls it itself (``pluginmanager.hook.<name>(...)``, e.g. from a
    factory through ``context.registry.manager``). A plugin implementing a hook that another,
    optional plugin adds should mark it ``@hookimpl(optionalhook=True)``.

    Fires:
        Once for every plugin, as it is registered. Historic: a plugin registered after the
        call still gets it, so it cannot be wrapped (pluggy refuses ``wrapper=True`` and
        ``hookwrapper=True`` here, and the plugin is reported and left out).

    Args:
        pluginmanager: The ``pluggy.PluginManager`` of the run.

    Returns:
        Nothing; a returned value is ignored.
    """


# --- registration -------------------------------------------------------------------------------


@hookspec
def dei_domains() -> list[DomainSpec]:
    """Registers search domains (``--domain NAME``): adversarial ones, whose fitness depends
    on opponents (``Domain.initial_opponents``; the ``reset`` archive lifecycle), and static
    ones, whose fitness depends on the program alone (no opponents; ``continual``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the registry
        (at CLI start, or when library code calls it).

    Returns:
        A list of :class:`~dei_framework.contract.domain.DomainSpec`. Every plugin's list is
        collected (not firstresult); names must be unique across plugins.
    """


@hookspec
def dei_operators() -> list[OperatorSpec]:
    """Registers operator families (``--operator NAME``), offline ones or model-backed ones.

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.contract.operators.OperatorSpec`. Every plugin's list is
        collected (not firstresult); ``--operator`` picks a name, or else the first family whose
        ``accepts`` claims the string.
    """


@hookspec
def dei_transports() -> list[TransportSpec]:
    """Registers transports (``--transport NAME``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.contract.transport.TransportSpec`. Every plugin's list is
        collected (not firstresult); names must be unique across plugins.
    """


@hookspec
def dei_sharing_policies() -> list[SharingSpec]:
    """Registers champion-sharing policies (``--sharing NAME``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.search.sharing.SharingSpec`. Every plugin's list is
        collected (not firstresult); the core registers its own policies this way.
    """


@hookspec
def dei_budget_allocators() -> list[AllocatorSpec]:
    """Registers budget allocators — how the budget left is shared between nodes at each
    round boundary (``--allocation NAME``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.search.allocation.AllocatorSpec`, each with a
        ``factory(options)`` returning the run's allocator. Every plugin's list is collected
        (not firstresult); the core registers ``static`` and ``bandit`` this way.
    """


@hookspec
def dei_emitters() -> list[EmitterSpec]:
    """Registers emitters — how a node chooses parents (``--emitter NAME``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.search.emitters.EmitterSpec`, each with a
        ``factory(options)`` returning one node's
        :class:`~dei_framework.search.emitters.EmitterBase`.
        Every plugin's list is collected (not firstresult).
    """


@hookspec
def dei_archives() -> list[ArchiveSpec]:
    """Registers archives (``--archive NAME``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.search.archives.ArchiveSpec`, each with a
        ``factory(options)`` returning a callable ``(space=, qd_offset=, seed=) -> ArchiveBase``
        that builds each round's fresh archive. Every plugin's list is collected (not
        firstresult).
    """


@hookspec
def dei_evaluation_backends() -> list[EvaluatorSpec]:
    """Registers evaluation backends — where evaluation jobs run (``--evaluator NAME``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.contract.backend.EvaluatorSpec`, each with a
        ``factory(domain, options)`` returning an
        :class:`~dei_framework.contract.backend.EvaluationBackend`. Every plugin's list is
        collected (not firstresult); the core registers ``local`` (a process pool) and ``dask``
        this way.
    """


@hookspec
def dei_descriptor_axes() -> list[AxisSpec]:
    """Registers descriptor axes (binning for a value a domain reports), selectable by name.

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.contract.descriptors.AxisSpec`. Every plugin's list is
        collected (not firstresult); an axis registered here overrides a domain's default
        binning of the same name when the user selects it with ``--axes``.
    """


@hookspec
def dei_run_options() -> list[RunOption]:
    """Adds options to ``dei-run`` and ``dei experiment`` (e.g. Core War's ``--human-set``).

    Each :class:`~dei_framework.contract.cli_options.RunOption` names a flag, which options table
    its value goes to (``domain_options``, ``transport_options``, ...) and under which key; the
    same key is accepted at the top level of a ``--config`` file.

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the registry
        (the CLI loads it once per process, before parsing flags).

    Returns:
        A list of :class:`~dei_framework.contract.cli_options.RunOption`. Every plugin's list is
        collected (not firstresult); an option whose name clashes with a core option or an
        earlier plugin's is reported and left out.
    """


@hookspec
def dei_cli_commands() -> list[click.Command]:
    """Adds sub-commands to the ``dei`` group (e.g. ``dei coreware ...``).

    Fires:
        Once per plugin each time the ``dei`` group lists or resolves its commands (several
        times in one invocation of ``dei``): return the same commands every time, and build
        them cheaply.

    Returns:
        A list of ``click.Command`` (commands or groups). Every plugin's list is collected (not
        firstresult); an item that is not a named command is ignored.
    """


# --- formats ----------------------------------------------------------------------------------


@hookspec(firstresult=True)
def dei_export_program(domain: str, program: ExportedProgram) -> tuple[str, str] | None:
    r"""Writes one program of a finished run as a file in its domain's own format (``dei export``).

    When no plugin answers, the core writes the program's text unchanged to a ``.txt`` file
    (the run, node, operator, round, fitness and cell are in the JSON Lines file written beside
    it either way).

    Example (Core War writes ``.red`` files with ``;name``, ``;author`` and ``;strategy``
    comments naming the program's origin)::

        @hookimpl
        def dei_export_program(domain, program):
            if domain != "mydomain":
                return None
            return ".prog", f"# {program.title}\n{program.text}"

    Fires:
        Once per exported champion or elite, in ``dei export`` (or
        :func:`~dei_framework.report.export.export_programs`); once for the run's best program with
        ``dei export --best`` (:func:`~dei_framework.report.export.export_best`).

    Args:
        domain: The run's domain name (``summary.json``'s ``domain``).
        program: The program and where it comes from
            (:class:`~dei_framework.report.export.ExportedProgram`).

    Returns:
        The first answer that is not ``None`` (firstresult: the plugins after it are not
        asked). Answer ``(suffix, text)``: the file name's suffix with its dot (``".red"``) and
        the file's content; or ``None`` for a domain that is not yours.
    """


# --- observation --------------------------------------------------------------------------------


@hookspec
def dei_candidate_evaluated(event: EvaluatedEvent) -> None:
    """A candidate was evaluated, or found invalid, on a node of the run.

    Fires:
        Once per ``evaluated`` event, right after it is written to ``events.jsonl``: every
        operator-written candidate, warm-start re-evaluation and received champion, on every
        node (in the process running that node when nodes run as processes). A failed operator
        call has no event and fires nothing.

    Args:
        event: The ``evaluated`` event exactly as written to ``events.jsonl``.

    Returns:
        Nothing; return values are ignored (an observation hook).
    """


@hookspec
def dei_round_ended(node: str, round: int, stats: RoundEvent) -> None:
    """A node finished a round.

    Fires:
        Once per node and round, after the round's archive file (``nodes/<node>/round-NNN.json``)
        is written (in the process running that node when nodes run as processes). Rounds
        finished before a ``--resume`` do not fire again.

    Args:
        node: The node's name.
        round: The round just finished (0-based).
        stats: The ``round`` event written to ``events.jsonl`` (archive stats, champion,
            niche novelty, opponents fought, ...).

    Returns:
        Nothing; return values are ignored (an observation hook).
    """


@hookspec
def dei_champion_received(
    node: str, envelope: ChampionEnvelope | None, accepted: bool, reason: str
) -> None:
    """A node took a message from its inbox.

    Fires:
        Once per message a node drains at a round's start, and once per message drained after
        its last round (arrived too late to fight), in a run that shares champions; never for
        a node's own champion coming back through gossip, nor in a ``--replay`` run (the
        received champions are then read from the record).

    Args:
        node: The receiving node.
        envelope: The :class:`~dei_framework.net.envelope.ChampionEnvelope` (``None`` if the
            message could not be decoded or verified).
        accepted: Whether it was valid (it is then parsed, and the sharing policy decides
            whether it joins the node's opponents, its archive, or neither).
        reason: ``"ok"`` when accepted, ``"dropped"`` when not (``summary.json``'s
            ``nodes.<name>.sharing.dropped`` counts the drops by cause).

    Returns:
        Nothing; return values are ignored (an observation hook).
    """


@hookspec
def dei_run_finished(run_dir: str, summary: RunSummary) -> None:
    """A run finished and its results are written.

    Fires:
        Once per run, after ``summary.json`` and ``merged_archive.json`` are written: at the
        end of ``dei-run`` (or :func:`~dei_framework.run`; each run of ``dei experiment``).
        When nodes run as processes, each node's process fires it for its own directory
        (``processes/<node>/``) and the launcher fires it once more after merging them. An
        interrupted run does not fire it.

    Args:
        run_dir: The run directory (the one holding ``summary.json``).
        summary: What ``summary.json`` holds.

    Returns:
        Nothing; return values are ignored (an observation hook).
    """
