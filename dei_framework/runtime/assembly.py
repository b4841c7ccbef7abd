"""Assembling a run: every part it needs, built once, front to back, before its loop starts.

:func:`assemble` turns a resolved configuration and the loaded plugins into :class:`RunParts`:
the domain and its grid, the budget ledger and allocator, the evaluator, each node's operator,
scheduler, endpoint and driver, restored from a checkpoint on ``--resume`` or fed from a record
on ``--replay``. What the parts report while the run goes (events, round ends, checkpoints,
progress) goes to the :class:`RunReactions` the caller gives: the ensemble's loop.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

import attrs

from dei_framework.analysis.common_ground import build_reference
from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.domain import Domain
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.operators import Operator, OperatorSettings
from dei_framework.evaluation.local import Evaluator
from dei_framework.net.node import Node
from dei_framework.net.timeline import Timeline
from dei_framework.plugin.manager import PluginRegistry
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.builders import (
    build_allocator,
    build_domain_parts,
    build_plugin,
    build_space,
    check_metering,
    delivery,
    install_chaos,
    new_evaluator,
    transport_options,
)
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.driver import SearchDriver
from dei_framework.runtime.files.checkpoints import (
    ReplayRecord,
    Resumption,
    read_replay_record,
    restoring,
    resume_from_checkpoint,
)
from dei_framework.runtime.files.run_dir import RunDir
from dei_framework.runtime.files.run_files import damaged
from dei_framework.runtime.merge import RunMerge
from dei_framework.runtime.node.assembly import NodeAssembly, RunReactions
from dei_framework.runtime.node.links import MoneyPool, link_node_process
from dei_framework.runtime.replay import RecordedCall, RecordedOperator
from dei_framework.runtime.summary import EventTally
from dei_framework.search.allocation import AllocationCoordinator
from dei_framework.search.archives import GridArchive
from dei_framework.search.sharing import SharingPolicy


@attrs.define(kw_only=True)
class RunParts:
    """Every part of a run, built by :func:`assemble`.

    Attributes:
        config: The configuration, its lifecycle resolved.
        domain: The domain.
        space: The run's descriptor grid.
        merge: The nodes' round archives, common ground and the merge.
        ledger: The budget ledger of the nodes this process runs.
        allocation: The budget allocator at work (``None``: a static split).
        evaluator: The evaluator (not started).
        operators: Per node, its operator (a recorded one in a replay).
        timeline: Virtual-time champion delivery (``None``: wall-clock, or no sharing).
        nodes: The nodes this process runs.
        drivers: Per node, its driver.
        tally: The events logged so far, counted for the summary.
        money: The ensemble's money cap, in a node process (``None`` otherwise).
        reports_out: Round reports being sent to the peers (nodes in processes of their own).
        round_opponents: Per node and round, the opponents it fought (the fitness scale of its
            raw figures).
    """

    config: RunConfig
    domain: Domain
    space: DescriptorSpace
    merge: RunMerge
    ledger: BudgetLedger
    allocation: AllocationCoordinator | None
    evaluator: Evaluator
    operators: dict[str, Operator]
    timeline: Timeline | None
    nodes: list[Node]
    drivers: dict[str, SearchDriver]
    tally: EventTally
    money: MoneyPool | None
    reports_out: set[asyncio.Task]
    round_opponents: dict[str, dict[int, int]]


def local_nodes(config: RunConfig, local: str | None) -> list[NodeConfig]:
    """The nodes a process runs: ``local`` alone, or every node (``None``)."""
    return [node for node in config.nodes if local in (None, node.name)]


def assemble(
    config: RunConfig,
    registry: PluginRegistry,
    run_dir: RunDir,
    reactions: RunReactions,
    *,
    local: str | None = None,
    resume: bool = False,
    replay_from: RunDir | None = None,
    reask_mismatched: bool = False,
) -> RunParts:
    """Builds every part of a run, once, front to back (see the module's docstring).

    Args:
        config: The resolved run configuration.
        registry: The loaded plugins.
        run_dir: Where the run is recorded.
        reactions: What the parts call while the run goes.
        local: Build only this node (one process per node); ``None`` builds them all.
        resume: Restore the run recorded in ``run_dir`` from its last checkpoint (and cut its
            logs back to it, once every part is restored).
        replay_from: Serve the recorded replies and receptions of the run recorded there.
        reask_mismatched: With ``replay_from``: ask the real operator for calls that do not
            match the record instead of stopping at the first.

    Raises:
        DEIError: A configuration problem, or a checkpoint or record that cannot be used.
    """
    return _Assembly(
        config,
        registry,
        run_dir,
        reactions,
        local=local,
        resume=resume,
        replay_from=replay_from,
        reask_mismatched=reask_mismatched,
    ).build()


class _Assembly(NodeAssembly):
    """One call of :func:`assemble`: the parts built so far, and a method per step (one node's
    steps are :class:`~dei_framework.runtime.node.assembly.NodeAssembly`'s)."""

    def __init__(
        self,
        config: RunConfig,
        registry: PluginRegistry,
        run_dir: RunDir,
        reactions: RunReactions,
        *,
        local: str | None,
        resume: bool,
        replay_from: RunDir | None,
        reask_mismatched: bool,
    ) -> None:
        self.registry, self.run_dir, self.reactions = registry, run_dir, reactions
        self.local, self.resume, self.replay_from = local, resume, replay_from
        self.reask_mismatched = reask_mismatched
        self.local_nodes = local_nodes(config, local)
        self.base = build_domain_parts(config, registry, [node.name for node in self.local_nodes])
        self.config = self.base.config
        self.domain = self.base.domain
        self.drivers: dict[str, SearchDriver] = {}
        self.replies: dict[str, dict[str, RecordedCall]] = defaultdict(dict)
        self.round_opponents: dict[str, dict[int, int]] = defaultdict(dict)

    def build(self) -> RunParts:
        config, registry = self.config, self.registry
        if config.common_ground and self.local is None:
            # A node process leaves common ground to the merge, which measures every node's
            # elites and champions at once.
            self.base.merge.reference = build_reference(self.domain, scoring=config.common_seeds)
        self.spaces = {
            node.name: build_space(self.domain, node.axes or self.base.space.names, registry)
            for node in self.local_nodes
        }
        self.policies = {node.name: self.sharing_policy(node) for node in self.local_nodes}
        self.ledger = self.build_ledger()
        self.allocation = self.build_allocation()
        self.evaluator = new_evaluator(config, self.domain, registry)
        self.resumed = self.read_checkpoint() if self.resume else None
        self.record: ReplayRecord | None = None
        if self.replay_from is not None:
            self.record = read_replay_record(self.replay_from, self.replies)
        self.operators = {node.name: self.operator(node) for node in self.local_nodes}
        check_metering(config, self.operators)
        install_chaos(self.evaluator, self.operators)
        transports = self.build_delivery()
        nodes = [
            self.node(node_config, transport)
            for node_config, transport in zip(self.local_nodes, transports, strict=True)
        ]
        reports_out: set[asyncio.Task] = set()
        money = link_node_process(
            config,
            local=self.local,
            nodes=nodes,
            allocation=self.allocation,
            ledger=self.ledger,
            record=lambda events: self.reactions.record(events, []),
            reports_out=reports_out,
        )
        if self.resumed is not None:  # rebuilt from the checkpoint: now the logs go back to it
            self.resumed.cut_logs()
        space = self.base.space
        # A node whose archive is a grid over the run's space logs cells of that space.
        tally = EventTally(
            space,
            placed=[
                name
                for name, driver in self.drivers.items()
                if type(driver.scheduler.archive) is GridArchive
                and driver.scheduler.archive.space == space
            ],
        )
        return RunParts(
            config=config,
            domain=self.domain,
            space=space,
            merge=self.base.merge,
            ledger=self.ledger,
            allocation=self.allocation,
            evaluator=self.evaluator,
            operators=self.operators,
            timeline=self.timeline,
            nodes=nodes,
            drivers=self.drivers,
            tally=tally,
            money=money,
            reports_out=reports_out,
            round_opponents=self.round_opponents,
        )

    # --- run-wide parts -------------------------------------------------------------------------

    def sharing_policy(self, node: NodeConfig) -> SharingPolicy:
        name = node.sharing or self.config.sharing
        return build_plugin(
            self.registry.sharing,
            name,
            self.registry.sharing_policy(name).factory,
            self.context(self.config.sharing_options),
        )

    def build_ledger(self) -> BudgetLedger:
        config, nodes = self.config, self.local_nodes
        quotas, caps = config.node_quotas(), config.node_caps()
        return BudgetLedger(
            quotas={node.name: quotas[node.name] for node in nodes},
            models={node.name: node.operator for node in nodes},
            caps={node.name: caps[node.name] for node in nodes},
            attempts_per_call=config.max_attempts_per_call,
            axis=config.compute_axis,
            # One node of a run (one process per node) is limited by its own share.
            limit=config.compute_limit() if self.local is None else None,
        )

    def build_allocation(self) -> AllocationCoordinator | None:
        """The run's budget allocator at work, or ``None`` for a static one (the equal split
        the ledger holds already: nothing moves, and the run is exactly as without one)."""
        config, registry, ledger, drivers = self.config, self.registry, self.ledger, self.drivers
        allocator, wait = build_allocator(config, registry)
        if not allocator.dynamic:
            return None

        def apply(node: str, round_index: int, quota: int) -> None:
            scheduler = drivers[node].scheduler
            scheduler.set_round_quota(round_index, quota)
            # The node's hard cap: the calls of its rounds so far, nothing more.
            ledger.quotas[node] = sum(scheduler.round_quotas.values())

        coordinator = AllocationCoordinator(
            allocator,
            nodes=config.node_names,
            rounds=config.rounds,
            limit=int(config.compute_limit()),
            spent=lambda node: ledger.usage[node].calls,
            space=self.base.space,
            apply=apply,
            record=lambda events: self.reactions.record(events, []),
            local=[node.name for node in self.local_nodes],
            wait_seconds=wait,
        )
        for node, quota in coordinator.first_round().items():
            if node in ledger.quotas:
                ledger.quotas[node] = quota  # a resumed node's are put back with its scheduler
        return coordinator

    def read_checkpoint(self) -> Resumption:
        resumed = resume_from_checkpoint(self.run_dir, self.ledger, self.replies)
        names = sorted(node.name for node in self.local_nodes)
        if resumed.checkpoint is not None and sorted(resumed.states) != names:
            raise damaged(
                self.run_dir.checkpoint_path,
                f"it holds nodes {', '.join(sorted(resumed.states)) or 'none'} but "
                f"the run has {', '.join(names)}; refusing to resume",
            )
        return resumed

    def operator(self, node: NodeConfig) -> Operator:
        config, registry = self.config, self.registry
        spec = registry.operator(node.operator)
        if spec.domains and config.domain not in spec.domains:
            raise ConfigError(
                f"operator {node.operator!r} works with domains {', '.join(spec.domains)}, "
                f"not {config.domain!r}"
            )
        # A replay serves the recorded replies; an offline operator whose calls the record
        # does not hold (the array path logs none) runs again: it needs no network, and its
        # calls are a function of their seeds.
        reruns = spec.offline and not self.replies.get(node.name)
        if self.replay_from is not None and not self.reask_mismatched and not reruns:
            return RecordedOperator(label=node.operator)
        return build_plugin(
            registry.operators,
            spec.name,
            spec.factory,
            OperatorSettings(
                spec=node.operator,
                node=node.name,
                options=node.options,
                registry=registry,
                seed=config.seed,
                domain=self.domain,
            ),
        )

    def build_delivery(self) -> list:
        """Sets :attr:`timeline` (virtual-time delivery) or builds the transport; returns each
        node's endpoint (``None`` each without a transport)."""
        config, registry, nodes = self.config, self.registry, self.local_nodes
        self.timeline: Timeline | None = None
        shares = self.replay_from is None and any(
            policy.shares for policy in self.policies.values()
        )
        if not shares:
            return [None] * len(nodes)
        spec = registry.transport(config.transport)
        if delivery(config, spec) == "virtual":
            self.timeline = Timeline([node.name for node in nodes])
            with restoring(self.run_dir, "the timeline"):
                self.timeline.restore(self.resumed.postings if self.resumed else [])
            return [None] * len(nodes)
        transports = list(
            build_plugin(
                registry.transports,
                config.transport,
                spec.factory,
                attrs.evolve(
                    self.context(transport_options(config)),
                    node_names=[node.name for node in nodes],
                ),
            )
        )
        if len(transports) != len(nodes):
            raise ConfigError(
                f"transport {config.transport!r} gave {len(transports)} endpoints "
                f"for {len(nodes)} nodes"
            )
        return transports
