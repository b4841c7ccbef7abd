"""Parent selectors: how a node chooses the elites each operator call starts from.

* :class:`ParentSelector` — the contract (``select`` parents, optionally ``tell`` outcomes).
* :class:`UniformSelector` — the paper's uniform sampling over occupied cells.
* :class:`ImprovementSelector` — parents whose children improved the archive are drawn more.
* :class:`TournamentSelector` — each parent the fittest of ``size`` elites drawn uniformly.
* :class:`SelectorSpec` — how a plugin registers a selector (hook ``dei_emitters``).

These were "emitters"; in pyribs an emitter generates solutions, which here is an operator's
job, so the name misled. The settings keep their names — ``emitter`` and
``[emitter_options]``, ``--emitter``, the hook ``dei_emitters``, the registry's ``emitters``
table: they are the configuration and plugin contract, and an ``emitter`` setting chooses a
parent selector.

May import: what ``search`` may import (:mod:`dei_framework.contract`) and the other modules of
``search``.

Modules:
    _parent_selector.py         ParentSelector: the contract every parent selector implements
    _uniform_selector.py        UniformSelector: the paper's choice, uniform over occupied cells
    _improvement_selector.py    ImprovementSelector: parents whose children improved the
                                archive drawn more often
    _tournament_selector.py     TournamentSelector: the fittest of a few elites drawn uniformly
    _selector_spec.py           SelectorSpec: how a plugin registers a parent selector
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dei_framework.contract.errors import ConfigError
from dei_framework.search.selectors._improvement_selector import ImprovementSelector
from dei_framework.search.selectors._parent_selector import ParentSelector
from dei_framework.search.selectors._selector_spec import SELECTORS, SelectorSpec
from dei_framework.search.selectors._tournament_selector import TournamentSelector
from dei_framework.search.selectors._uniform_selector import UniformSelector


# The messages say "emitter": that is the setting the user wrote.
def _uniform(options: Mapping[str, Any]) -> UniformSelector:
    if options:
        raise ConfigError(f"uniform emitter takes no options, got {sorted(options)}")
    return UniformSelector()


def _improvement(options: Mapping[str, Any]) -> ImprovementSelector:
    unknown = set(options) - {"prior"}
    if unknown:
        raise ConfigError(f"improvement emitter: unknown options {sorted(unknown)} (known: prior)")
    return ImprovementSelector(**options)


def _tournament(options: Mapping[str, Any]) -> TournamentSelector:
    unknown = set(options) - {"size"}
    if unknown:
        raise ConfigError(f"tournament emitter: unknown options {sorted(unknown)} (known: size)")
    return TournamentSelector(**options)


#: The parent selectors the core registers through its built-in plugin (their names are what
#: ``--emitter`` takes).
BUILTIN_SELECTORS = (
    SelectorSpec(
        name="uniform",
        factory=_uniform,
        description="the paper's choice: parents uniform over occupied cells",
    ),
    SelectorSpec(
        name="improvement",
        factory=_improvement,
        description="curiosity: parents whose children improved cells (option prior)",
    ),
    SelectorSpec(
        name="tournament",
        factory=_tournament,
        description="exploitation: each parent the fittest of size elites drawn "
        "uniformly (option size, default 3)",
    ),
)

__all__ = [
    "BUILTIN_SELECTORS",
    "SELECTORS",
    "ImprovementSelector",
    "ParentSelector",
    "SelectorSpec",
    "TournamentSelector",
    "UniformSelector",
]
