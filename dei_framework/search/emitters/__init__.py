"""Emitters: how a node chooses the elites each operator call starts from.

* :class:`EmitterBase` — the contract (``select`` parents, optionally ``tell`` outcomes).
* :class:`UniformEmitter` — the paper's uniform sampling over occupied cells.
* :class:`ImprovementEmitter` — parents whose children improved the archive are drawn more.
* :class:`TournamentEmitter` — each parent the fittest of ``size`` elites drawn uniformly.
* :class:`EmitterSpec` — how a plugin registers an emitter (hook ``dei_emitters``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dei_framework.contract.errors import ConfigError
from dei_framework.search.emitters._emitter_base import EmitterBase
from dei_framework.search.emitters._emitter_spec import EmitterSpec
from dei_framework.search.emitters._improvement_emitter import ImprovementEmitter
from dei_framework.search.emitters._tournament_emitter import TournamentEmitter
from dei_framework.search.emitters._uniform_emitter import UniformEmitter


def _uniform(options: Mapping[str, Any]) -> UniformEmitter:
    if options:
        raise ConfigError(f"uniform emitter takes no options, got {sorted(options)}")
    return UniformEmitter()


def _improvement(options: Mapping[str, Any]) -> ImprovementEmitter:
    unknown = set(options) - {"prior"}
    if unknown:
        raise ConfigError(f"improvement emitter: unknown options {sorted(unknown)} (known: prior)")
    return ImprovementEmitter(**options)


def _tournament(options: Mapping[str, Any]) -> TournamentEmitter:
    unknown = set(options) - {"size"}
    if unknown:
        raise ConfigError(f"tournament emitter: unknown options {sorted(unknown)} (known: size)")
    return TournamentEmitter(**options)


#: The emitters the core registers through its built-in plugin.
BUILTIN_EMITTERS = (
    EmitterSpec(name="uniform", factory=_uniform,
                description="the paper's choice: parents uniform over occupied cells"),
    EmitterSpec(name="improvement", factory=_improvement,
                description="curiosity: parents whose children improved cells (option prior)"),
    EmitterSpec(name="tournament", factory=_tournament,
                description="exploitation: each parent the fittest of size elites drawn "
                            "uniformly (option size, default 3)"),
)  # fmt: skip

__all__ = ["BUILTIN_EMITTERS", "EmitterBase", "EmitterSpec", "ImprovementEmitter",
           "TournamentEmitter", "UniformEmitter"]  # fmt: skip
