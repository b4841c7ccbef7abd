"""DEI: quality-diversity search with heterogeneous operator ensembles.

The core is domain-agnostic. What it offers library users:

* :class:`Scheduler` — one node's Red Queen MAP-Elites as ask/tell (:class:`WorkItem` out,
  :class:`Result` in, :class:`TellReport` back); :func:`evaluate` scores a program in-process.
* :class:`Candidate` — the one program record (``Elite``, ``Parent``, ``Opponent`` alias it).
* :class:`ArchiveBase`, :class:`GridArchive`, :class:`CVTArchive`, :class:`AddStatus`,
  :class:`ArchiveStats` — archives; :class:`EmitterBase`, :class:`UniformEmitter`,
  :class:`ImprovementEmitter` — parent choice.
* :class:`DescriptorSpace` and the axes :class:`ThresholdAxis`, :class:`UniformAxis`,
  :class:`LogAxis`.
* :class:`OpponentPool` — the Red Queen opponents; :class:`SharingPolicy` (a protocol),
  :class:`TopKSharing` and :class:`Admit` — champion sharing.
* :class:`BudgetLedger` — equal-compute call accounting with hard caps.
* :class:`Domain`, :class:`Operator`, :class:`Transport` — the plugin contracts, with
  :data:`hookimpl` and the hook specifications in :mod:`dei_framework.hookspecs`;
  :class:`OperatorSettings` — what an operator factory receives (build one to create an
  operator yourself: ``registry.operator(spec).factory(settings, domain)``).
* :class:`FactoryContext` — what plugin factories receive (registry, options, seed).
* :class:`RunConfig`, :class:`NodeConfig` and :func:`run` — run an ensemble from Python.
* :class:`DEIError` — the base of every error a user can cause.

``dei_framework.__version__`` is the installed distribution's version.
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
    "budget": ("BudgetLedger", "split_budget"),
    "config": ("NodeConfig", "RunConfig"),
    "context": ("FactoryContext",),
    "descriptors": ("AxisSpec", "DescriptorSpace", "LogAxis", "ThresholdAxis", "UniformAxis"),
    "domain": ("Domain", "DomainSpec", "Evaluation", "Program"),
    "emitters": ("EmitterBase", "EmitterSpec", "ImprovementEmitter", "UniformEmitter"),
    "ensemble": ("run",),
    "errors": (
        "BudgetExhausted", "ConfigError", "DEIError", "InvalidProgram", "OperatorError",
        "PluginError", "ReferenceOverlap", "TransportError",
    ),
    "evaluation": ("evaluate",),
    "hookspecs": ("hookimpl", "hookspec"),
    "operators": (
        "Operator", "OperatorReply", "OperatorRequest", "OperatorSettings", "OperatorSpec",
        "TransientOperatorFailure",
    ),
    "opponents": ("OpponentPool",),
    "plugins": ("load_plugins",),
    "records": ("Candidate", "Elite", "Opponent", "Parent"),
    "scheduler": ("Admission", "Result", "RoundEnd", "Scheduler", "TellReport", "WorkItem"),
    "sharing": ("Admit", "SharingPolicy", "SharingSpec", "TopKSharing"),
    "transport": ("Delivery", "Transport", "TransportSpec"),
}
_HOMES = {name: module for module, names in _NAMES_BY_MODULE.items() for name in names}

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
    from dei_framework.budget import BudgetLedger, split_budget
    from dei_framework.config import NodeConfig, RunConfig
    from dei_framework.context import FactoryContext
    from dei_framework.descriptors import (
        AxisSpec,
        DescriptorSpace,
        LogAxis,
        ThresholdAxis,
        UniformAxis,
    )
    from dei_framework.domain import Domain, DomainSpec, Evaluation, Program
    from dei_framework.emitters import EmitterBase, EmitterSpec, ImprovementEmitter, UniformEmitter
    from dei_framework.ensemble import run
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
    from dei_framework.hookspecs import hookimpl, hookspec
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
    from dei_framework.records import Candidate, Elite, Opponent, Parent
    from dei_framework.scheduler import Admission, Result, RoundEnd, Scheduler, TellReport, WorkItem
    from dei_framework.sharing import Admit, SharingPolicy, SharingSpec, TopKSharing
    from dei_framework.transport import Delivery, Transport, TransportSpec

__all__ = [
    "Admission", "Admit", "ArchiveBase", "ArchiveSpec", "CVTArchive", "Candidate",
    "EmitterBase", "EmitterSpec", "ImprovementEmitter", "Result", "RoundEnd", "Scheduler",
    "TellReport", "TopKSharing", "UniformEmitter", "WorkItem", "evaluate",
    "AddStatus", "ArchiveStats", "AxisSpec", "BudgetExhausted", "BudgetLedger", "ConfigError",
    "DEIError", "Delivery", "DescriptorSpace", "Domain", "DomainSpec", "Elite", "Evaluation",
    "FactoryContext", "GridArchive", "InvalidProgram", "LogAxis", "NodeConfig", "Operator",
    "OperatorError", "OperatorReply", "OperatorRequest", "OperatorSettings", "OperatorSpec",
    "Opponent", "OpponentPool", "Parent", "PluginError", "Program", "ReferenceOverlap",
    "RunConfig", "SharingPolicy", "SharingSpec", "ThresholdAxis", "TransientOperatorFailure",
    "Transport", "TransportError", "TransportSpec", "UniformAxis", "hookimpl", "hookspec",
    "load_plugins", "run", "split_budget",
    "OccupiedElites",
]  # fmt: skip


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
