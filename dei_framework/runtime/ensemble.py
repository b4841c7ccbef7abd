"""Running an ensemble: N nodes in this process, fully asynchronous, with checkpoints.

:class:`Ensemble` is the loop: :func:`~dei_framework.runtime.assembly.assemble` builds the
run's parts, the ensemble runs its nodes in one event loop, logs what they report and hands
the other jobs to their modules: checkpoints to :mod:`dei_framework.runtime.files.checkpoints`,
round archives, common ground and the merge to :mod:`dei_framework.runtime.merge`,
``summary.json`` to :mod:`dei_framework.runtime.summary` (joining node processes is
:mod:`dei_framework.runtime.node.join`'s).

This is what ``dei-run`` does, and what library users call to run a configured ensemble:

    >>> from dei_framework import RunConfig, NodeConfig, run
    >>> summary = run(RunConfig(domain="coreware", nodes=[NodeConfig(name="node-0",
    ...     operator="gp")], budget=40, rounds=2), "runs/demo")  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dei_framework.contract.backend import EvaluatorLost
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.kinds import EventKind, ProgressKind
from dei_framework.contract.run_summary import RunSummary
from dei_framework.net.node import Node
from dei_framework.plugin.manager import PluginRegistry, load_plugins
from dei_framework.runtime.assembly import RunParts, assemble
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.files.checkpoints import write_checkpoint
from dei_framework.runtime.files.run_dir import RunDir, read_jsonl, write_json_atomic
from dei_framework.runtime.files.run_layout import MERGED_ARCHIVE_FILE, UNLOGGED_CALLS_FILE
from dei_framework.runtime.node.assembly import note_opponents
from dei_framework.runtime.summary import node_summary, run_summary
from dei_framework.search.archives import ArchiveBase
from dei_framework.search.events import EvaluatedEvent, RoundEvent

#: A progress display: called with ``(kind, data)``, ``kind`` a
#: :class:`~dei_framework.contract.kinds.ProgressKind`.
Progress = Callable[[ProgressKind, dict[str, Any]], None]

#: Seconds a transport or operator may take to close before the run goes on without it.
CLOSE_SECONDS = 5.0


class Ensemble:
    """The loop of one run's nodes in this process (all of them, or one with ``local``).

    Args:
        config: The resolved run configuration.
        run_dir: Where the run is recorded.
        registry: Loaded plugins (default: discover them).
        resume: Continue the run recorded in ``run_dir`` from its last checkpoint.
        replay_from: Rerun the run recorded there with its recorded replies and receptions
            (no operator is called, no transport is used).
        reask_mismatched: With ``replay_from``: ask the real operator for calls that do not
            match the record instead of stopping at the first.
        progress: Called with ``(kind, data)`` for live display (a
            :class:`~dei_framework.contract.kinds.ProgressKind`: ``evaluated``, ``round``, ...).
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
        #: The run's parts, once :meth:`assemble` has built them.
        self.parts: RunParts | None = None
        #: The run has written its configuration (a failure after this keeps the directory).
        self.started = False
        #: :meth:`stop` was called.
        self.stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        #: The evaluation backend was lost: the run checkpointed and stops with this error.
        self._lost: EvaluatorLost | None = None

    def assemble(self) -> RunParts:
        """Builds the run's parts (:func:`~dei_framework.runtime.assembly.assemble`), the
        configuration's lifecycle resolved on the way."""
        self.parts = assemble(
            self.config,
            self.registry,
            self.run_dir,
            self,
            local=self.local,
            resume=self.resume,
            replay_from=self.replay_from,
            reask_mismatched=self.reask_mismatched,
        )
        self.config = self.parts.config
        return self.parts

    @property
    def drivers(self) -> dict[str, Any]:
        """Per node, its driver (empty before the run is assembled)."""
        return self.parts.drivers if self.parts is not None else {}

    # --- what the parts report ------------------------------------------------------------------

    def record(self, events: list[dict], calls: list[dict]) -> None:
        """Logs events and calls (as JSON), counts the events, and tells the display of a node
        that stopped."""
        self.run_dir.log_calls(calls)
        self.run_dir.log_events(events)
        self.parts.tally.add(events)
        for event in events:
            if event.get("event") == EventKind.NODE_STOPPED:
                self.progress(ProgressKind.STOPPED, event)

    def evaluated(self, events: Sequence[EvaluatedEvent]) -> None:
        """Tells the plugins of candidates evaluated (:meth:`record` logged them)."""
        if self.registry.observed("dei_candidate_evaluated"):  # asked once per batch
            for event in events:
                self.registry.notify("dei_candidate_evaluated", event=event)

    def round_ended(self, name: str) -> Callable[[RoundEvent, ArchiveBase], None]:
        """What node ``name``'s driver calls as a round ends: its archive to the merge (and the
        allocator) and to its round file, the display and the plugins told."""

        def ended(entry: RoundEvent, archive: ArchiveBase) -> None:
            parts = self.parts  # asked for while the parts are assembled: looked up when called
            parts.merge.add_round(name, entry.round, archive)
            if parts.allocation is not None:
                parts.allocation.round_ended(name, entry.round, archive, entry.calls)
            note_opponents(parts.round_opponents, name, entry)
            data = entry.to_json()
            self.run_dir.write_round(name, entry.round, {"archive": archive.to_json(), **data})
            self.progress(
                ProgressKind.ROUND, {**data, "operator_status": parts.operators[name].status()}
            )
            self.registry.notify("dei_round_ended", node=name, round=entry.round, stats=entry)

        return ended

    def checkpoint(self) -> None:
        """Writes the run's checkpoint (consistent with the logs at any await)."""
        parts = self.parts
        write_checkpoint(self.run_dir, parts.drivers, parts.nodes, parts.ledger, parts.timeline)

    # --- running --------------------------------------------------------------------------------

    def run(self) -> RunSummary:
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
        fresh = not self.resume and not self.run_dir.config_path.exists() and self.local is None
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
        if self.parts is not None:
            self.parts.evaluator.kill_workers()

    async def run_async(self) -> RunSummary:
        """Runs every node to the end; returns the summary (also written to ``summary.json``)."""
        self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
        if self.stopping:
            raise asyncio.CancelledError
        parts = self.assemble()
        try:
            await parts.evaluator.start()  # a backend that cannot start stops the run now
        except BaseException:
            parts.evaluator.close(wait=False)
            raise
        parts.evaluator.on_lost = self._evaluator_lost
        self.run_dir.write_config(self.config.to_json())
        self.started = True
        self._report_resumed()
        started = [node.transport for node in parts.nodes if node.transport is not None]
        interrupted = False
        try:
            for transport in started:
                await transport.start()
            checkpointer = asyncio.create_task(self._checkpoint_periodically())
            try:
                await asyncio.gather(*(self._run_node(node) for node in parts.nodes))
            finally:
                checkpointer.cancel()
            self.checkpoint()
            # Every node has finished: the replies a resume carried over are logged again
            # (and this checkpoint covers them), so their safety copy has done its job.
            (self.run_dir.path / UNLOGGED_CALLS_FILE).unlink(missing_ok=True)
            if parts.merge.reference is not None:
                champions = [
                    e.champion.text if e.champion is not None else None
                    for driver in parts.drivers.values()
                    for e in driver.history
                ]
                await parts.merge.measure_common(parts.evaluator, champions)
        except asyncio.CancelledError:
            # Each node's boundary is consistent with the run log at any await: that is what
            # the periodic checkpoints rely on too.
            interrupted = True
            self.checkpoint()
            raise
        finally:
            for transport in started:
                try:
                    async with asyncio.timeout(CLOSE_SECONDS):
                        await transport.close()
                except Exception:  # closing must not hide the run's own outcome
                    pass
            for operator in parts.operators.values():
                closing = operator.aclose()
                if interrupted:  # an interrupt must end the run even if a provider hangs
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(CLOSE_SECONDS):
                            await closing
                else:
                    await closing
            parts.evaluator.close(wait=not interrupted)
            self.run_dir.close()
        summary = self.summary()
        write_json_atomic(
            self.run_dir.path / MERGED_ARCHIVE_FILE, parts.merge.merged_entries, layout="records"
        )
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
        parts = self.parts
        driver = parts.drivers[node.name]
        try:
            await driver.run()
            if not self.stopping:
                # Logged apart from "received": delivered, never fought. Without them a short
                # run between equally fast processes can show no champion crossing at all.
                self.record(
                    [
                        {
                            "event": EventKind.RECEIVED_LATE,
                            "node": node.name,
                            "after_round": len(driver.history) - 1,
                            "from": c.node,
                            "from_round": c.round,
                            "program": c.text,
                            "operator": c.operator,
                        }
                        for c in node.receive_late()
                    ],
                    [],
                )
        finally:  # finished, stopped or failed: its peers must not wait for its clock
            node.finish()
            if parts.allocation is not None:
                parts.allocation.finish(node.name)
            if parts.money is not None:  # for good, unless stopped (it may be resumed)
                await parts.money.finished(hand_over=not self.stopping)
            # Peers waiting at a round boundary must learn that this node runs no more.
            if parts.reports_out:
                await asyncio.gather(*parts.reports_out, return_exceptions=True)

    def _report_resumed(self) -> None:
        """Gives the progress display each node's totals so far (non-zero on ``--resume``).

        The display counts operator-made candidates as they are admitted, so a resumed run
        starts from those admitted before the checkpoint (the log is cut back to it) — not from
        the ledger, which also bills calls that completed but were not admitted yet: the
        resumed driver asks their items again, serves the recorded replies without charging
        them twice, and the display counts them when they are admitted.
        """
        parts = self.parts
        if self.resume:  # the log as the checkpoint left it
            parts.tally.add(read_jsonl(self.run_dir.events_path))
        for node in parts.nodes:
            loop = parts.drivers[node.name]
            last = loop.history[-1] if loop.history else None
            self.progress(
                ProgressKind.RESUMED,
                {
                    "node": node.name,
                    "calls": parts.tally.made.get(node.name, 0),
                    "invalid": parts.tally.made_invalid.get(node.name, 0),
                    "rounds_done": len(loop.history),
                    "coverage": last.stats.coverage if last else 0.0,
                    "best": max(
                        (e.champion.fitness for e in loop.history if e.champion), default=None
                    ),
                },
            )

    async def _checkpoint_periodically(self) -> None:
        parts = self.parts
        while True:
            await asyncio.sleep(self.config.checkpoint_seconds)
            self.checkpoint()
            for name, operator in parts.operators.items():
                self.progress(
                    ProgressKind.STATUS, {"node": name, "operator_status": operator.status()}
                )

    # --- results --------------------------------------------------------------------------------

    def summary(self) -> RunSummary:
        """The run's results: merged archive, per-node metrics, budget, sharing counters."""
        parts = self.parts
        nodes = {
            node.name: node_summary(
                node,
                parts.drivers[node.name],
                parts.ledger,
                parts.merge,
                parts.round_opponents.get(node.name, {}),
                parts.domain,
            )
            for node in parts.nodes
        }
        return run_summary(
            self.config, parts.domain, parts.merge, nodes, parts.ledger.to_json(), parts.tally
        )


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
) -> RunSummary:
    """Runs an ensemble (or, with ``local``, one node of it) to completion; returns its summary.

    Raises:
        DEIError: a configuration problem (unknown plugin name, bad option, ...).
        KeyboardInterrupt: Ctrl-C stopped the run; its checkpoint is written.
    """
    run_dir = RunDir(out)
    replay = RunDir(replay_from) if replay_from is not None else None
    ensemble = Ensemble(
        config,
        run_dir,
        registry=registry,
        resume=resume,
        replay_from=replay,
        progress=progress,
        local=local,
        reask_mismatched=reask_mismatched,
    )
    return ensemble.run()
