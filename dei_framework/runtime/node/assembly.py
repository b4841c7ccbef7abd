"""Assembling one node of a run: its scheduler (restored from the checkpoint on ``--resume``),
its signing identity, its virtual-time clock, its endpoint and its driver.

:class:`NodeAssembly` is the per-node half of :func:`~dei_framework.runtime.assembly.assemble`
(its run-wide parts are built first, by the assembly that inherits these steps).
:class:`RunReactions` is what the parts call while the run goes.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from dei_framework.contract.context import FactoryContext
from dei_framework.contract.domain import Domain
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.kinds import ProgressKind
from dei_framework.contract.operators import Operator
from dei_framework.contract.records import Candidate
from dei_framework.evaluation.local import Evaluator
from dei_framework.net.envelope import NodeIdentity, parse_membership
from dei_framework.net.node import Node
from dei_framework.net.timeline import NodeClock, Timeline
from dei_framework.plugin.manager import PluginRegistry
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.builders import (
    build_plugin,
    factory_context,
    nominal_latency,
    own_options,
)
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.driver import DriverSink, SearchDriver
from dei_framework.runtime.files import run_layout
from dei_framework.runtime.files.checkpoints import (
    ReplayRecord,
    Resumption,
    finished_round_file,
    peer_reports,
    restoring,
)
from dei_framework.runtime.files.run_dir import RunDir
from dei_framework.runtime.files.run_files import read_round
from dei_framework.runtime.node.links import round_receiver
from dei_framework.runtime.replay import RecordedCall, Recording
from dei_framework.search.allocation import AllocationCoordinator
from dei_framework.search.archives import ArchiveBase
from dei_framework.search.events import EvaluatedEvent, RoundEvent
from dei_framework.search.scheduler import Scheduler
from dei_framework.search.sharing import SharingPolicy

if TYPE_CHECKING:
    from dei_framework.contract.descriptors import DescriptorSpace
    from dei_framework.runtime.builders import DomainParts

#: Scheduler lag per slot of operator concurrency: a slot is planned once every slot more than
#: ``6 x max_in_flight`` before it was admitted. While one reply is outstanding the other slots
#: finish about ``max_in_flight x its latency / mean latency`` calls, so a reply up to ~6x the
#: mean latency holds nothing back (5.3x in benchmarks/llm_pipeline.py); the price is parents
#: drawn from an archive up to that many slots old (docs/architecture.md#determinism).
LAG_PER_SLOT = 6


class RunReactions(Protocol):
    """What a run's parts call while it goes: its loop's side of the wiring."""

    def record(self, events: list[dict], calls: list[dict]) -> None:
        """Logs events and operator calls (as JSON)."""

    def evaluated(self, events: Sequence[EvaluatedEvent]) -> None:
        """Tells the plugins of candidates evaluated (logged already)."""

    def round_ended(self, name: str) -> Callable[[RoundEvent, ArchiveBase], None]:
        """What node ``name``'s driver calls when one of its rounds ends."""

    def checkpoint(self) -> None:
        """Writes the run's checkpoint."""

    def progress(self, kind: ProgressKind, data: dict[str, Any]) -> None:
        """Live display (``evaluated``, ``round``, ...)."""


