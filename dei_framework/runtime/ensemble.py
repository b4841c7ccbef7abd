"""Running an ensemble: N nodes in this process, fully asynchronous, with checkpoints.

:class:`Ensemble` orchestrates: it builds the nodes (with :mod:`dei_framework.runtime.builders`),
runs them in one event loop and hands the other jobs to their modules: checkpoints to
:mod:`dei_framework.runtime.checkpoints`, round archives, common ground and the merge to
:mod:`dei_framework.runtime.merge`, ``summary.json`` to :mod:`dei_framework.runtime.summary`.

This is what ``dei-run`` does, and what library users call to run a configured ensemble:

    >>> from dei_framework import RunConfig, NodeConfig, run
    >>> summary = run(RunConfig(domain="coreware", nodes=[NodeConfig(name="node-0",
    ...     operator="gp")], budget=40, rounds=2), "runs/demo")  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from dei_framework.analysis.common_ground import build_reference
from dei_framework.contract.backend import EvaluatorLost, EvaluatorOptions
from dei_framework.contract.context import FactoryContext
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.operators import OperatorSettings
from dei_framework.contract.transport import TransportSpec
from dei_framework.evaluation.local import Evaluator
from dei_framework.evaluation.sandbox.policy import choose_policy
from dei_framework.net.envelope import NodeIdentity, parse_membership
from dei_framework.net.node import Node
from dei_framework.net.timeline import NodeClock, Timeline
from dei_framework.plugin.manager import PluginRegistry, load_plugins
from dei_framework.runtime import chaos
from dei_framework.runtime.budget import BudgetLedger
from dei_framework.runtime.builders import (
    build_plugin,
    build_space,
    check_metering,
    domain_lifecycle,
    nominal_latency,
    own_options,
    transport_options,
)
from dei_framework.runtime.checkpoints import (
    UNLOGGED_CALLS,
    check_logs,
    resume_from_checkpoint,
    write_checkpoint,
)
from dei_framework.runtime.config import NodeConfig, RunConfig
from dei_framework.runtime.driver import RecordedCall, SearchDriver
from dei_framework.runtime.merge import RunMerge, join_processes
from dei_framework.runtime.money_pool import HANDOVER, MoneyPool
from dei_framework.runtime.replay import RecordedOperator, Recording
from dei_framework.runtime.run_dir import RunDir, read_jsonl, write_json_atomic
from dei_framework.runtime.run_files import damaged, read_round
from dei_framework.runtime.summary import EventTally, node_summary, run_summary
from dei_framework.search.allocation import (
    AllocationCoordinator,
    RoundReport,
    check_allocation,
    split_options,
)
from dei_framework.search.archives import ArchiveBase, GridArchive
from dei_framework.search.scheduler import Scheduler

Progress = Callable[[str, dict[str, Any]], None]

#: Seconds a transport or operator may take to close before the run goes on without it.
CLOSE_SECONDS = 5.0

#: Scheduler lag per slot of operator concurrency: a slot is planned once every slot more than
#: ``6 x max_in_flight`` before it was admitted. While one reply is outstanding the other slots
#: finish about ``max_in_flight x its latency / mean latency`` calls, so a reply up to ~6x the
#: mean latency holds nothing back (5.3x in benchmarks/llm_pipeline.py); the price is parents
#: drawn from an archive up to that many slots old (docs/architecture.md#determinism).
LAG_PER_SLOT = 6


class Ensemble:
    """N nodes of one run in this process.

    Args:
        config: The resolved run configuration.
        run_dir: Where the run is recorded.
        registry: Loaded plugins (default: discover them).
        resume: Continue the run recorded in ``run_dir`` from its last checkpoint.
        replay_from: Rerun the run recorded there with its recorded replies and receptions
            (no operator is called, no transport is used).
        reask_mismatched: With ``replay_from``: ask the real operator for calls that do not
            match the record instead of stopping at the first.
        progress: Called with ``(kind, data)`` for live display (``evaluated``, ``round``).
        local: Run only this node of the configuration (one process per node, ``dei node``);
            ``None`` runs them all.
    """

    def __init__(
        self,
        config: RunConfig,
        run_dir: RunDir,
        *,
        registry: PluginRegistry | None = None,
        resume: bool = False,
        replay_from: RunDir | None = None,
        progress: Progress | None = None,
        local: str | None = None,
        reask_mismatched: bool = False,
    ) -> None:
        if local is not None and local not in config.node_names:
            raise ConfigError(
                f"node {local!r} is not in the run's nodes ({', '.join(config.node_names)}); "
                "a shared configuration names every node ([[node]] tables with name = ...)"
            )
        self.config = config
        self.local = local
        self.reask_mismatched = reask_mismatched
        self.run_dir = run_dir
        self.registry = registry or load_plugins()
        self.resume = resume
        self.replay_from = replay_from
        self.progress = progress or (lambda kind, data: None)
        # Opponents each node fought per round (for the fitness scale of its raw figures).
        self.round_opponents: dict[str, dict[int, int]] = defaultdict(dict)
        #: The run has written its configuration (a failure after this keeps the directory).
        self.started = False
        #: :meth:`stop` was called.
        self.stopping = False
        # Round reports being sent to the peers (nodes in processes of their own).
        self._reports_out: set[asyncio.Task] = set()
        #: The ensemble-wide money cap of a node process (``None``: in one process, or none).
        self.money: MoneyPool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        #: The evaluation backend was lost: the run checkpointed and stops with this error.
        self._lost: EvaluatorLost | None = None

    # --- construction ---------------------------------------------------------------------------

    @property
    def local_nodes(self) -> list[NodeConfig]:
        """The nodes this process runs."""
        return [node for node in self.config.nodes if self.local in (None, node.name)]

    def _build_domain(self) -> None:
        config, registry = self.config, self.registry
        self.domain = build_plugin(
            registry.domains, config.domain, registry.domain(config.domain).factory,
            self._context(config.domain_options),
        )  # fmt: skip
        self.space = build_space(self.domain, config.axes, registry)
        #: The nodes' round archives, common ground and the merge.
        self.merge = RunMerge(self.domain, self.space, [node.name for node in self.local_nodes])
        #: The events logged so far, counted for the summary (a resumed run's are added
        #: when it starts).
        self.tally = EventTally(self.space)
        if not config.lifecycle:  # the domain's default, recorded in config.json as used
            self.config = attrs.evolve(config, lifecycle=domain_lifecycle(self.domain))

    def _context(self, options: Mapping[str, Any]) -> FactoryContext:
        """What a plugin factory gets: its options (a copy), the run's plugins and seed."""
        return FactoryContext(registry=self.registry, options=dict(options),
                              seed=self.config.seed)  # fmt: skip

    def _build(self) -> None:
        self._build_domain()  # first: it resolves the configuration's lifecycle
        config, registry = self.config, self.registry
        local_nodes = self.local_nodes
        if config.common_ground and self.local is None:
            # A node process leaves common ground to the merge, which measures every node's
            # elites and champions at once.
            self.merge.reference = build_reference(self.domain, scoring=config.common_seeds)
        spaces = {node.name: build_space(self.domain, node.axes or self.space.names, registry)
                  for node in local_nodes}  # fmt: skip
        policies = {
            node.name: build_plugin(
                registry.sharing, node.sharing or config.sharing,
                registry.sharing_policy(node.sharing or config.sharing).factory,
                self._context(config.sharing_options),
            )
            for node in local_nodes
        }  # fmt: skip
        self.policy = policies[local_nodes[0].name]
        quotas, caps = config.node_quotas(), config.node_caps()
        self.ledger = BudgetLedger(
            quotas={node.name: quotas[node.name] for node in local_nodes},
            models={node.name: node.operator for node in local_nodes},
            caps={node.name: caps[node.name] for node in local_nodes},
            attempts_per_call=config.max_attempts_per_call, axis=config.compute_axis,
            # One node of a run (one process per node) is limited by its own share.
            limit=config.compute_limit() if self.local is None else None,
        )  # fmt: skip
        self.allocation = self._build_allocation()
        self.evaluator = self._new_evaluator()
        replies: dict[str, dict[str, RecordedCall]] = defaultdict(dict)
        received: dict[str, dict[int, list[dict]]] | None = None
        states: dict[str, dict] = {}
        sharing_states: dict[str, dict] = {}
        postings: list[dict] = []
        resumed = None
        if self.resume:
            resumed = resume_from_checkpoint(self.run_dir, self.ledger, replies)
            states, postings = resumed.states, resumed.postings
            sharing_states = resumed.sharing_states
            names = sorted(node.name for node in local_nodes)
            if resumed.checkpoint is not None and sorted(states) != names:
                raise damaged(self.run_dir.checkpoint_path,
                              f"it holds nodes {', '.join(sorted(states)) or 'none'} but the "
                              f"run has {', '.join(names)}; refusing to resume")  # fmt: skip
        lags: dict[str, int] = {}
        if self.replay_from is not None:
            received, lags = self._read_record(replies)

        operators = {}
        for node in local_nodes:
            spec = registry.operator(node.operator)
            if spec.domains and config.domain not in spec.domains:
                raise ConfigError(
                    f"operator {node.operator!r} works with domains {', '.join(spec.domains)}, "
                    f"not {config.domain!r}"
                )
            # A replay serves the recorded replies; an offline operator whose calls the record
            # does not hold (the array path logs none) runs again: it needs no network, and its
            # calls are a function of their seeds.
            reruns = spec.offline and not replies.get(node.name)
            if self.replay_from is not None and not self.reask_mismatched and not reruns:
                operators[node.name] = RecordedOperator(label=node.operator)
            else:
                operators[node.name] = build_plugin(
                    registry.operators, spec.name, spec.factory,
                    OperatorSettings(spec=node.operator, node=node.name, options=node.options,
                                     registry=registry, seed=config.seed),
                    self.domain,
                )  # fmt: skip
        self.operators = operators
        check_metering(config, operators)
        if self.replay_from is not None:
            on_mismatch, source = ("ask" if self.reask_mismatched else "stop",
                                   f"the record in {self.replay_from.path}")  # fmt: skip
        else:
            on_mismatch, source = "ask", "the calls made before the interruption"
        chaos.install(self.evaluator, operators)
        transports: list = [None] * len(local_nodes)
        self.timeline: Timeline | None = None
        shares = self.replay_from is None and any(policy.shares for policy in policies.values())
        if shares and self.delivery(registry.transport(config.transport)) == "virtual":
            self.timeline = Timeline([node.name for node in local_nodes])
            with self._restoring("the timeline"):
                self.timeline.restore(postings)
        elif shares:
            transport_spec = registry.transport(config.transport)
            transports = list(
                build_plugin(registry.transports, config.transport, transport_spec.factory,
                              [node.name for node in local_nodes],
                              self._context(transport_options(config)))  # fmt: skip
            )
            if len(transports) != len(local_nodes):
                raise ConfigError(
                    f"transport {config.transport!r} gave {len(transports)} endpoints for "
                    f"{len(local_nodes)} nodes"
                )
        self.nodes: list[Node] = []
        self.drivers: dict[str, SearchDriver] = {}
        for node_config, transport in zip(local_nodes, transports, strict=True):
            name = node_config.name
            emitter_name = node_config.emitter or config.emitter
            archive_name = node_config.archive or config.archive
            scheduler = Scheduler(
                name=name, space=spaces[name], initial_opponents=self.domain.initial_opponents(),
                calls=self.ledger.quotas[name], rounds=config.rounds, seed=config.seed,
                new_fraction=config.new_fraction,
                lag=lags.get(name, config.lag if config.lag is not None
                             else LAG_PER_SLOT * operators[name].max_in_flight),
                archive=build_plugin(registry.archives, archive_name,
                                      registry.archive(archive_name).factory,
                                      self._context(own_options(node_config.archive_options,
                                                         config.archive_options))),
                emitter=build_plugin(registry.emitters, emitter_name,
                                      registry.emitter(emitter_name).factory,
                                      self._context(own_options(node_config.emitter_options,
                                                         config.emitter_options))),
                sharing=policies[name], qd_offset=self.domain.fitness_floor,
                own_window=config.max_champions, peer_window=config.max_peer_champions,
                lifecycle=config.lifecycle, seeds=self.domain.seed_programs(),
            )  # fmt: skip
            if self.allocation is not None and name not in states:
                scheduler.set_round_quota(0, self.allocation.decisions[0][name])
            if name in states:
                with self._restoring(f"node {name}'s state"):
                    scheduler.restore(states[name])
                    self.ledger.usage[name].restore(states[name]["usage"])
                ended = {}
                for entry in scheduler.history:
                    with self._restoring(f"node {name}'s round history"):
                        self._note_opponents(name, entry)
                        round_index, calls = entry["round"], entry["calls"]
                    # A round's file is written in the step that ends it, before any
                    # checkpoint can hold the round: one missing was lost.
                    archive = read_round(self._round_file(name, round_index))["archive"]
                    with self._restoring(f"node {name}'s round {round_index}"):
                        self.merge.add_round(name, round_index, archive)
                    ended[round_index] = (archive, calls)
                if self.allocation is not None:
                    self.allocation.restore(name, scheduler.round_quotas, ended,
                                            self._peer_reports(resumed))  # fmt: skip
                    self.ledger.quotas[name] = sum(scheduler.round_quotas.values())
            node_dir = self.run_dir.path / "nodes" / name
            node_dir.mkdir(parents=True, exist_ok=True)
            identity = NodeIdentity.load_or_generate(node_dir / "identity.pem")
            membership = parse_membership(config.members or None)
            if membership is not None and identity.public_key_hex not in membership:
                raise ConfigError(
                    f"node {name}'s key {identity.public_key_hex} ({node_dir}/identity.pem) is "
                    "not in the run's members"
                )
            bound = None if membership is None else membership.names.get(identity.public_key_hex)
            if bound is not None and bound != name:
                # Its peers would drop every champion it sends as an impersonation.
                raise ConfigError(
                    f"node {name}'s key {identity.public_key_hex} ({node_dir}/identity.pem) is "
                    f"bound to the name {bound!r} in the run's members"
                )
            clock = None
            if self.timeline is not None and self.allocation is not None:
                # Shares move at round boundaries, where every node waits for all: a round
                # clock (each round one virtual second) waits for the same thing.
                clock = NodeClock(latency=1.0, slots=1, quota=_one_per_round)
            elif self.timeline is not None:
                clock = NodeClock(latency=nominal_latency(node_config, operators[name]),
                                  slots=operators[name].max_in_flight,
                                  quota=scheduler.round_quota)  # fmt: skip
            node = Node(name=name, transport=transport, policy=policies[name],
                        domain_name=self.domain.name, registry=self.registry,
                        recorded=None if received is None else received.get(name, {}),
                        identity=identity, members=config.members, timeline=self.timeline,
                        clock=clock)  # fmt: skip
            if name in sharing_states:
                with self._restoring(f"node {name}'s sharing counters"):
                    node.restore(sharing_states[name])
            self.nodes.append(node)
            self.drivers[name] = SearchDriver(
                scheduler=scheduler, domain=self.domain, operator=operators[name],
                evaluator=self.evaluator, ledger=self.ledger, record=self._record,
                receive=self._receiver(node), publish=node.publish,
                replies=Recording(replies.get(name, {}), on_mismatch=on_mismatch, source=source),
                on_round=self._on_round(name), checkpoint=self._checkpoint,
                on_event=lambda event: self.progress("evaluated", event),
                axes=tuple(dict.fromkeys((*spaces[name].names, *self.space.names))),
                array_path=config.array_path,
            )  # fmt: skip
            if name in states:
                with self._restoring(f"node {name}'s state"):
                    self.drivers[name].generality_excluded.update(
                        states[name].get("generality_excluded", ()))
        self._connect_peers()
        if resumed is not None:  # rebuilt from the checkpoint: now the logs go back to it
            resumed.cut_logs()
        # A node whose archive is a grid over the run's space logs cells of that space.
        self.tally = EventTally(self.space, placed=[
            name for name, driver in self.drivers.items()
            if type(driver.scheduler.archive) is GridArchive
            and driver.scheduler.archive.space == self.space])  # fmt: skip

    @contextlib.contextmanager
    def _restoring(self, what: str) -> Iterator[None]:
        """Restoring ``what`` from the checkpoint: a state it cannot be restored from (a key
        missing, a value of the wrong type) is a damaged checkpoint, refused in one line."""
        try:
            yield
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise damaged(self.run_dir.checkpoint_path,
                          f"{what} cannot be restored from it ({type(exc).__name__}: {exc}); "
                          "refusing to resume") from None  # fmt: skip

    def _round_file(self, name: str, round_index: int) -> Path:
        """The file of a round the checkpoint says node ``name`` finished (it must exist)."""
        path = self.run_dir.round_path(name, round_index)
        if not path.exists():
            raise ConfigError(f"{path} is missing: the checkpoint says node {name} finished "
                              f"round {round_index}; refusing to resume")  # fmt: skip
        return path

    def _read_record(self, replies: dict[str, dict[str, RecordedCall]]
                     ) -> tuple[dict[str, dict[int, list[dict]]], dict[str, int]]:  # fmt: skip
        """What a replay serves from the recorded run: its calls (into ``replies``), the
        champions each node received by round, and each node's lag, the record's logs checked
        against its checkpoint first.

        Raises:
            ConfigError: The record has no checkpoint, or a file of it is damaged.
        """
        record = self.replay_from
        recorded = record.read_checkpoint()
        if recorded is None:
            raise ConfigError(f"{record.checkpoint_path} is missing (or null): a replay needs "
                              "the recorded run's checkpoint (its lags and log offsets)")
        check_logs(record.path, recorded, action="replay")
        for position, call in enumerate(read_jsonl(record.calls_path)):
            if not (isinstance(call.get("node"), str) and isinstance(call.get("key"), str)):
                raise damaged(record.calls_path, f"record {position} is not a call record")
            replies[call["node"]][call["key"]] = RecordedCall(record=call)
        received: dict[str, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
        for position, event in enumerate(read_jsonl(record.events_path)):
            if event.get("event") != "received":
                continue
            if not (isinstance(event.get("node"), str) and isinstance(event.get("round"), int)):
                raise damaged(record.events_path, f"record {position} is a received event "
                                                  "without its node and round")  # fmt: skip
            received[event["node"]][event["round"]].append(event)
        lags = {}
        for name, state in recorded["nodes"].items():
            lag = state.get("lag")
            if isinstance(lag, bool) or not isinstance(lag, int) or lag < 0:
                raise damaged(record.checkpoint_path, f"node {name}'s lag is {lag!r}")
            lags[name] = lag
        return received, lags

    def _build_allocation(self) -> AllocationCoordinator | None:
        """The run's budget allocator at work, or ``None`` for a static one (the equal split
        the ledger holds already: nothing moves, and the run is exactly as without one)."""
        config, registry = self.config, self.registry
        options, wait = split_options(config.allocation_options)
        allocator = build_plugin(registry.allocators, config.allocation,
                                 registry.allocator(config.allocation).factory,
                                 self._context(options))  # fmt: skip
        if not allocator.dynamic:
            return None
        check_allocation(config)
        ledger = self.ledger

        def apply(node: str, round_index: int, quota: int) -> None:
            scheduler = self.drivers[node].scheduler
            scheduler.set_round_quota(round_index, quota)
            # The node's hard cap: the calls of its rounds so far, nothing more.
            ledger.quotas[node] = sum(scheduler.round_quotas.values())

        coordinator = AllocationCoordinator(
            allocator, nodes=config.node_names, rounds=config.rounds,
            limit=int(config.compute_limit()), spent=lambda node: ledger.usage[node].calls,
            space=self.space, apply=apply, record=lambda events: self._record(events, []),
            local=[node.name for node in self.local_nodes], wait_seconds=wait,
        )  # fmt: skip
        for node, quota in coordinator.first_round().items():
            if node in ledger.quotas:
                ledger.quotas[node] = quota  # a resumed node's are put back with its scheduler
        return coordinator

    def _peer_reports(self, resumed: Any) -> list[RoundReport]:
        """The peers' reports a resumed node process's decisions were made from: its
        ``allocation_report`` events before the checkpoint."""
        if self.allocation is None or not self.allocation.remote or resumed is None:
            return []
        offset = resumed.offsets.get("events.jsonl", 0)
        with open(self.run_dir.events_path, "rb") as handle:
            lines = handle.read(offset).splitlines()
        reports = []
        for line in lines:
            if b'"allocation_report"' in line:
                event = json.loads(line)
                if event.get("event") == "allocation_report":
                    with self._restoring("a peer's round report"):
                        reports.append(RoundReport.from_json(event))
        return reports

    def _connect_peers(self) -> None:
        """Nodes in processes of their own: a dynamic allocation's coordinator publishes its
        node's round reports and takes in its peers'; a money cap becomes the ensemble's
        (:mod:`~dei_framework.runtime.money_pool`). Both travel with the champions."""
        if self.local is None or not self.nodes or self.nodes[0].transport is None:
            if self.allocation is not None and self.allocation.remote:
                raise ConfigError(f"--allocation {self.config.allocation} with nodes in "
                                  "processes of their own needs a transport that shares "
                                  "champions")  # fmt: skip
            return
        node = self.nodes[0]
        coordinator = self.allocation
        # On the cost axis the money is the equal-compute budget: shares must not move.
        if self.config.max_cost_usd is not None and self.config.compute_axis != "cost":
            self.money = MoneyPool(
                ledger=self.ledger, node=node.name, nodes=self.config.node_names,
                limit=self.config.max_cost_usd,
                # A message's round is its number: every one has an id of its own.
                publish=lambda data: node.publish_report(data, data["seq"]),
                record=lambda events: self._record(events, []), poll=node.poll,
            )  # fmt: skip

        def publish(report: RoundReport) -> None:
            task = asyncio.get_running_loop().create_task(
                node.publish_report(report.to_json(), report.round))
            self._reports_out.add(task)
            task.add_done_callback(self._reports_out.discard)

        def received(data: Mapping[str, Any]) -> None:
            if data.get("kind") == HANDOVER:
                if self.money is not None:
                    self.money.received(data)
                return
            if coordinator is None:
                return
            try:
                report = RoundReport.from_json(data)
            except ValueError:
                node.inbox.dropped["malformed"] += 1
                return
            coordinator.report_received(report)

        if coordinator is not None:
            coordinator.publish, coordinator.poll = publish, node.poll
        node.on_report = received

    def _receiver(self, node: Node) -> Callable[[int], Any]:
        """What a node's driver calls at a round start: with a dynamic allocator, the round's
        quota is waited for (every node must have ended the round before) first."""
        allocation = self.allocation
        if allocation is None:
            return node.receive_round

        async def receive(round_index: int) -> list:
            await allocation.quota(node.name, round_index)
            return await node.receive_round(round_index)

        return receive

    def delivery(self, spec: TransportSpec) -> str:
        """``"virtual"`` or ``"wallclock"``: the run's champion delivery with transport ``spec``.

        Raises:
            ConfigError: Virtual delivery asked of a transport between processes, or transport
                options (a simulated network) given with virtual delivery, which bypasses it.
        """
        config = self.config
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

    def _record(self, events: list[dict], calls: list[dict]) -> None:
        self.run_dir.log_calls(calls)
        self.run_dir.log_events(events)
        self.tally.add(events)
        for event in events:
            if event.get("event") == "evaluated":
                self.registry.notify("dei_candidate_evaluated", event=event)
            elif event.get("event") == "node_stopped":
                self.progress("stopped", event)

    def _on_round(self, name: str) -> Callable[[dict, ArchiveBase], None]:
        def ended(entry: dict, archive: ArchiveBase) -> None:
            self.merge.add_round(name, entry["round"], archive)
            if self.allocation is not None:
                self.allocation.round_ended(name, entry["round"], archive, entry["calls"])
            self._note_opponents(name, entry)
            self.run_dir.write_round(name, entry["round"],
                                     {"archive": archive.to_json(), **entry})  # fmt: skip
            self.progress("round", {**entry, "operator_status": self.operators[name].status()})
            self.registry.notify("dei_round_ended", node=name, round=entry["round"], stats=entry)

        return ended

    def _note_opponents(self, name: str, entry: dict) -> None:
        if entry.get("opponents") is not None:
            self.round_opponents[name][entry["round"]] = len(entry["opponents"])

    def _checkpoint(self) -> None:
        write_checkpoint(self.run_dir, self.drivers, self.nodes, self.ledger, self.timeline)

    # --- running --------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Runs every node to the end in a new event loop; returns the summary.

        A run stopped by :meth:`stop` (or by Ctrl-C, which ``asyncio.run`` turns into a
        cancellation) writes a checkpoint, kills its evaluation workers and raises
        :class:`KeyboardInterrupt`; ``dei-run --resume`` continues it. A run that fails before
        it started leaves no directory behind.

        Raises:
            DEIError: a configuration problem (unknown plugin name, bad option, ...).
            KeyboardInterrupt: the run was stopped; its checkpoint is written.
        """
        # A node process's directory holds the key its launcher made for it: never discarded.
        fresh = (not self.resume and not self.run_dir.config_path.exists()
                 and self.local is None)  # fmt: skip
        try:
            try:
                return asyncio.run(self.run_async())
            except asyncio.CancelledError:
                if self._lost is not None:  # checkpointed as on Ctrl-C; --resume continues
                    raise self._lost from None
                if not self.stopping:
                    raise
                raise KeyboardInterrupt from None
        except BaseException:
            if fresh and not self.started:
                self.run_dir.discard()
            raise

    def stop(self) -> None:
        """Asks the run to stop: every node stops at its next await, the run checkpoints.

        Safe to call from a signal handler (of the thread running the event loop) or from
        another thread; :meth:`run` then raises :class:`KeyboardInterrupt`.
        """
        self.stopping = True
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)

    def kill_workers(self) -> None:
        """Kills the evaluation worker processes at once (a second Ctrl-C, just before exit)."""
        evaluator = getattr(self, "evaluator", None)
        if evaluator is not None:
            evaluator.kill_workers()

    async def run_async(self) -> dict[str, Any]:
        """Runs every node to the end; returns the summary (also written to ``summary.json``)."""
        self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
        if self.stopping:
            raise asyncio.CancelledError
        self._build()
        try:
            await self.evaluator.start()  # a backend that cannot start stops the run now
        except BaseException:
            self.evaluator.close(wait=False)
            raise
        self.evaluator.on_lost = self._evaluator_lost
        self.run_dir.write_config(self.config.to_json())
        self.started = True
        self._report_resumed()
        started = [node.transport for node in self.nodes if node.transport is not None]
        interrupted = False
        try:
            for transport in started:
                await transport.start()
            checkpointer = asyncio.create_task(self._checkpoint_periodically())
            try:
                await asyncio.gather(*(self._run_node(node) for node in self.nodes))
            finally:
                checkpointer.cancel()
            self._checkpoint()
            # Every node has finished: the replies a resume carried over are logged again
            # (and this checkpoint covers them), so their safety copy has done its job.
            (self.run_dir.path / UNLOGGED_CALLS).unlink(missing_ok=True)
            if self.merge.reference is not None:
                champions = [(e.get("champion") or {}).get("text")
                             for driver in self.drivers.values() for e in driver.history]
                await self.merge.measure_common(self.evaluator, champions)
        except asyncio.CancelledError:
            # Each node's boundary is consistent with the run log at any await: that is what
            # the periodic checkpoints rely on too.
            interrupted = True
            self._checkpoint()
            raise
        finally:
            for transport in started:
                try:
                    async with asyncio.timeout(CLOSE_SECONDS):
                        await transport.close()
                except Exception:  # closing must not hide the run's own outcome
                    pass
            for operator in self.operators.values():
                closing = operator.aclose()
                if interrupted:  # an interrupt must end the run even if a provider hangs
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(CLOSE_SECONDS):
                            await closing
                else:
                    await closing
            self.evaluator.close(wait=not interrupted)
            self.run_dir.close()
        summary = self.summary()
        write_json_atomic(self.run_dir.path / "merged_archive.json", self.merge.merged_entries,
                          layout="records")
        self.run_dir.write_summary(summary)
        self.run_dir.close()
        self.registry.notify("dei_run_finished", run_dir=str(self.run_dir.path), summary=summary)
        return summary

    def _evaluator_lost(self, error: EvaluatorLost) -> None:
        """The evaluation backend is gone: stop every node and checkpoint, as on Ctrl-C, then
        :meth:`run` raises ``error``. Once the run was asked to stop, nothing is lost: a
        backend that closes as the run stops (the Dask one) ends the jobs still under way with
        this error, and the run ends as stopped (the resume hint, the interrupt's status)."""
        if self._lost is None and not self.stopping:
            self._lost = error
            if self._task is not None:
                self._task.cancel()

    async def _run_node(self, node: Node) -> None:
        driver = self.drivers[node.name]
        try:
            await driver.run()
            if not self.stopping:
                # Logged apart from "received": delivered, never fought. Without them a short
                # run between equally fast processes can show no champion crossing at all.
                self._record([{"event": "received_late", "node": node.name,
                               "after_round": len(driver.history) - 1, "from": c.node,
                               "from_round": c.round, "program": c.text, "operator": c.operator}
                              for c in node.receive_late()], [])  # fmt: skip
        finally:  # finished, stopped or failed: its peers must not wait for its clock
            node.finish()
            if self.allocation is not None:
                self.allocation.finish(node.name)
            if self.money is not None:  # for good, unless stopped (it may be resumed)
                await self.money.finished(hand_over=not self.stopping)
            # Peers waiting at a round boundary must learn that this node runs no more.
            if self._reports_out:
                await asyncio.gather(*self._reports_out, return_exceptions=True)

    def _report_resumed(self) -> None:
        """Gives the progress display each node's totals so far (non-zero on ``--resume``).

        The display counts operator-made candidates as they are admitted, so a resumed run
        starts from those admitted before the checkpoint (the log is cut back to it) — not from
        the ledger, which also bills calls that completed but were not admitted yet: the
        resumed driver asks their items again, serves the recorded replies without charging
        them twice, and the display counts them when they are admitted.
        """
        if self.resume:  # the log as the checkpoint left it
            self.tally.add(read_jsonl(self.run_dir.events_path))
        for node in self.nodes:
            loop = self.drivers[node.name]
            last = loop.history[-1] if loop.history else None
            self.progress("resumed", {
                "node": node.name, "calls": self.tally.made.get(node.name, 0),
                "invalid": self.tally.made_invalid.get(node.name, 0),
                "rounds_done": len(loop.history),
                "coverage": last["stats"]["coverage"] if last else 0.0,
                "best": max((e["champion"]["fitness"] for e in loop.history if e["champion"]),
                            default=None),
            })  # fmt: skip

    async def _checkpoint_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.config.checkpoint_seconds)
            self._checkpoint()
            for name, operator in self.operators.items():
                self.progress("status", {"node": name, "operator_status": operator.status()})

    # --- one process per node -------------------------------------------------------------------

    def merge_processes(self, extra: Mapping[str, Mapping[str, Any]] | None = None
                        ) -> dict[str, Any]:
        """Joins the node processes' directories (``processes/<node>/``) into this run directory.

        Events and calls are concatenated node by node and round files copied; the summary is
        computed as an in-memory run's is, from each process's summary, or, for a node whose
        process ended without one, from its last checkpoint (and marked ``stopped``).

        Args:
            extra: Per node, fields added to its summary entry (a launcher's process ids ...);
                a process's own ``pid`` wins over one given here.

        Returns:
            The summary (also written to ``summary.json``).
        """
        self._build_domain()
        config = self.config
        joined = join_processes(config, self.run_dir, self.merge, extra)
        nodes, budget_nodes, wall = joined.nodes, joined.budget_nodes, joined.wall_seconds
        if config.common_ground:
            self.merge.merge_common_ground(self._new_evaluator, config.common_seeds, nodes,
                                           joined.champions)  # fmt: skip
        self.run_dir.replace_jsonl("events.jsonl", joined.events)
        self.run_dir.replace_jsonl("calls.jsonl", joined.calls)
        ledger = BudgetLedger.from_json({"nodes": budget_nodes, "wall_seconds": wall,
                                         "axis": config.compute_axis,
                                         "attempts_per_call": config.max_attempts_per_call})
        budget = {**ledger.to_json(), "wall_seconds": round(wall, 3)}
        summary = self._summary(nodes, budget, EventTally(self.space, joined.events))
        write_json_atomic(self.run_dir.path / "merged_archive.json", self.merge.merged_entries,
                          layout="records")
        self.run_dir.write_config(config.to_json())
        self.run_dir.write_summary(summary)
        self.registry.notify("dei_run_finished", run_dir=str(self.run_dir.path), summary=summary)
        return summary

    def _new_evaluator(self) -> Evaluator:
        """An evaluator for this run's domain on the run's backend (``--evaluator``), accepting
        every axis on offer."""
        offered = {spec.name for spec in self.domain.descriptor_axes()} | set(self.registry.axes)
        config = self.config
        options = EvaluatorOptions(workers=config.eval_workers, address=config.evaluator_address,
                                   options=dict(config.evaluator_options))  # fmt: skip
        backend = self.registry.evaluator(config.evaluator).factory(self.domain, options)
        sandbox = choose_policy(self.domain, level=config.sandbox, timeout=config.eval_timeout,
                                memory_mb=config.eval_memory)  # fmt: skip
        return Evaluator(self.domain, descriptor_keys=offered, backend=backend, sandbox=sandbox)

    # --- results --------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The run's results: merged archive, per-node metrics, budget, sharing counters."""
        nodes = {
            node.name: node_summary(node, self.drivers[node.name], self.ledger, self.merge,
                                    self.round_opponents.get(node.name, {}), self.domain)
            for node in self.nodes
        }  # fmt: skip
        return self._summary(nodes, self.ledger.to_json(), self.tally)

    def _summary(self, nodes: dict[str, Any], budget: dict[str, Any], tally: EventTally
                 ) -> dict[str, Any]:  # fmt: skip
        return run_summary(self.config, self.domain, self.merge, nodes, budget, tally)


def _one_per_round(round_index: int) -> int:
    """The round clock's quota: every round lasts one call of one virtual second."""
    return 1


def run(
    config: RunConfig,
    out: str | Path,
    *,
    registry: PluginRegistry | None = None,
    resume: bool = False,
    replay_from: str | Path | None = None,
    progress: Progress | None = None,
    local: str | None = None,
    reask_mismatched: bool = False,
) -> dict[str, Any]:
    """Runs an ensemble (or, with ``local``, one node of it) to completion; returns its summary.

    Raises:
        DEIError: a configuration problem (unknown plugin name, bad option, ...).
        KeyboardInterrupt: Ctrl-C stopped the run; its checkpoint is written.
    """
    run_dir = RunDir(out)
    replay = RunDir(replay_from) if replay_from is not None else None
    ensemble = Ensemble(config, run_dir, registry=registry, resume=resume, replay_from=replay,
                        progress=progress, local=local,
                        reask_mismatched=reask_mismatched)  # fmt: skip
    return ensemble.run()
