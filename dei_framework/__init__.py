"""DEI: quality-diversity search with heterogeneous operator ensembles.

The core is domain-agnostic. What it offers library users:

* :class:`Scheduler` — one node's Red Queen MAP-Elites as ask/tell (:class:`WorkItem` out,
  :class:`Result` in, :class:`TellReport` back); :func:`evaluate` scores a program in-process.
* :class:`Candidate` — the one program record (archive elite, parent, opponent, received
  champion). ``Elite``, ``Parent`` and ``Opponent`` are deprecated aliases of it: they still
  work, with a ``DeprecationWarning``.
* :class:`ArchiveBase`, :class:`GridArchive`, :class:`CVTArchive`, :class:`AddStatus`,
  :class:`ArchiveStats` — archives; :class:`EmitterBase`, :class:`UniformEmitter`,
  :class:`ImprovementEmitter`, :class:`TournamentEmitter` — parent choice.
* :class:`DescriptorSpace` and the axes :class:`ThresholdAxis`, :class:`UniformAxis`,
  :class:`LogAxis`.
* :class:`OpponentPool` — the Red Queen opponents; :class:`SharingPolicy` (a protocol),
  :class:`TopKSharing` and :class:`Admit` — champion sharing.
* :class:`BudgetLedger` — equal-compute call accounting with hard caps.
* :class:`Domain`, :class:`Operator`, :class:`Transport` — the plugin contracts (with
  :class:`GenomeEvaluations`, the array form's outcome), with
  :data:`hookimpl` and the hook specifications in :mod:`dei_framework.hookspecs`;
  :class:`OperatorSettings` — what an operator factory receives (build one to create an
  operator yourself: ``registry.operator(spec).factory(settings, domain)``).
* :class:`FactoryContext` — what plugin factories receive (registry, options, seed), with
  :class:`PluginRegistry`; the types hooks and specs name: :class:`RunOption`,
  :class:`ExportedProgram`, :class:`EvaluatorSpec`, :class:`EvaluationBackend`,
  :class:`EvaluatorOptions`, :class:`LocalNetwork`, :class:`ChampionEnvelope`,
  :class:`NodeIdentity`, :class:`InboxFilter`, :class:`EnvelopeError`, :data:`Message`; the
  observation payloads :class:`EvaluatedEvent`, :class:`RoundEvent`, :class:`RunSummary`.
* :class:`RunConfig`, :class:`NodeConfig` and :func:`run` — run an ensemble from Python;
  :class:`ExperimentPlan`, :class:`Condition` and :func:`run_experiment` — an experiment;
  :class:`WatchedRun` — read a run directory as it grows.
* :class:`DEIError` — the base of every error a user can cause.

``dei_framework.__version__`` is the installed distribution's version.

**What is public.** The names above (``dei_framework.__all__``) and everything in
:mod:`dei_framework.hookspecs` (the hook specifications and their payload records). Import them
from here; importing one from the module that defines it (``from dei_framework.operators import
Operator``) works too. Every other name of every module is internal and may change in any
release: modules whose names start with ``_`` are private, and every module that defines no
public name says so in its docstring (``Internal: ...``). ``tests/core/test_public_api.py``
holds each module to one of the two.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Where each public name is defined. A module is imported when one of its names is first
#: used, not when the package is: ``dei --help`` and the node processes the launcher starts
#: then do not wait for numpy and every plugin, and a Ctrl-C in the first second of a
#: command reaches its handler instead of printing a traceback from an import.
_NAMES_BY_MODULE: dict[str, tuple[str, ...]] = {
    "archives": (
        "AddStatus", "ArchiveBase", "ArchiveSpec", "ArchiveStats", "CVTArchive", "GridArchive",
        "OccupiedElites",
    ),
    "backend": ("EvaluationBackend", "EvaluatorOptions", "EvaluatorSpec"),
    "budget": ("BudgetLedger", "split_budget"),
    "cli_options": ("RunOption",),
    "config": ("NodeConfig", "RunConfig"),
    "context": ("FactoryContext",),
    "descriptors": ("AxisSpec", "DescriptorSpace", "LogAxis", "ThresholdAxis", "UniformAxis"),
    "domain": ("Domain", "DomainSpec", "Evaluation", "GenomeEvaluations", "Program"),
    "emitters": ("EmitterBase", "EmitterSpec", "ImprovementEmitter", "TournamentEmitter",
                 "UniformEmitter"),
    "ensemble": ("run",),
    "envelope": ("ChampionEnvelope", "EnvelopeError", "InboxFilter", "NodeIdentity"),
    "errors": (
        "BudgetExhausted", "ConfigError", "DEIError", "InvalidProgram", "OperatorError",
        "PluginError", "ReferenceOverlap", "TransportError",
    ),
    "evaluation": ("evaluate",),
    "experiment": ("Condition", "ExperimentPlan", "run_experiment"),
    "export": ("ExportedProgram",),
    "hookspecs": ("EvaluatedEvent", "RoundEvent", "RunSummary", "hookimpl", "hookspec"),
    "operators": (
        "Operator", "OperatorReply", "OperatorRequest", "OperatorSettings", "OperatorSpec",
        "TransientOperatorFailure",
    ),
    "opponents": ("OpponentPool",),
    "plugins": ("load_plugins",),
    "records": ("Candidate", "Message"),
    "registry": ("PluginRegistry",),
    "sandbox": ("Limits", "SandboxPolicy", "choose_policy"),
    "scheduler": ("Admission", "Result", "RoundEnd", "Scheduler", "TellReport", "WorkItem"),
    "sharing": ("Admit", "SharingPolicy", "SharingSpec", "TopKSharing"),
    "transport": ("Delivery", "LocalNetwork", "Transport", "TransportSpec"),
    "watch": ("WatchedRun",),
}
_HOMES = {name: module for module, names in _NAMES_BY_MODULE.items() for name in names}
#: Deprecated names: each still gives the object of its replacement, with a DeprecationWarning.
#: ``Candidate`` serves as archive elite, parent and opponent alike, under one name.
_DEPRECATED: dict[str, str] = {"Elite": "Candidate", "Opponent": "Candidate", "Parent": "Candidate"}

if TYPE_CHECKING:  # what type checkers and IDEs read; at run time __getattr__ does this
    from dei_framework.archives import (
        AddStatus,
        ArchiveBase,
        ArchiveSpec,
        ArchiveStats,
        CVTArchive,
        GridArchive,
        OccupiedElites,
    )
    from dei_framework.backend import EvaluationBackend, EvaluatorOptions, EvaluatorSpec
    from dei_framework.budget import BudgetLedger, split_budget
    from dei_framework.cli_options import RunOption
    from dei_framework.config import NodeConfig, RunConfig
    from dei_framework.context import FactoryContext
    from dei_framework.descriptors import (
        AxisSpec,
        DescriptorSpace,
        LogAxis,
        ThresholdAxis,
        UniformAxis,
    )
    from dei_framework.domain import Domain, DomainSpec, Evaluation, GenomeEvaluations, Program
    from dei_framework.emitters import (
        EmitterBase,
        EmitterSpec,
        ImprovementEmitter,
        TournamentEmitter,
        UniformEmitter,
    )
    from dei_framework.ensemble import run
    from dei_framework.envelope import ChampionEnvelope, EnvelopeError, InboxFilter, NodeIdentity
    from dei_framework.errors import (
        BudgetExhausted,
        ConfigError,
        DEIError,
        InvalidProgram,
        OperatorError,
        PluginError,
        ReferenceOverlap,
        TransportError,
    )
    from dei_framework.evaluation import evaluate
    from dei_framework.experiment import Condition, ExperimentPlan, run_experiment
    from dei_framework.export import ExportedProgram
    from dei_framework.hookspecs import EvaluatedEvent, RoundEvent, RunSummary, hookimpl, hookspec
    from dei_framework.operators import (
        Operator,
        OperatorReply,
        OperatorRequest,
        OperatorSettings,
        OperatorSpec,
        TransientOperatorFailure,
    )
    from dei_framework.opponents import OpponentPool
    from dei_framework.plugins import load_plugins
    from dei_framework.records import Candidate, Message
    from dei_framework.registry import PluginRegistry
    from dei_framework.sandbox import Limits, SandboxPolicy, choose_policy
    from dei_framework.scheduler import Admission, Result, RoundEnd, Scheduler, TellReport, WorkItem
    from dei_framework.sharing import Admit, SharingPolicy, SharingSpec, TopKSharing
    from dei_framework.transport import Delivery, LocalNetwork, Transport, TransportSpec
    from dei_framework.watch import WatchedRun

    Elite = Opponent = Parent = Candidate  # deprecated aliases (see _DEPRECATED)

__all__ = [
    "Admission", "Admit", "ArchiveBase", "ArchiveSpec", "CVTArchive", "Candidate",
    "EmitterBase", "EmitterSpec", "ImprovementEmitter", "Result", "RoundEnd", "Scheduler",
    "TellReport", "TopKSharing", "TournamentEmitter", "UniformEmitter", "WorkItem", "evaluate",
    "AddStatus", "ArchiveStats", "AxisSpec", "BudgetExhausted", "BudgetLedger", "ConfigError",
    "DEIError", "Delivery", "DescriptorSpace", "Domain", "DomainSpec", "Evaluation",
    "FactoryContext", "GenomeEvaluations", "GridArchive", "InvalidProgram", "LogAxis",
    "NodeConfig", "Operator",
    "OperatorError", "OperatorReply", "OperatorRequest", "OperatorSettings", "OperatorSpec",
    "OpponentPool", "PluginError", "Program", "ReferenceOverlap",
    "RunConfig", "SharingPolicy", "SharingSpec", "ThresholdAxis", "TransientOperatorFailure",
    "Transport", "TransportError", "TransportSpec", "UniformAxis", "hookimpl", "hookspec",
    "load_plugins", "run", "split_budget",
    "OccupiedElites",
    "ChampionEnvelope", "Condition", "EnvelopeError", "EvaluatedEvent", "EvaluationBackend",
    "EvaluatorOptions", "EvaluatorSpec", "ExperimentPlan", "ExportedProgram", "InboxFilter",
    "LocalNetwork", "Message", "NodeIdentity", "PluginRegistry", "RoundEvent", "RunOption",
    "RunSummary", "WatchedRun", "run_experiment",
    "Limits", "SandboxPolicy", "choose_policy",
]  # fmt: skip


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
            f"dei_framework.{name} is deprecated; use dei_framework.{replacement} (the same "
            "class)",
            DeprecationWarning,
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
