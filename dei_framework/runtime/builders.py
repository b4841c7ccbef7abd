"""Building a run's parts from its configuration and the loaded plugins.

The descriptor grid, plugin objects made by their factories (a failing factory becomes one
error naming the plugin), the domain's lifecycle, each node's options and nominal latency, the
transport's options, and the checks that the operators can honour the run's caps.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.domain import LIFECYCLES, Domain
from dei_framework.contract.errors import ConfigError, DEIError, PluginError
from dei_framework.contract.operators import Operator
from dei_framework.plugin.manager import PluginRegistry
from dei_framework.runtime.config import NodeConfig, RunConfig
from dei_framework.runtime.replay import RecordedOperator


def build_space(domain: Domain, axes: tuple[str, ...], registry: PluginRegistry) -> DescriptorSpace:
    """The grid: the selected axes (or the domain's defaults), plugin binnings overriding."""
    offered = {spec.name: spec.axis for spec in domain.descriptor_axes()}
    for name, entry in registry.axes.items():
        if entry.spec.domain in ("", domain.name):
            offered[name] = entry.spec.axis
    names = axes or domain.default_axes
    unknown = [name for name in names if name not in offered]
    if unknown:
        raise ConfigError(
            f"domain {domain.name!r} has no descriptor axis {', '.join(unknown)}; "
            f"available: {', '.join(sorted(offered))}"
        )
    return DescriptorSpace([offered[name] for name in names])



def domain_lifecycle(domain: Domain) -> str:
    """The domain's default archive lifecycle, checked.

    Raises:
        PluginError: The domain declares a lifecycle DEI does not know.
    """
    lifecycle = domain.default_lifecycle()
    if lifecycle not in LIFECYCLES:
        raise PluginError(f"domain {domain.name!r} declares lifecycle {lifecycle!r}; "
                          f"expected one of {', '.join(LIFECYCLES)}")  # fmt: skip
    return lifecycle


def own_options(node_options: Mapping[str, Any] | None, run_options: Mapping[str, Any]
         ) -> Mapping[str, Any]:
    """A node's own options table if its ``[[node]]`` table gave one, else the run's."""
    return run_options if node_options is None else node_options


def nominal_latency(node: NodeConfig, operator: Operator) -> float:
    """The node's nominal seconds per call: its ``nominal_latency`` option, or the operator's."""
    value = node.options.get("nominal_latency", operator.nominal_latency)
    try:
        latency = float(value)
    except (TypeError, ValueError):
        latency = -1.0
    if not 0.0 < latency < float("inf") or isinstance(value, bool):
        raise ConfigError(f"{node.name}: nominal_latency must be a positive number of seconds, "
                          f"got {value!r}")  # fmt: skip
    return latency


def transport_options(config: RunConfig) -> dict[str, Any]:
    """The transport's options; the run's membership is passed as ``members`` unless set."""
    options = dict(config.transport_options)
    if config.members:
        options.setdefault("members", list(config.members))
    return options


def check_metering(config: RunConfig, operators: Mapping[str, Operator]) -> None:
    """Refuses caps the operators cannot honour, before any call is made.

    Raises:
        ConfigError: A money cap (``--max-cost-usd``) with an operator that cannot price its
            calls, or a ``tokens``/``cost`` compute axis with one that does not report usage.
    """
    for name, operator in operators.items():
        if isinstance(operator, RecordedOperator):
            continue
        if config.max_cost_usd is not None and not operator.priced:
            raise ConfigError(
                f"--max-cost-usd: {name}'s model {operator.label} has no known price, so its "
                f"calls cannot be capped; give one with --price {operator.label}=IN,OUT "
                "(USD per million input and output tokens)"
            )
        if config.compute_axis != "calls" and not operator.metered:
            raise ConfigError(
                f"--compute-axis {config.compute_axis}: {name}'s operator {operator.label} does "
                "not report tokens per attempt; use --compute-axis calls"
            )


def build_plugin(table: dict, name: str, factory: Callable, *args: Any) -> Any:
    """Calls a plugin's factory; a bug in it becomes one error naming the plugin."""
    try:
        return factory(*args)
    except DEIError:
        raise
    except Exception as exc:
        plugin = table[name].plugin if name in table else "?"
        raise PluginError(
            f"plugin {plugin!r} failed to create {name!r}: {type(exc).__name__}: {exc}"
        ) from exc
