"""DEI: quality-diversity search with heterogeneous operator ensembles.

The core is domain-agnostic. What it offers library users:

* :class:`Scheduler` — one node's Red Queen MAP-Elites as ask/tell (:class:`WorkItem` out,
  :class:`Result` in, :class:`TellReport` back); :func:`evaluate` scores a program in-process.
* :class:`Candidate` — the one program record (archive elite, parent, opponent, received
  champion). ``Elite``, ``Parent`` and ``Opponent`` are deprecated aliases of it: they still
  work, with a ``DeprecationWarning``.
* :class:`ArchiveBase`, :class:`GridArchive`, :class:`CVTArchive`, :class:`AddStatus`,
  :class:`ArchiveStats` — archives; :class:`ParentSelector`, :class:`UniformSelector`,
  :class:`ImprovementSelector`, :class:`TournamentSelector` (with :class:`SelectorSpec`) —
  parent choice, chosen by the ``emitter`` setting. Their old names (``EmitterBase``,
  ``EmitterSpec``, ``UniformEmitter``, ``ImprovementEmitter``, ``TournamentEmitter``) are
  deprecated aliases: they still work, with a ``DeprecationWarning``.
* :class:`DescriptorSpace` and the axes :class:`ThresholdAxis`, :class:`UniformAxis`,
  :class:`LogAxis`.
* :class:`OpponentPool` — the Red Queen opponents; :class:`SharingPolicy` (a protocol),
  :class:`TopKSharing` and :class:`Admit` — champion sharing.
* :class:`BudgetLedger` — equal-compute call accounting with hard caps.
* :class:`Domain`, :class:`Operator`, :class:`Transport` — the plugin contracts (with
  :class:`GenomeEvaluations`, the array form's outcome), with
  :data:`hookimpl` and the hook specifications in :mod:`dei_framework.plugin.hookspecs`;
  :class:`OperatorSettings` — what an operator factory receives (build one to create an
  operator yourself: ``registry.operator(spec).factory(settings)``, ``settings.domain`` set).
* :class:`FactoryContext` — what plugin factories receive (registry, options, seed), with
  :class:`PluginRegistry`; the types hooks and specs name: :class:`RunOption`,
  :class:`ExportedProgram`, :class:`EvaluatorSpec`, :class:`EvaluationBackend`,
  :class:`EvaluatorOptions`, :class:`LocalNetwork`, :class:`ChampionEnvelope`,
  :class:`NodeIdentity`, :class:`InboxFilter`, :class:`EnvelopeError`, :data:`Message`; the
  observation payloads :class:`EvaluatedEvent`, :class:`RoundEvent`, :class:`RunSummary`
  (records whose ``to_json()`` is the file's JSON; a node's results are :class:`NodeSummary`),
  and the string enums their fields hold: :class:`CandidateSource` (a candidate's ``source``),
  :class:`WorkKind` (a work item's and an ``evaluated`` event's ``kind``), :class:`EventKind`
  (a run-log line's ``event``) and :class:`ProgressKind` (a progress update's kind).
* :class:`RunConfig`, :class:`NodeConfig` and :func:`run` — run an ensemble from Python;
  :class:`ExperimentPlan`, :class:`Condition` and :func:`run_experiment` — an experiment;
  :class:`WatchedRun` — read a run directory as it grows.
* :class:`DEIError` — the base of every error a user can cause.

``dei_framework.__version__`` is the installed distribution's version.

**What is public.** The names above (``dei_framework.__all__``) and everything in
:mod:`dei_framework.plugin.hookspecs` (the hook specifications and their payload records).
Import them from here; importing one from the module that defines it
(``from dei_framework.contract.operators import Operator``) works too. Every other name of
every module is internal and may change in any release: modules whose names start with ``_``
are private, and every module that defines no public name says so in its docstring
(``Internal: ...``). ``tests/core/test_public_api.py`` holds each module to one of the two.

**Where things live.** One package per layer, bottom first in the list below, each importing
only the layers before it (docs/architecture.md, "Layout"); each package's docstring lists its
modules, each with its job. The flat layout's module paths (``dei_framework.ensemble`` ...)
still import, with a ``DeprecationWarning``, for one release (:mod:`dei_framework._moved`).

Modules:
    __main__.py       ``python -m dei_framework ARGS`` is ``dei ARGS``
    _moved.py         the flat layout's import paths (before 0.2), kept for one release
    _lazy.py          a package's names handed on from one module on first use (PEP 562)
    _deprecation.py   DEIDeprecationWarning, the category of the framework's deprecations
    contract/         the types plugins implement or receive (imports nothing of the core)
    search/           the search algorithm, synchronous (no I/O, no awaits)
    evaluation/       scoring programs off the event loop: worker processes, Dask, sandboxes
    net/              between nodes: signed champions and reports, a node's endpoint, time
    plugin/           hook specifications, the plugin manager, the core's own plugin
    analysis/         common ground, statistics, archive metrics, figures as text
    runtime/          running a search: a node's driver, a run's assembly, budget and files
    experiment/       comparisons at equal compute, the portfolio chooser
    report/           what a finished run or experiment says: report.md, plots, export
    app/              the commands: dei-run, dei, dei watch
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dei_framework import _moved
from dei_framework._deprecation import DEIDeprecationWarning

# The flat layout's import paths (dei_framework.ensemble, ...) keep working for one release.
_moved.install()

#: Where each public name is defined. A module is imported when one of its names is first
#: used, not when the package is: ``dei --help`` and the node processes the launcher starts
#: then do not wait for numpy and every plugin, and a Ctrl-C in the first second of a
#: command reaches its handler instead of printing a traceback from an import.
_NAMES_BY_MODULE: dict[str, tuple[str, ...]] = {
    "contract.backend": ("EvaluationBackend", "EvaluatorOptions", "EvaluatorSpec"),
    "contract.cli_options": ("RunOption",),
    "contract.context": ("FactoryContext",),
    "contract.kinds": ("CandidateSource", "EventKind", "ProgressKind", "WorkKind"),
    "contract.descriptors": (
        "AxisSpec",
        "DescriptorSpace",
        "LogAxis",
        "ThresholdAxis",
        "UniformAxis",
    ),
    "contract.domain": ("Domain", "DomainSpec", "Evaluation", "GenomeEvaluations", "Program"),
    "contract.errors": (
        "BudgetExhausted",
        "ConfigError",
        "DEIDeprecationWarning",
        "DEIError",
        "InvalidProgram",
        "OperatorError",
        "PluginError",
        "ReferenceOverlap",
        "TransportError",
    ),
    "contract.operators": (
        "Operator",
        "OperatorReply",
        "OperatorRequest",
        "OperatorSettings",
        "OperatorSpec",
        "TransientOperatorFailure",
    ),
    "contract.price": ("Price",),
    "contract.processes": ("parent_death_signal",),
    "contract.records": ("Candidate", "ExportedProgram", "Message"),
    "contract.registry": ("PluginRegistry",),
    "contract.transport": ("Delivery", "LocalNetwork", "Transport", "TransportSpec"),
    "search.archives": (
        "AddStatus",
        "ArchiveBase",
        "ArchiveSpec",
        "ArchiveStats",
        "CVTArchive",
        "GridArchive",
        "OccupiedElites",
    ),
    "search.selectors": (
        "ImprovementSelector",
        "ParentSelector",
        "SelectorSpec",
        "TournamentSelector",
        "UniformSelector",
    ),
    "search.opponents": ("OpponentPool",),
    "search.scheduler": ("Admission", "Result", "RoundEnd", "Scheduler", "TellReport", "WorkItem"),
    "search.sharing": ("Admit", "SharingPolicy", "SharingSpec", "TopKSharing"),
    "evaluation.local": ("evaluate",),
    "evaluation.sandbox": ("Limits", "SandboxPolicy", "choose_policy"),
    "net.envelope": ("ChampionEnvelope", "EnvelopeError", "InboxFilter", "NodeIdentity"),
    "plugin.hookspecs": (
        "EvaluatedEvent",
        "RoundEvent",
        "NodeSummary",
        "RunSummary",
        "hookimpl",
        "hookspec",
    ),
    "plugin.manager": ("load_plugins",),
    "runtime.budget": ("BudgetLedger", "split_budget"),
    "runtime.config": ("NodeConfig", "RunConfig"),
    "runtime.ensemble": ("run",),
    "experiment.runner": ("Condition", "ExperimentPlan", "run_experiment"),
    "app.watch": ("WatchedRun",),
}
_HOMES = {name: module for module, names in _NAMES_BY_MODULE.items() for name in names}
#: Deprecated names: each still gives the object of its replacement, with a DeprecationWarning.
#: ``Candidate`` serves as archive elite, parent and opponent alike, under one name; the parent
#: selectors were "emitters", which in pyribs generate solutions.
_DEPRECATED: dict[str, str] = {
    "Elite": "Candidate",
    "Opponent": "Candidate",
    "Parent": "Candidate",
    "EmitterBase": "ParentSelector",
    "EmitterSpec": "SelectorSpec",
    "ImprovementEmitter": "ImprovementSelector",
    "TournamentEmitter": "TournamentSelector",
    "UniformEmitter": "UniformSelector",
}

if TYPE_CHECKING:  # what type checkers and IDEs read; at run time __getattr__ does this
    from dei_framework.app.watch import WatchedRun
    from dei_framework.contract.backend import EvaluationBackend, EvaluatorOptions, EvaluatorSpec
    from dei_framework.contract.cli_options import RunOption
    from dei_framework.contract.context import FactoryContext
    from dei_framework.contract.descriptors import (
        AxisSpec,
        DescriptorSpace,
        LogAxis,
        ThresholdAxis,
        UniformAxis,
    )
    from dei_framework.contract.domain import (
        Domain,
        DomainSpec,
        Evaluation,
        GenomeEvaluations,
        Program,
    )
    from dei_framework.contract.errors import (
        BudgetExhausted,
        ConfigError,
        DEIDeprecationWarning,
        DEIError,
        InvalidProgram,
        OperatorError,
        PluginError,
        ReferenceOverlap,
        TransportError,
    )
    from dei_framework.contract.kinds import CandidateSource, EventKind, ProgressKind, WorkKind
    from dei_framework.contract.operators import (
        Operator,
        OperatorReply,
        OperatorRequest,
        OperatorSettings,
        OperatorSpec,
        TransientOperatorFailure,
    )
    from dei_framework.contract.price import Price
    from dei_framework.contract.processes import parent_death_signal
    from dei_framework.contract.records import Candidate, ExportedProgram, Message
    from dei_framework.contract.registry import PluginRegistry
    from dei_framework.contract.transport import Delivery, LocalNetwork, Transport, TransportSpec
    from dei_framework.evaluation.local import evaluate
    from dei_framework.evaluation.sandbox import Limits, SandboxPolicy, choose_policy
    from dei_framework.experiment.runner import Condition, ExperimentPlan, run_experiment
    from dei_framework.net.envelope import (
        ChampionEnvelope,
        EnvelopeError,
        InboxFilter,
        NodeIdentity,
    )
    from dei_framework.plugin.hookspecs import (
        EvaluatedEvent,
        NodeSummary,
        RoundEvent,
        RunSummary,
        hookimpl,
        hookspec,
    )
    from dei_framework.plugin.manager import load_plugins
    from dei_framework.runtime.budget import BudgetLedger, split_budget
    from dei_framework.runtime.config import NodeConfig, RunConfig
    from dei_framework.runtime.ensemble import run
    from dei_framework.search.archives import (
        AddStatus,
        ArchiveBase,
        ArchiveSpec,
        ArchiveStats,
        CVTArchive,
        GridArchive,
        OccupiedElites,
    )
    from dei_framework.search.opponents import OpponentPool
    from dei_framework.search.scheduler import (
        Admission,
        Result,
        RoundEnd,
        Scheduler,
        TellReport,
        WorkItem,
    )
    from dei_framework.search.selectors import (
        ImprovementSelector,
        ParentSelector,
        SelectorSpec,
        TournamentSelector,
        UniformSelector,
    )
    from dei_framework.search.sharing import Admit, SharingPolicy, SharingSpec, TopKSharing

    Elite = Opponent = Parent = Candidate  # deprecated aliases (see _DEPRECATED)
    EmitterBase, EmitterSpec = ParentSelector, SelectorSpec
    ImprovementEmitter, TournamentEmitter = ImprovementSelector, TournamentSelector
    UniformEmitter = UniformSelector

__all__ = [
    "Admission",
    "Admit",
    "ArchiveBase",
    "ArchiveSpec",
    "CVTArchive",
    "Candidate",
    "ParentSelector",
    "SelectorSpec",
    "ImprovementSelector",
    "Result",
    "RoundEnd",
    "Scheduler",
    "TellReport",
    "TopKSharing",
    "TournamentSelector",
    "UniformSelector",
    "WorkItem",
    "evaluate",
    "AddStatus",
    "ArchiveStats",
    "AxisSpec",
    "BudgetExhausted",
    "BudgetLedger",
    "ConfigError",
    "DEIDeprecationWarning",
    "DEIError",
    "Delivery",
    "DescriptorSpace",
    "Domain",
    "DomainSpec",
    "Evaluation",
    "FactoryContext",
    "GenomeEvaluations",
    "GridArchive",
    "InvalidProgram",
    "LogAxis",
    "NodeConfig",
    "Operator",
    "OperatorError",
    "OperatorReply",
    "OperatorRequest",
    "OperatorSettings",
    "OperatorSpec",
    "OpponentPool",
    "PluginError",
    "Program",
    "ReferenceOverlap",
    "RunConfig",
    "SharingPolicy",
    "SharingSpec",
    "ThresholdAxis",
    "TransientOperatorFailure",
    "Transport",
    "TransportError",
    "TransportSpec",
    "UniformAxis",
    "hookimpl",
    "hookspec",
    "load_plugins",
    "run",
    "split_budget",
    "OccupiedElites",
    "ChampionEnvelope",
    "Condition",
    "EnvelopeError",
    "EvaluatedEvent",
    "EvaluationBackend",
    "EvaluatorOptions",
    "EvaluatorSpec",
    "ExperimentPlan",
    "ExportedProgram",
    "InboxFilter",
    "LocalNetwork",
    "Message",
    "NodeIdentity",
    "PluginRegistry",
    "RoundEvent",
    "RunOption",
    "RunSummary",
    "NodeSummary",
    "WatchedRun",
    "run_experiment",
    "Limits",
    "SandboxPolicy",
    "choose_policy",
    "Price",
    "parent_death_signal",
    "CandidateSource",
    "EventKind",
    "ProgressKind",
    "WorkKind",
]


def __getattr__(name: str) -> Any:
    """Imports ``name`` from its module on first use (PEP 562), then keeps it here."""
    if name == "__version__":  # from the metadata, so it cannot drift from pyproject.toml
        from importlib.metadata import version

        value = version("dei-framework")
        globals()[name] = value
        return value
    if name in _DEPRECATED:  # not cached: every use warns
        import warnings

        replacement = _DEPRECATED[name]
        warnings.warn(
            f"dei_framework.{name} is deprecated; use dei_framework.{replacement} (the same class)",
            DEIDeprecationWarning,
            stacklevel=2,
        )
        return __getattr__(replacement)
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
