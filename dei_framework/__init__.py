"""DEI: quality-diversity search with heterogeneous operator ensembles.

The core is domain-agnostic. What it offers library users:

* :class:`GridArchive`, :class:`AddStatus`, :class:`Elite`, :class:`ArchiveStats` — MAP-Elites.
* :class:`DescriptorSpace` and the axes :class:`ThresholdAxis`, :class:`UniformAxis`,
  :class:`LogAxis`.
* :class:`OpponentPool` — the Red Queen opponents; :class:`SharingPolicy` — champion sharing.
* :class:`BudgetLedger` — equal-compute call accounting with hard caps.
* :class:`Domain`, :class:`Operator`, :class:`Transport` — the plugin contracts, with
  :data:`hookimpl` and the hook specifications in :mod:`dei_framework.hookspecs`.
* :class:`FactoryContext` — what plugin factories receive (registry, options, seed).
* :class:`RunConfig`, :class:`NodeConfig` and :func:`run` — run an ensemble from Python.
* :class:`DEIError` — the base of every error a user can cause.
"""

from dei_framework.archive import AddStatus, ArchiveStats, Elite, GridArchive
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
from dei_framework.hookspecs import hookimpl, hookspec
from dei_framework.operators import (
    Operator,
    OperatorReply,
    OperatorRequest,
    OperatorSettings,
    OperatorSpec,
    Parent,
    TransientOperatorFailure,
)
from dei_framework.opponents import Opponent, OpponentPool
from dei_framework.plugins import load_plugins
from dei_framework.sharing import SharingPolicy, SharingSpec
from dei_framework.transport import Delivery, Transport, TransportSpec

__all__ = [
    "AddStatus", "ArchiveStats", "AxisSpec", "BudgetExhausted", "BudgetLedger", "ConfigError",
    "DEIError", "Delivery", "DescriptorSpace", "Domain", "DomainSpec", "Elite", "Evaluation",
    "FactoryContext", "GridArchive", "InvalidProgram", "LogAxis", "NodeConfig", "Operator",
    "OperatorError", "OperatorReply", "OperatorRequest", "OperatorSettings", "OperatorSpec",
    "Opponent", "OpponentPool", "Parent", "PluginError", "Program", "ReferenceOverlap",
    "RunConfig", "SharingPolicy", "SharingSpec", "ThresholdAxis", "TransientOperatorFailure",
    "Transport", "TransportError", "TransportSpec", "UniformAxis", "hookimpl", "hookspec",
    "load_plugins", "run", "split_budget",
]  # fmt: skip
