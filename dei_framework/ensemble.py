"""Running an ensemble: N nodes in this process, fully asynchronous, with checkpoints.

This is what ``dei-run`` does, and what library users call to run a configured ensemble:

    >>> from dei_framework import RunConfig, NodeConfig, run
    >>> summary = run(RunConfig(domain="coreware", nodes=[NodeConfig(name="node-0",
    ...     operator="gp")], budget=40, rounds=2), "runs/demo")  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from dei_framework import chaos
from dei_framework.archives import ArchiveBase, GridArchive
from dei_framework.backend import EvaluatorLost, EvaluatorOptions
from dei_framework.budget import BudgetLedger, NodeUsage
from dei_framework.common import (
    Reference,
    Score,
    build_reference,
    common_fitness,
    evaluate_texts,
    merge_common,
    raw_entries,
    reference_record,
    score_texts,
    scoring_spread,
    winners,
)
from dei_framework.config import NodeConfig, RunConfig
from dei_framework.context import FactoryContext
from dei_framework.descriptors import DescriptorSpace
from dei_framework.domain import LIFECYCLES, Domain
from dei_framework.envelope import NodeIdentity
from dei_framework.errors import ConfigError, DEIError, PluginError
from dei_framework.evaluation import Evaluator
from dei_framework.metrics import cell_histograms, mean_or_none, merged_stats, operator_divergence
from dei_framework.node import Node
from dei_framework.operators import Operator, OperatorSettings
from dei_framework.plugins import PluginRegistry, load_plugins, notify
from dei_framework.replay import RecordedOperator, Recording
from dei_framework.runlog import RunDir, read_jsonl, write_json_atomic
from dei_framework.scheduler import Scheduler
from dei_framework.search import RecordedCall, SearchDriver
from dei_framework.timeline import NodeClock, Timeline
from dei_framework.transport import TransportSpec

Progress = Callable[[str, dict[str, Any]], None]

#: Seconds a transport or operator may take to close before the run goes on without it.
CLOSE_SECONDS = 5.0

#: Scheduler lag per slot of operator concurrency: a slot is planned once every slot more than
#: ``6 x max_in_flight`` before it was admitted. While one reply is outstanding the other slots
#: finish about ``max_in_flight x its latency / mean latency`` calls, so a reply up to ~6x the
#: mean latency holds nothing back (5.3x in benchmarks/llm_pipeline.py); the price is parents
#: drawn from an archive up to that many slots old (docs/architecture.md#determinism).
LAG_PER_SLOT = 6


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
        # Keyed in node order from the start, not in the order rounds happen to end: merges
        # break ties between equal elites by archive order, so that order must not be timing.
        self.round_archives: dict[str, dict[int, GridArchive]] = defaultdict(
            dict, {node.name: {} for node in self.local_nodes}
        )
        # Opponents each node fought per round (for the fitness scale of its raw figures).
        self.round_opponents: dict[str, dict[int, int]] = defaultdict(dict)
        self.reference: Reference | None = None
        self.common_outcomes: dict = {}
        self.common_scores: dict[str, Score] = {}
        self.merged_entries: list[dict[str, Any]] = []
        #: The run has written its configuration (a failure after this keeps the directory).
        self.started = False
        #: :meth:`stop` was called.
        self.stopping = False
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
        self.domain = _build_plugin(
            registry.domains, config.domain, registry.domain(config.domain).factory,
            self._context(config.domain_options),
        )  # fmt: skip
        self.space = build_space(self.domain, config.axes, registry)
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
            self.reference = build_reference(self.domain, scoring=config.common_seeds)
        spaces = {node.name: build_space(self.domain, node.axes or self.space.names, registry)
                  for node in local_nodes}  # fmt: skip
        policies = {
            node.name: _build_plugin(
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
        self.evaluator = self._new_evaluator()
        replies: dict[str, dict[str, RecordedCall]] = defaultdict(dict)
        received: dict[str, dict[int, list[dict]]] | None = None
        states: dict[str, dict] = {}
        sharing_states: dict[str, dict] = {}
        postings: list[dict] = []
        if self.resume:
            checkpoint = self.run_dir.read_checkpoint()
            if checkpoint is not None:
                states = checkpoint["nodes"]
                postings = checkpoint.get("timeline", [])
                sharing_states = checkpoint.get("sharing", {})  # absent in older checkpoints
                offsets = checkpoint["offsets"]
                self.ledger.resume_wall(checkpoint.get("wall_seconds", 0.0))
                # Calls completed before the checkpoint are in its budget and log; calls after
                # it were paid for too: both are served again by key, the latter logged anew.
                kept = len(list(read_jsonl(self.run_dir.calls_path, limit=offsets["calls.jsonl"])))
                for index, call in enumerate(read_jsonl(self.run_dir.calls_path)):
                    replies[call["node"]][call["key"]] = RecordedCall(record=call,
                                                                      logged=index < kept)
                self.run_dir.truncate(offsets)
            else:
                self.run_dir.truncate({"events.jsonl": 0, "calls.jsonl": 0})
        lags: dict[str, int] = {}
        if self.replay_from is not None:
            received = defaultdict(lambda: defaultdict(list))
            for call in read_jsonl(self.replay_from.calls_path):
                replies[call["node"]][call["key"]] = RecordedCall(record=call)
            for event in read_jsonl(self.replay_from.events_path):
                if event.get("event") == "received":
                    received[event["node"]][event["round"]].append(event)
            recorded = self.replay_from.read_checkpoint() or {"nodes": {}}
            lags = {name: state["lag"] for name, state in recorded["nodes"].items()}

        operators = {}
        for node in local_nodes:
            spec = registry.operator(node.operator)
            if spec.domains and config.domain not in spec.domains:
                raise ConfigError(
                    f"operator {node.operator!r} works with domains {', '.join(spec.domains)}, "
                    f"not {config.domain!r}"
                )
            if self.replay_from is not None and not self.reask_mismatched:
                operators[node.name] = RecordedOperator(label=node.operator)
            else:
                operators[node.name] = _build_plugin(
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
            self.timeline.restore(postings)
        elif shares:
            transport_spec = registry.transport(config.transport)
            transports = list(
                _build_plugin(registry.transports, config.transport, transport_spec.factory,
                              [node.name for node in local_nodes],
                              self._context(_transport_options(config)))  # fmt: skip
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
                archive=_build_plugin(registry.archives, archive_name,
                                      registry.archive(archive_name).factory,
                                      self._context(_own(node_config.archive_options,
                                                         config.archive_options))),
                emitter=_build_plugin(registry.emitters, emitter_name,
                                      registry.emitter(emitter_name).factory,
                                      self._context(_own(node_config.emitter_options,
                                                         config.emitter_options))),
                sharing=policies[name], qd_offset=self.domain.fitness_floor,
                own_window=config.max_champions, peer_window=config.max_peer_champions,
                lifecycle=config.lifecycle,
            )  # fmt: skip
            if name in states:
                scheduler.restore(states[name])
                self.ledger.usage[name].restore(states[name]["usage"])
                for entry in scheduler.history:
                    self._note_opponents(name, entry)
                    path = self.run_dir.round_path(name, entry["round"])
                    if path.exists():
                        self.round_archives[name][entry["round"]] = self._common(
                            json.loads(path.read_text())["archive"]
                        )
            node_dir = self.run_dir.path / "nodes" / name
            node_dir.mkdir(parents=True, exist_ok=True)
            identity = NodeIdentity.load_or_generate(node_dir / "identity.pem")
            if config.members and identity.public_key_hex not in config.members:
                raise ConfigError(
                    f"node {name}'s key {identity.public_key_hex} ({node_dir}/identity.pem) is "
                    "not in the run's members"
                )
            clock = None
            if self.timeline is not None:
                clock = NodeClock(latency=_nominal_latency(node_config, operators[name]),
                                  slots=operators[name].max_in_flight,
                                  quota=scheduler.round_quota)  # fmt: skip
            node = Node(name=name, transport=transport, policy=policies[name],
                        domain_name=self.domain.name, registry=self.registry,
                        recorded=None if received is None else received.get(name, {}),
                        identity=identity, members=config.members, timeline=self.timeline,
                        clock=clock)  # fmt: skip
            if name in sharing_states:
                node.restore(sharing_states[name])
            self.nodes.append(node)
            self.drivers[name] = SearchDriver(
                scheduler=scheduler, domain=self.domain, operator=operators[name],
                evaluator=self.evaluator, ledger=self.ledger, record=self._record,
                receive=node.receive_round, publish=node.publish,
                replies=Recording(replies.get(name, {}), on_mismatch=on_mismatch, source=source),
                on_round=self._on_round(name), checkpoint=self._checkpoint,
                on_event=lambda event: self.progress("evaluated", event),
                axes=tuple(dict.fromkeys((*spaces[name].names, *self.space.names))),
            )  # fmt: skip
            if name in states:
                self.drivers[name].generality_excluded.update(
                    states[name].get("generality_excluded", ()))

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
        for event in events:
            if event.get("event") == "evaluated":
                notify(self.registry, "dei_candidate_evaluated", event=event)
            elif event.get("event") == "node_stopped":
                self.progress("stopped", event)

    def _on_round(self, name: str) -> Callable[[dict, ArchiveBase], None]:
        def ended(entry: dict, archive: ArchiveBase) -> None:
            self.round_archives[name][entry["round"]] = self._common(archive.to_json())
            self._note_opponents(name, entry)
            self.run_dir.write_round(name, entry["round"],
                                     {"archive": archive.to_json(), **entry})  # fmt: skip
            self.progress("round", {**entry, "operator_status": self.operators[name].status()})
            notify(self.registry, "dei_round_ended", node=name, round=entry["round"],
                   stats=entry)  # fmt: skip

        return ended

    def _note_opponents(self, name: str, entry: dict) -> None:
        if entry.get("opponents") is not None:
            self.round_opponents[name][entry["round"]] = len(entry["opponents"])

    def _common(self, archive: dict[str, Any]) -> GridArchive:
        """A node's archive mapped into the run's grid (the common space of merges and reports,
        whatever the node's archive kind and axes)."""
        return GridArchive(space=self.space, qd_offset=self.domain.fitness_floor).fill_from_json(
            archive
        )

    def _in_common_space(self, events: list[dict]) -> list[dict]:
        """Events with their cells in the run's grid (nodes may use other axes or archives)."""
        return [
            {**e, "cell": list(self.space.cell(e["descriptor"]))} if e.get("descriptor") else e
            for e in events
        ]

    def _checkpoint(self) -> None:
        self.run_dir.write_checkpoint({
            "nodes": {name: driver.state_json() for name, driver in self.drivers.items()},
            "offsets": self.run_dir.offsets(),
            "wall_seconds": round(self.ledger.wall_seconds, 3),
            "timeline": self.timeline.to_json() if self.timeline is not None else [],
            # Sharing counters: a resumed node counts on from them (they restarted at 0 before).
            "sharing": {node.name: node.state_json(started_round=self._started_round(node.name))
                        for node in self.nodes},  # fmt: skip
        })  # fmt: skip

    def _started_round(self, name: str) -> int:
        """The last round the node's scheduler has started (``-1`` before its first)."""
        scheduler = self.drivers[name].scheduler
        return scheduler.round if scheduler.started else scheduler.round - 1

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
            if self.reference is not None:
                champions = [(e.get("champion") or {}).get("text")
                             for driver in self.drivers.values() for e in driver.history]
                await self._measure_common(self.evaluator, champions)
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
        write_json_atomic(self.run_dir.path / "merged_archive.json", self.merged_entries)
        self.run_dir.write_summary(summary)
        self.run_dir.close()
        notify(self.registry, "dei_run_finished", run_dir=str(self.run_dir.path), summary=summary)
        return summary

    def _evaluator_lost(self, error: EvaluatorLost) -> None:
        """The evaluation backend is gone: stop every node and checkpoint, as on Ctrl-C, then
        :meth:`run` raises ``error``."""
        if self._lost is None:
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

    def _report_resumed(self) -> None:
        """Gives the progress display each node's totals so far (non-zero on ``--resume``).

        The display counts operator-made candidates as they are admitted, so a resumed run
        starts from those admitted before the checkpoint (the log is cut back to it) — not from
        the ledger, which also bills calls that completed but were not admitted yet: the
        resumed driver asks their items again, serves the recorded replies without charging
        them twice, and the display counts them when they are admitted.
        """
        calls: dict[str, int] = defaultdict(int)
        invalid: dict[str, int] = defaultdict(int)
        if self.resume:
            for event in read_jsonl(self.run_dir.events_path):
                if event.get("event") == "evaluated" and event.get("kind") in ("new", "mutate"):
                    calls[event["node"]] += 1
                    invalid[event["node"]] += event.get("status") == "invalid"
        for node in self.nodes:
            loop = self.drivers[node.name]
            last = loop.history[-1] if loop.history else None
            self.progress("resumed", {
                "node": node.name, "calls": calls[node.name],
                "invalid": invalid[node.name], "rounds_done": len(loop.history),
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
        quotas, caps = config.node_quotas(), config.node_caps()
        events: list[dict] = []
        calls: list[dict] = []
        nodes: dict[str, Any] = {}
        budget_nodes: dict[str, Any] = {}
        champions: dict[str, dict[int, str | None]] = defaultdict(dict)  # text by round
        wall = 0.0
        for node in config.nodes:
            name = node.name
            source = self.run_dir.process_path(name)
            summary = _read_json(source / "summary.json")
            for path in sorted((source / "nodes" / name).glob("round-*.json")):
                target = self.run_dir.path / "nodes" / name / path.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
                data = json.loads(path.read_text())
                self.round_archives[name][data["round"]] = self._common(data["archive"])
                champions[name][data["round"]] = (data.get("champion") or {}).get("text")
            events.extend(read_jsonl(source / "events.jsonl"))
            calls.extend(read_jsonl(source / "calls.jsonl"))
            if summary is not None and name in summary.get("nodes", {}):
                nodes[name] = summary["nodes"][name]
                budget_nodes[name] = summary["budget"]["nodes"][name]
                wall = max(wall, float(summary["budget"].get("wall_seconds", 0.0)))
                continue
            checkpoint = _read_json(source / "checkpoint.json") or {}
            usage = {**NodeUsage().to_json(),
                     **(checkpoint.get("nodes", {}).get(name, {}).get("usage") or {})}
            budget_nodes[name] = {**usage, "quota": quotas[name], "model": node.operator,
                                  "caps": attrs.asdict(caps[name])}
            nodes[name] = {
                "operator": node.operator, "model": node.operator, "calls": usage["calls"],
                "attempts": usage["attempts"], "quota": quotas[name],
                "rounds_completed": len(self.round_archives[name]), "champion": None,
                "stopped": f"its process ended without finishing (see {source}/node.log)",
            }  # fmt: skip
        for name, fields in (extra or {}).items():
            if name in nodes:
                nodes[name] = {**fields, **nodes[name]}
        if config.common_ground:
            self._merge_common_ground(nodes, champions)
        self.run_dir.replace_jsonl("events.jsonl", events)
        self.run_dir.replace_jsonl("calls.jsonl", calls)
        ledger = BudgetLedger.from_json({"nodes": budget_nodes, "wall_seconds": wall,
                                         "axis": config.compute_axis,
                                         "attempts_per_call": config.max_attempts_per_call})
        budget = {**ledger.to_json(), "wall_seconds": round(wall, 3)}
        summary = self._summary(nodes, budget)
        write_json_atomic(self.run_dir.path / "merged_archive.json", self.merged_entries)
        self.run_dir.write_config(config.to_json())
        self.run_dir.write_summary(summary)
        notify(self.registry, "dei_run_finished", run_dir=str(self.run_dir.path), summary=summary)
        return summary

    def _new_evaluator(self) -> Evaluator:
        """An evaluator for this run's domain on the run's backend (``--evaluator``), accepting
        every axis on offer."""
        offered = {spec.name for spec in self.domain.descriptor_axes()} | set(self.registry.axes)
        config = self.config
        options = EvaluatorOptions(workers=config.eval_workers, address=config.evaluator_address,
                                   options=dict(config.evaluator_options))  # fmt: skip
        backend = self.registry.evaluator(config.evaluator).factory(self.domain, options)
        return Evaluator(self.domain, descriptor_keys=offered, backend=backend)

    def _merge_common_ground(self, nodes: dict[str, Any],
                             champions: Mapping[str, Mapping[int, str | None]]) -> None:
        """Common ground for a merge of node processes: every final-archive elite and round
        champion of every node re-evaluated here, in one place, against the reference set (node
        processes leave common ground to the merge).

        Args:
            nodes: The merged per-node summary entries (champion fields are filled in).
            champions: Per node, each round's champion text (``None`` for a round without).
        """
        self.reference = build_reference(self.domain, scoring=self.config.common_seeds)
        per_round = {name: [champions[name][r] for r in sorted(champions[name])]
                     for name in nodes}  # fmt: skip
        evaluator = self._new_evaluator()
        try:
            asyncio.run(self._measure_common(
                evaluator, [text for round_texts in per_round.values() for text in round_texts]
            ))  # fmt: skip
        finally:
            evaluator.close()
        for name, entry in nodes.items():
            entry["champion_common_fitness_per_round"] = [
                common_fitness(self.common_scores, text) for text in per_round[name]
            ]
            if entry.get("champion"):
                entry["champion"] = self._with_common(entry["champion"])

    async def _measure_common(self, evaluator: Evaluator, champions: list[str | None]) -> None:
        """Common ground in its two steps (:mod:`dei_framework.common`): every final-archive
        elite and round champion once with the selection seed, then the elites kept per cell
        and the champions with every scoring seed."""
        reference = self.reference
        if reference is None:
            return
        self.common_outcomes = await evaluate_texts(evaluator, self._common_texts(champions),
                                                    reference)  # fmt: skip
        chosen = winners(self._final_archives(), self.common_outcomes, self.space)
        self.common_scores = await score_texts(
            evaluator, chosen + [text for text in champions if text], reference
        )

    def _with_common(self, champion: Mapping[str, Any]) -> dict[str, Any]:
        """A champion entry with its common-ground fitness and spread over the scoring seeds."""
        score = self.common_scores.get(champion.get("text") or "")
        return {**champion, "common_fitness": score.mean if score else None,
                "common_fitness_std": score.std if score else None}  # fmt: skip

    # --- results --------------------------------------------------------------------------------

    def _final_archives(self) -> list[GridArchive]:
        return [archives[max(archives)] for archives in self.round_archives.values() if archives]

    def _common_texts(self, champions: Iterable[str | None]) -> list[str]:
        """Every final-archive elite and every round champion (``None``: a round without one):
        what common ground measures."""
        texts = [elite.text for archive in self._final_archives() for elite in archive]
        return texts + [text for text in champions if text]

    def _merged(self) -> dict[str, Any]:
        """Raw merge statistics, the common-ground block, and ``merged_archive.json``."""
        finals = self._final_archives()
        merged = merged_stats(finals) if finals else {"coverage": 0.0, "qd_score": 0.0}
        if self.reference is None:
            self.merged_entries = raw_entries(GridArchive.merge(finals)) if finals else []
            return merged
        archive, self.merged_entries = merge_common(
            finals, self.common_outcomes, self.space, qd_offset=self.domain.fitness_floor,
            scores=self.common_scores,
        )
        failed = sum(1 for o in self.common_outcomes.values() if o.evaluation is None)
        merged["common"] = {
            **archive.stats().to_json(),
            **scoring_spread(self.merged_entries),
            "reference": dict(self.reference.record),
            "seed": self.reference.seed,
            "scoring_seeds": list(self.reference.scoring_seeds),
            "common_seeds": len(self.reference.scoring_seeds),
            "fitness_scale": self.reference.fitness_scale,
            "failed": failed,
            "scoring_failed": sum(s.failed for s in self.common_scores.values()),
        }
        return merged

    def _fitness_scales(self, name: str) -> list[float | None]:
        fought = self.round_opponents.get(name, {})
        return [
            float(self.domain.fitness_scale(fought[e["round"]])) if e["round"] in fought else None
            for e in self.drivers[name].history
        ]

    def summary(self) -> dict[str, Any]:
        """The run's results: merged archive, per-node metrics, budget, sharing counters."""
        nodes = {}
        for node in self.nodes:
            loop = self.drivers[node.name]
            usage: NodeUsage = self.ledger.usage[node.name]
            generality = [e.get("generality") for e in loop.history]
            final = loop.history[-1] if loop.history else None
            champion = dict(final["champion"]) if final and final.get("champion") else None
            if champion is not None and self.reference is not None:
                champion = self._with_common(champion)
            nodes[node.name] = {
                "operator": loop.operator.label,
                "model": loop.operator.label,
                "calls": usage.calls,
                "attempts": usage.attempts,
                "cost_usd": usage.to_json()["cost_usd"],
                "quota": self.ledger.quotas[node.name],
                "rounds_completed": len(loop.history),
                "generality": final.get("generality") if final else None,
                "generality_peak": max((g for g in generality if g is not None), default=None),
                "generality_per_round": generality,
                "generality_excluded": sorted(loop.generality_excluded),
                "champion_initial_per_round": [bool(e.get("champion_initial"))
                                               for e in loop.history],
                "niche_novelty": mean_or_none(e.get("niche_novelty") for e in loop.history),
                "niche_novelty_per_round": [e.get("niche_novelty") for e in loop.history],
                "coverage_per_round": [e["stats"]["coverage"] for e in loop.history],
                "qd_score_per_round": [e["stats"]["qd_score"] for e in loop.history],
                "champion": champion,
                "champion_common_fitness_per_round": [
                    common_fitness(self.common_scores, (e.get("champion") or {}).get("text"))
                    for e in loop.history
                ] if self.reference is not None else None,
                "fitness_scale_per_round": self._fitness_scales(node.name),
                "stopped": loop.stopped,
                "sharing": node.stats(),
                "operator_status": loop.operator.status(),
                "pid": os.getpid(),
            }
        return self._summary(nodes, self.ledger.to_json())

    def _summary(self, nodes: dict[str, Any], budget: dict[str, Any]) -> dict[str, Any]:
        rounds = sorted({r for archives in self.round_archives.values() for r in archives})
        per_round = []
        for round_index in rounds:
            archives = [a[round_index] for a in self.round_archives.values() if round_index in a]
            per_round.append({"round": round_index, **merged_stats(archives)})
        merged = self._merged()
        events = list(read_jsonl(self.run_dir.events_path))
        return {
            "domain": self.config.domain,
            "transport": self.config.transport,
            "sharing": self.config.sharing,
            "seed": self.config.seed,
            "rounds": self.config.rounds,
            "lifecycle": self.config.lifecycle,
            "space": {"axes": list(self.space.names), "shape": list(self.space.shape),
                      "cells": self.space.cells, "grid": self.space.to_json()},  # fmt: skip
            "merged": {**merged, "per_round": per_round},
            "generality": {
                "reference": _generality_reference(self.domain),
                # Per node: how many reference programs it fought or produced, left out of
                # its generality (the names are in nodes.<name>.generality_excluded).
                "excluded": {name: len(node["generality_excluded"])
                             if node.get("generality_excluded") is not None else None
                             for name, node in nodes.items()},  # fmt: skip
            },
            "nodes": nodes,
            "operator_divergence": operator_divergence(
                cell_histograms(self._in_common_space(events), self.space.shape)
            ),
            "budget": budget,
            "compute_axis": budget.get("axis", self.config.compute_axis),
            "invalid": sum(1 for e in events if e.get("status") == "invalid"),
            "evaluated": sum(1 for e in events if e.get("event") == "evaluated"),
        }


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


def _own(node_options: Mapping[str, Any] | None, run_options: Mapping[str, Any]
         ) -> Mapping[str, Any]:
    """A node's own options table if its ``[[node]]`` table gave one, else the run's."""
    return run_options if node_options is None else node_options


def _nominal_latency(node: NodeConfig, operator: Operator) -> float:
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


def _read_json(path: Path) -> Any:
    """A JSON file's content, or ``None`` when it is missing or damaged."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _generality_reference(domain: Domain) -> dict[str, Any] | None:
    texts = domain.generality_reference()
    return None if texts is None else reference_record(texts)


def _transport_options(config: RunConfig) -> dict[str, Any]:
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


def _build_plugin(table: dict, name: str, factory: Callable, *args: Any) -> Any:
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
