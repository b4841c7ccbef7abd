"""``dei experiment``'s flags resolved into an experiment plan (:mod:`.experiment_plan`).

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
    BUILTIN_CONDITIONS,
    DEFAULT_EXPERIMENT_NODES,
    TOKENS_NEED_ITERATIONS,
    ExperimentPlan,
    parse_conditions,
)
from dei_framework.plugin.manager import PluginRegistry
from dei_framework.runtime.builders import build_plugin, domain_lifecycle
from dei_framework.runtime.config import (
    DEFAULT_CALLS_PER_NODE,
    check_count,
    load_toml,
    resolve_config,
)
from dei_framework.runtime.presets import get_preset, warn_overrides


def plan_from_flags(flags: dict[str, Any], plugins: PluginRegistry) -> ExperimentPlan:
    """Resolves ``dei experiment`` flags (every ``dei-run`` option plus the experiment's own)."""
    file = load_toml(flags["config_file"]) if flags.get("config_file") else {}
    file = {key.replace("-", "_"): value for key, value in file.items()}  # as resolve_config
    preset = get_preset(flags.get("preset") or file.get("preset"))
    protocol = dict(preset.settings) if preset else {}
    protocol.update(preset.experiment if preset else {})
    axis = flags.get("compute_axis") or file.get("compute_axis") or protocol.get("compute_axis")
    tokens = axis == "tokens"
    if not tokens and (flags.get("iterations") is not None or file.get("iterations") is not None):
        raise ConfigError("experiments take --budget (total calls per condition), not "
                          "--iterations (the call bound of --compute-axis tokens)")  # fmt: skip
    if tokens and not (flags.get("budget") or file.get("budget")):
        raise ConfigError("--compute-axis tokens needs --budget (total tokens per condition)")
    if tokens and flags.get("iterations") is None and file.get("iterations") is None:
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
    check_count("--budget", flags.get("budget") if flags.get("budget") is not None
                else file.get("budget"))  # fmt: skip
    check_count("--repeats", flags.get("repeats"))
    base = resolve_config({**flags, "nodes": None, **calls_only}, plugins)
    operators = list(dict.fromkeys(node.operator for node in base.nodes))
    nodes = flags.get("nodes") or protocol.get("nodes") or DEFAULT_EXPERIMENT_NODES
    listed = flags.get("conditions") or protocol.get("conditions") or ""
    names = [n.strip() for n in listed.split(",") if n.strip()]
    if not names and not flags.get("condition"):
        names = list(BUILTIN_CONDITIONS)
    conditions = parse_conditions(names, flags.get("condition") or (), operators, nodes,
                                  registry=plugins)  # fmt: skip
    if preset is not None:
        warn_overrides(preset, [
            f"--{key} {flags.get(key) or file.get(key)} (preset: {protocol.get(key)})"
            for key in ("nodes", "budget")
            if (flags.get(key) or file.get(key)) not in (None, protocol.get(key))
        ])  # fmt: skip
    budget = (
        flags.get("budget")
        or file.get("budget")
        or protocol.get("budget")
        or DEFAULT_CALLS_PER_NODE * max(c.nodes for c in conditions)
    )
    for condition in conditions:
        for operator in condition.operators:
            plugins.operator(operator)  # unknown operator names fail before any run starts
        if "allocation" in condition.settings:  # refused before any run, not at its turn
            _check_allocation(attrs.evolve(base, **condition.settings), plugins)
    # Bad domain options (e.g. a generality set overlapping the opponents) fail here too.
    domain = build_plugin(plugins.domains, base.domain, plugins.domain(base.domain).factory,
                          FactoryContext(registry=plugins, options=dict(base.domain_options),
                                         seed=base.seed))  # fmt: skip
    # Every condition runs with the same lifecycle, recorded in the plan as it is in each run.
    base = attrs.evolve(base, lifecycle=base.lifecycle or domain_lifecycle(domain))
    return ExperimentPlan(base=attrs.evolve(base, budget=budget), conditions=conditions,
                          budget=budget, repeats=flags.get("repeats") or 1,
                          preset=preset.name if preset else None)  # fmt: skip


def _check_allocation(config: Any, plugins: PluginRegistry) -> None:
    """Refuses a condition's dynamic allocator where its runs would refuse it."""
    from dei_framework.search.allocation import check_allocation, split_options

    options, _ = split_options(config.allocation_options)
    allocator = build_plugin(plugins.allocators, config.allocation,
                             plugins.allocator(config.allocation).factory,
                             FactoryContext(registry=plugins, options=options,
                                            seed=config.seed))  # fmt: skip
    if allocator.dynamic:
        check_allocation(config)
