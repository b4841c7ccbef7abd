"""``dei experiment``'s flags resolved into an experiment plan (``experiment.plan``).

Every ``dei-run`` option plus the experiment's own (``--conditions``, ``--condition``,
``--repeats``, ``--preset`` ...), from the command line and the ``--config`` file.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from typing import Any

import attrs

from dei_framework.contract.context import FactoryContext
from dei_framework.contract.errors import ConfigError
from dei_framework.experiment.plan import (
    DEFAULT_CONDITIONS,
    DEFAULT_EXPERIMENT_NODES,
    TOKENS_NEED_ITERATIONS,
    ExperimentPlan,
    parse_conditions,
)
from dei_framework.plugin.manager import PluginRegistry
from dei_framework.runtime.builders import build_allocator, build_plugin, domain_lifecycle
from dei_framework.runtime.config.checks import check_count
from dei_framework.runtime.config.resolve import DEFAULT_CALLS_PER_NODE, Sources, resolve_config
from dei_framework.runtime.config.settings import warn_overrides


def plan_from_flags(flags: dict[str, Any], plugins: PluginRegistry) -> ExperimentPlan:
    """Resolves ``dei experiment`` flags (every ``dei-run`` option plus the experiment's own)."""
    sources = Sources.read(flags, experiment=True)  # flags > file > preset, as dei-run's
    mine, pick, protocol = sources.mine, sources.pick, sources.protocol
    tokens = pick("compute_axis") == "tokens"
    if not tokens and mine("iterations") is not None:
        raise ConfigError(
            "experiments take --budget (total calls per condition), not "
            "--iterations (the call bound of --compute-axis tokens)"
        )
    if tokens and not (flags.get("budget") or sources.file.get("budget")):  # 0: not given
        raise ConfigError("--compute-axis tokens needs --budget (total tokens per condition)")
    if tokens and mine("iterations") is None:
        raise ConfigError(TOKENS_NEED_ITERATIONS)
    if flags.get("replay") or flags.get("reask_mismatched"):
        raise ConfigError(
            "dei experiment does not replay; replay single runs with "
            "dei-run --replay OUT/<condition>/repeat-<k>"
        )
    # One base node per operator: it carries that operator's options (api_base, [[node]] ...).
    # On the tokens axis the budget and the call bound stay: the base configuration must hold.
    calls_only = {} if tokens else {"budget": None, "iterations": None}
    # Counts an `or` below would otherwise take as "not given" (0) or pass on (-2, "ten").
    check_count("--nodes", flags.get("nodes"))
    check_count("--budget", mine("budget"))
    check_count("--repeats", flags.get("repeats"))
    base = resolve_config({**flags, "nodes": None, **calls_only}, plugins)
    operators = list(dict.fromkeys(node.operator for node in base.nodes))
    nodes = pick("nodes") or DEFAULT_EXPERIMENT_NODES
    listed = pick("conditions") or ""
    names = [n.strip() for n in listed.split(",") if n.strip()]
    if not names and not flags.get("condition"):
        names = list(DEFAULT_CONDITIONS)
    conditions = parse_conditions(
        names, flags.get("condition") or (), operators, nodes, registry=plugins
    )
    if sources.preset is not None:
        warn_overrides(
            sources.preset,
            [
                f"--{key} {mine(key)} (preset: {protocol.get(key)})"
                for key in ("nodes", "budget")
                if mine(key) not in (None, protocol.get(key))
            ],
        )
    budget = pick("budget") or DEFAULT_CALLS_PER_NODE * max(c.nodes for c in conditions)
    for condition in conditions:
        for operator in condition.operators:
            plugins.operator(operator)  # unknown operator names fail before any run starts
        if "allocation" in condition.settings:  # refused before any run, not at its turn
            build_allocator(attrs.evolve(base, **condition.settings), plugins)
    # Bad domain options (e.g. a generality set overlapping the opponents) fail here too.
    domain = build_plugin(
        plugins.domains,
        base.domain,
        plugins.domain(base.domain).factory,
        FactoryContext(registry=plugins, options=dict(base.domain_options), seed=base.seed),
    )
    # Every condition runs with the same lifecycle, recorded in the plan as it is in each run.
    base = attrs.evolve(base, lifecycle=base.lifecycle or domain_lifecycle(domain))
    return ExperimentPlan(
        base=attrs.evolve(base, budget=budget),
        conditions=conditions,
        budget=budget,
        repeats=flags.get("repeats") or 1,
        preset=sources.preset.name if sources.preset else None,
    )
