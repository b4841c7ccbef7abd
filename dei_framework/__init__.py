"""DEI: quality-diversity search with heterogeneous operator ensembles.

The core is domain-agnostic. What it offers library users:

* :class:`Scheduler` — one node's Red Queen MAP-Elites as ask/tell (:class:`WorkItem` out,
  :class:`Result` in, :class:`TellReport` back); :func:`evaluate` scores a program in-process.
* :class:`Candidate` — the one program record (archive elite, parent, opponent, received
  champion).
* :class:`ArchiveBase`, :class:`GridArchive`, :class:`CVTArchive`, :class:`AddStatus`,
  :class:`ArchiveStats` — archives; :class:`ParentSelector`, :class:`UniformSelector`,
  :class:`ImprovementSelector`, :class:`TournamentSelector` (with :class:`SelectorSpec`) —
  parent choice, chosen by the ``selector`` setting.
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
modules, each with its job. What changed incompatibly since the flat layout is in CHANGELOG.md.

Modules:
    __main__.py       ``python -m dei_framework ARGS`` is ``dei ARGS``
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
from typing import Any

#: Every public name, once, by the module that defines it; ``__all__`` and ``__getattr__`` both
#: derive from it. A module is imported when one of its names is first used, not when the
#: package is: ``dei --help`` and the node processes the launcher starts then do not wait for
#: numpy and every plugin, and a Ctrl-C in the first second of a command reaches its handler
#: instead of printing a traceback from an import.
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
    "runtime.budget.ledger": ("BudgetLedger",),
    "runtime.budget.usage": ("split_budget",),
    "runtime.config.record": ("NodeConfig",),
    "runtime.config.run_config": ("RunConfig",),
    "runtime.ensemble": ("run",),
    "experiment.runner": ("Condition", "ExperimentPlan", "run_experiment"),
    "app.watch": ("WatchedRun",),
}
_HOMES = {name: module for module, names in _NAMES_BY_MODULE.items() for name in names}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    """Imports ``name`` from its module on first use (PEP 562), then keeps it here."""
    if name == "__version__":  # from the metadata, so it cannot drift from pyproject.toml
        from importlib.metadata import version

        value = version("dei-framework")
        globals()[name] = value
        return value
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