class NodeAssembly:
    """The steps that build one node, on the run-wide parts an assembly holds already."""

    config: RunConfig
    registry: PluginRegistry
    run_dir: RunDir
    reactions: RunReactions
    replay_from: RunDir | None
    reask_mismatched: bool
    base: DomainParts
    domain: Domain
    spaces: dict[str, DescriptorSpace]
    policies: dict[str, SharingPolicy]
    ledger: BudgetLedger
    allocation: AllocationCoordinator | None
    evaluator: Evaluator
    resumed: Resumption | None
    record: ReplayRecord | None
    replies: dict[str, dict[str, RecordedCall]]
    operators: dict[str, Operator]
    timeline: Timeline | None
    drivers: dict[str, SearchDriver]
    round_opponents: dict[str, dict[int, int]]

    def context(self, options: Mapping[str, Any]) -> FactoryContext:
        """What a plugin factory is given: the run's registry and configuration, ``options``."""
        return factory_context(self.registry, self.config, options)

    def node(self, node_config: NodeConfig, transport: Any) -> Node:
        """Builds node ``node_config``'s scheduler (restored on resume), endpoint and driver."""
        name, config = node_config.name, self.config
        scheduler = self.scheduler(node_config)
        states = self.resumed.states if self.resumed is not None else {}
        if self.allocation is not None and name not in states:
            scheduler.set_round_quota(0, self.allocation.decisions[0][name])
        if name in states:
            self.restore_scheduler(name, scheduler, states[name])
        node = Node(
            name=name,
            transport=transport,
            policy=self.policies[name],
            domain_name=self.domain.name,
            registry=self.registry,
            recorded=None if self.record is None else self.record.received.get(name, {}),
            identity=self.identity(name),
            members=config.members,
            timeline=self.timeline,
            clock=self.clock(node_config, scheduler),
        )
        sharing = self.resumed.sharing_states if self.resumed is not None else {}
        if name in sharing:
            with restoring(self.run_dir, f"node {name}'s sharing counters"):
                node.restore(sharing[name])
        self.drivers[name] = self.driver(name, scheduler, node)
        if name in states:
            with restoring(self.run_dir, f"node {name}'s state"):
                self.drivers[name].generality_excluded.update(
                    states[name].get("generality_excluded", ())
                )
        return node

    def scheduler(self, node: NodeConfig) -> Scheduler:
        config, registry, name = self.config, self.registry, node.name
        selector_name = node.selector or config.selector
        archive_name = node.archive or config.archive
        lags = self.record.lags if self.record is not None else {}
        return Scheduler(
            name=name,
            space=self.spaces[name],
            initial_opponents=self.domain.initial_opponents(),
            calls=self.ledger.quotas[name],
            rounds=config.rounds,
            seed=config.seed,
            new_fraction=config.new_fraction,
            lag=lags.get(
                name,
                config.lag
                if config.lag is not None
                else LAG_PER_SLOT * self.operators[name].max_in_flight,
            ),
            archive=build_plugin(
                registry.archives,
                archive_name,
                registry.archive(archive_name).factory,
                self.context(own_options(node.archive_options, config.archive_options)),
            ),
            selector=build_plugin(
                registry.selectors,
                selector_name,
                registry.selector(selector_name).factory,
                self.context(own_options(node.selector_options, config.selector_options)),
            ),
            sharing=self.policies[name],
            qd_offset=self.domain.fitness_floor,
            own_window=config.max_champions,
            peer_window=config.max_peer_champions,
            lifecycle=config.lifecycle,
            seeds=self.domain.seed_programs(),
            prompt_needs=getattr(self.domain, "prompt_needs", None),
        )

    def restore_scheduler(self, name: str, scheduler: Scheduler, state: dict) -> None:
        """Puts node ``name``'s scheduler and usage back as the checkpoint holds them, and its
        finished rounds' archives into the merge (and the allocator)."""
        with restoring(self.run_dir, f"node {name}'s state"):
            scheduler.restore(state)
            self.ledger.usage[name].restore(state["usage"])
        ended = {}
        for entry in scheduler.history:
            with restoring(self.run_dir, f"node {name}'s round history"):
                note_opponents(self.round_opponents, name, entry)
                round_index, calls = entry.round, entry.calls
            path = finished_round_file(self.run_dir, name, round_index)
            archive = read_round(path)["archive"]
            with restoring(self.run_dir, f"node {name}'s round {round_index}"):
                self.base.merge.add_round(name, round_index, archive)
            ended[round_index] = (archive, calls)
        if self.allocation is not None:
            reports = (
                peer_reports(self.run_dir, self.resumed)
                if self.allocation.remote and self.resumed is not None
                else []
            )
            self.allocation.restore(name, scheduler.round_quotas, ended, reports)
            self.ledger.quotas[name] = sum(scheduler.round_quotas.values())

    def identity(self, name: str) -> NodeIdentity:
        """Node ``name``'s signing key (made on its first run), checked against the members."""
        key = run_layout.identity_path(self.run_dir.path, name)
        key.parent.mkdir(parents=True, exist_ok=True)
        identity = NodeIdentity.load_or_generate(key)
        membership = parse_membership(self.config.members or None)
        if membership is not None and identity.public_key_hex not in membership:
            raise ConfigError(
                f"node {name}'s key {identity.public_key_hex} ({key}) is not in the run's members"
            )
        bound = None if membership is None else membership.names.get(identity.public_key_hex)
        if bound is not None and bound != name:
            # Its peers would drop every champion it sends as an impersonation.
            raise ConfigError(
                f"node {name}'s key {identity.public_key_hex} ({key}) is "
                f"bound to the name {bound!r} in the run's members"
            )
        return identity

    def clock(self, node: NodeConfig, scheduler: Scheduler) -> NodeClock | None:
        if self.timeline is None:
            return None
        if self.allocation is not None:
            # Shares move at round boundaries, where every node waits for all: a round clock
            # (each round one virtual second) waits for the same thing.
            return NodeClock(latency=1.0, slots=1, quota=_one_per_round)
        operator = self.operators[node.name]
        return NodeClock(
            latency=nominal_latency(node, operator),
            slots=operator.max_in_flight,
            quota=scheduler.round_quota,
        )

    def driver(self, name: str, scheduler: Scheduler, node: Node) -> SearchDriver:
        if self.replay_from is not None:
            on_mismatch = "ask" if self.reask_mismatched else "stop"
            source = f"the record in {self.replay_from.path}"
        else:
            on_mismatch, source = "ask", "the calls made before the interruption"
        return SearchDriver(
            scheduler=scheduler,
            domain=self.domain,
            operator=self.operators[name],
            evaluator=self.evaluator,
            ledger=self.ledger,
            sink=_NodeSink(self.reactions, name, node, round_receiver(node, self.allocation)),
            replies=Recording(self.replies.get(name, {}), on_mismatch=on_mismatch, source=source),
            axes=tuple(dict.fromkeys((*self.spaces[name].names, *self.base.space.names))),
            array_path=self.config.array_path,
        )


class _NodeSink(DriverSink):
    """A node's driver sink in a run: its events go to the run's reactions, its champions
    to and from its network node."""

    def __init__(
        self,
        reactions: RunReactions,
        name: str,
        node: Node,
        receive: Callable[[int], Sequence[Candidate] | Awaitable[Sequence[Candidate]]],
    ) -> None:
        self.record = reactions.record  # type: ignore[method-assign]
        self.evaluated = reactions.evaluated  # type: ignore[method-assign]
        self.checkpoint = reactions.checkpoint  # type: ignore[method-assign]
        self.round_ended = reactions.round_ended(name)  # type: ignore[method-assign]
        self.receive = receive  # type: ignore[method-assign]
        self.publish = node.publish  # type: ignore[method-assign]
        self._progress = reactions.progress

    def candidate_logged(self, line: dict[str, Any]) -> None:
        self._progress(ProgressKind.EVALUATED, line)


def note_opponents(
    round_opponents: dict[str, dict[int, int]], name: str, entry: RoundEvent
) -> None:
    """Notes how many opponents node ``name`` fought in the round ``entry`` describes."""
    round_opponents[name][entry.round] = len(entry.opponents)


def _one_per_round(round_index: int) -> int:
    """The round clock's quota: every round lasts one call of one virtual second."""
    return 1
