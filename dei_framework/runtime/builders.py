"""Building a run's parts from its configuration and the loaded plugins.

The parts :mod:`~dei_framework.runtime.assembly` puts together: the domain and the descriptor
grid, the evaluator, plugin objects made by their factories (a failing factory becomes one
error naming the plugin), the domain's lifecycle, the champion delivery, each node's options
and nominal latency, the transport's options, and the checks that the operators can honour
the run's caps; and the ``DEI_CHAOS_STALL`` test hook, which perturbs timing to check that what
should not depend on it does not.

Setting the environment variable ``DEI_CHAOS_STALL`` to a number of seconds makes every operator
call and every evaluation of a ``dei-run`` first sleep a random time between 0 and that many
seconds, drawn from the operating system's randomness (so two runs get different timings).
Seeded runs with virtual-time delivery must give identical results with or without it
(``tests/system/test_determinism.py``). It is meant for tests and experiments on reproducibility
only: it slows runs down and changes nothing else.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import functools
import os
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import attrs

from dei_framework.contract.backend import EVALUATORS, EvaluatorOptions
from dei_framework.contract.context import FactoryContext
from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.domain import LIFECYCLES, Domain
from dei_framework.contract.errors import ConfigError, DEIError, PluginError
from dei_framework.contract.operators import Operator
from dei_framework.contract.transport import TransportSpec
from dei_framework.evaluation.local import Evaluator
from dei_framework.plugin.manager import PluginRegistry, Registered
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.resolve import sandbox_policy
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.merge import RunMerge
from dei_framework.runtime.replay import RecordedOperator
from dei_framework.search.allocation import BudgetAllocator, check_allocation, split_options


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
        raise PluginError(
            f"domain {domain.name!r} declares lifecycle {lifecycle!r}; "
            f"expected one of {', '.join(LIFECYCLES)}"
        )
    return lifecycle


def own_options(
    node_options: Mapping[str, Any] | None, run_options: Mapping[str, Any]
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
        raise ConfigError(
            f"{node.name}: nominal_latency must be a positive number of seconds, got {value!r}"
        )
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


#: The context a factory takes (a :class:`FactoryContext` or a subclass) and what it builds.
ContextT = TypeVar("ContextT", bound=FactoryContext)
ProductT = TypeVar("ProductT")
SpecT = TypeVar("SpecT")


def build_plugin(
    table: Mapping[str, Registered[SpecT]],
    name: str,
    factory: Callable[[ContextT], ProductT],
    ctx: ContextT,
) -> ProductT:
    """Calls a plugin's factory as every factory is called, ``factory(ctx)``; a bug in it
    becomes one error naming the plugin (``table[name]``'s)."""
    try:
        return factory(ctx)
    except DEIError:
        raise
    except Exception as exc:
        plugin = table[name].plugin if name in table else "?"
        raise PluginError(
            f"plugin {plugin!r} failed to create {name!r}: {type(exc).__name__}: {exc}"
        ) from exc


@attrs.frozen(kw_only=True)
class DomainParts:
    """A run's domain and what follows from it alone.

    Attributes:
        config: The configuration, its lifecycle resolved (the domain's default when unset).
        domain: The domain.
        space: The run's descriptor grid.
        merge: The nodes' round archives, common ground and the merge.
    """

    config: RunConfig
    domain: Domain
    space: DescriptorSpace
    merge: RunMerge


def factory_context(
    registry: PluginRegistry, config: RunConfig, options: Mapping[str, Any]
) -> FactoryContext:
    """What a plugin factory gets: its options (a copy), the run's plugins and seed."""
    return FactoryContext(registry=registry, options=dict(options), seed=config.seed)


def build_allocator(config: RunConfig, registry: PluginRegistry) -> tuple[BudgetAllocator, float]:
    """The run's budget allocator (``--allocation``) and its coordinator's ``peer_wait``.

    The one place an allocator is made: the run's assembly, the launcher (before any node or
    AXL process starts) and ``dei experiment`` (before any run) all refuse a dynamic allocator
    where it cannot hold its promises here.

    Raises:
        ConfigError: The allocation options are wrong, or a dynamic allocator is asked where it
            cannot work (:func:`~dei_framework.search.allocation.check_allocation`).
    """
    options, wait = split_options(config.allocation_options)
    allocator = build_plugin(
        registry.allocators,
        config.allocation,
        registry.allocator(config.allocation).factory,
        factory_context(registry, config, options),
    )
    if allocator.dynamic:
        check_allocation(config)
    return allocator, wait


def build_domain_parts(
    config: RunConfig, registry: PluginRegistry, node_names: list[str]
) -> DomainParts:
    """The domain, its grid and the merge of nodes ``node_names``; first, because the domain
    resolves the configuration's lifecycle (recorded in ``config.json`` as used)."""
    domain = build_plugin(
        registry.domains,
        config.domain,
        registry.domain(config.domain).factory,
        factory_context(registry, config, config.domain_options),
    )
    space = build_space(domain, config.axes, registry)
    if not config.lifecycle:
        config = attrs.evolve(config, lifecycle=domain_lifecycle(domain))
    return DomainParts(
        config=config, domain=domain, space=space, merge=RunMerge(domain, space, node_names)
    )


def new_evaluator(config: RunConfig, domain: Domain, registry: PluginRegistry) -> Evaluator:
    """An evaluator for the run's domain on the run's backend (``--evaluator``), accepting every
    axis on offer."""
    offered = {spec.name for spec in domain.descriptor_axes()} | set(registry.axes)
    ctx = EvaluatorOptions(
        workers=config.eval_workers,
        address=config.evaluator_address,
        options=dict(config.evaluator_options),
        registry=registry,
        seed=config.seed,
        domain=domain,
    )
    backend = registry.lookup(EVALUATORS, config.evaluator).factory(ctx)
    return Evaluator(
        domain, descriptor_keys=offered, backend=backend, sandbox=sandbox_policy(config, domain)
    )


def delivery(config: RunConfig, spec: TransportSpec) -> str:
    """``"virtual"`` or ``"wallclock"``: the run's champion delivery with transport ``spec``.

    Raises:
        ConfigError: Virtual delivery asked of a transport between processes, or transport
            options (a simulated network) given with virtual delivery, which bypasses it.
    """
    if config.delivery == "auto":
        mode = "virtual" if spec.in_process else "wallclock"
    elif config.delivery == "virtual" and not spec.in_process:
        raise ConfigError(
            f"--delivery virtual needs an in-process transport; {config.transport!r} "
            "connects processes (its runs record what each node received: use --replay "
            "to reproduce one)"
        )
    else:
        mode = config.delivery
    if mode == "virtual" and config.transport_options:
        raise ConfigError(
            f"transport options ({', '.join(sorted(config.transport_options))}) shape the "
            f"{config.transport!r} network in wall-clock time, which virtual-time delivery "
            "does not use; add --delivery wallclock to use them"
        )
    return mode


#: The environment variable holding the longest stall in seconds.
STALL_ENV = "DEI_CHAOS_STALL"


def stall_seconds(environ: Mapping[str, str] = os.environ) -> float:
    """The configured longest stall (0 when the hook is off)."""
    value = environ.get(STALL_ENV, "").strip()
    if not value:
        return 0.0
    try:
        seconds = float(value)
    except ValueError:
        raise ConfigError(f"{STALL_ENV} must be a number of seconds, got {value!r}") from None
    if not 0.0 <= seconds <= 60.0:
        raise ConfigError(f"{STALL_ENV} must be within [0, 60] seconds, got {value!r}")
    return seconds


def _stalled(function: Callable[..., Awaitable[Any]], longest: float) -> Callable[..., Any]:
    chance = random.SystemRandom()

    @functools.wraps(function)
    async def stalled(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(chance.uniform(0.0, longest))
        return await function(*args, **kwargs)

    return stalled


def install_chaos(evaluator: Evaluator, operators: Mapping[str, Operator]) -> None:
    """Makes the evaluator's evaluations and the operators' calls stall at random, when
    ``DEI_CHAOS_STALL`` asks for it."""
    longest = stall_seconds()
    if longest <= 0:
        return
    # Every way in is stalled: the driver sends a loop turn's evaluations through
    # ``evaluate_many``, a batching operator's calls through ``propose_batch``, and an
    # array-path step's genomes through ``evaluate_genomes``.
    evaluator.evaluate = _stalled(evaluator.evaluate, longest)  # type: ignore[method-assign]
    evaluator.evaluate_many = _stalled(evaluator.evaluate_many, longest)  # type: ignore[method-assign]
    evaluator.evaluate_genomes = _stalled(  # type: ignore[method-assign]
        evaluator.evaluate_genomes, longest
    )
    for operator in operators.values():
        operator.propose = _stalled(operator.propose, longest)  # type: ignore[method-assign]
        operator.propose_batch = _stalled(operator.propose_batch, longest)  # type: ignore[method-assign]
