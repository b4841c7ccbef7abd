"""One machine, one process per node: ``dei-run`` for transports that run a node per process.

For a networked transport (AXL) ``dei-run`` without the transport's own address options starts
the transport's local network (for AXL: one AXL node per DEI node, peered on loopback), then one
``dei node`` process per node, each writing ``processes/<node>/`` of the run directory. While
they run it reports the rounds and the champions each process receives from the others, repairs
what the network reports broken (a crashed AXL node is restarted), resumes a node process that
was killed by a signal from its last checkpoint, and reports one that failed (exit status) without
waiting on it. At the end it merges the processes' directories into the run directory, so the
summary and report are those of an in-memory run (plus each node's ``pid``).

Ctrl-C (or SIGTERM) stops every child cleanly: ``dei-run``'s interrupt handling calls
:meth:`Launcher.stop`, which sends SIGINT to the node processes (each stops as ``dei-run``
does, keeping its checkpoint), then stops the network; a second Ctrl-C kills them
(:meth:`Launcher.kill_workers`). ``dei-run --resume <run dir>`` continues.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import attrs

from dei_framework.contract.kinds import EventKind
from dei_framework.contract.processes import parent_death_signal
from dei_framework.contract.run_summary import RunSummary
from dei_framework.contract.transport import LocalNetwork
from dei_framework.net.envelope import NodeIdentity
from dei_framework.plugin.manager import PluginRegistry
from dei_framework.runtime.builders import build_allocator
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.files import run_layout
from dei_framework.runtime.files.run_dir import RunDir, read_jsonl, write_json_atomic
from dei_framework.runtime.files.run_layout import (
    CONFIG_FILE,
    EVENTS_FILE,
    NODE_LOG_FILE,
    PROCESSES_FILE,
    SUMMARY_FILE,
)

#: A node process killed by a signal (a crash, the OOM killer, kill -9) is resumed this often.
MAX_RESUMES = 3
#: Seconds between looks at the children.
POLL_SECONDS = 0.25
#: Seconds node processes get to stop after SIGINT before they are killed.
STOP_SECONDS = 30.0
#: The events of a champion delivered to a node (taken in at a round start, or too late).
_RECEIVED = (EventKind.RECEIVED, EventKind.RECEIVED_LATE)


def local_network(
    config: RunConfig, registry: PluginRegistry, run_dir: Path
) -> LocalNetwork | None:
    """The transport's one-machine network for this run, or ``None`` (in-process transport, or
    the user runs their own network, e.g. ``--axl-api`` is given)."""
    spec = registry.transport(config.transport)
    if spec.local_network is None:
        return None
    build_allocator(config, registry)  # a dynamic one is refused before any process starts
    return spec.local_network(
        config.node_names, dict(config.transport_options), run_layout.processes_dir(run_dir)
    )


def node_command(*args: str) -> list[str]:
    """The command line of a ``dei`` sub-command run with this interpreter."""
    return [sys.executable, "-m", "dei_framework", *args]


@attrs.define
class _Child:
    name: str
    process: subprocess.Popen[bytes]
    log: IO[bytes]
    resumes: int = 0
    reported: bool = False


@attrs.define(eq=False)
class Launcher:
    """Runs every node of ``config`` in its own process over ``network`` and merges the results.

    Attributes:
        config: The run configuration (all nodes).
        run_dir: The run directory.
        network: The transport's local network.
        registry: Loaded plugins (for the merge).
        resume: Continue the run recorded in ``run_dir``.
        echo: Where log lines go (``None``: nowhere).
        child_args: Extra arguments for every ``dei node`` process (e.g. ``--eval-workers``).
    """

    config: RunConfig
    run_dir: Path = attrs.field(converter=Path)
    network: LocalNetwork
    registry: PluginRegistry
    resume: bool = False
    echo: Callable[[str], None] | None = None
    child_args: tuple[str, ...] = ()
    children: dict[str, _Child] = attrs.field(factory=dict, init=False)
    pids: dict[str, int] = attrs.field(factory=dict, init=False)
    failed: dict[str, str] = attrs.field(factory=dict, init=False)
    options: dict[str, dict[str, Any]] = attrs.field(factory=dict, init=False)
    started: bool = attrs.field(default=False, init=False)
    stopping: bool = attrs.field(default=False, init=False)
    _offsets: dict[str, int] = attrs.field(factory=dict, init=False)

    def _say(self, line: str) -> None:
        if self.echo is not None:
            self.echo(line)

    # --- running ------------------------------------------------------------------------------

    def run(self) -> RunSummary:
        """Runs the nodes to the end; returns the merged summary.

        Raises:
            KeyboardInterrupt: Ctrl-C or SIGTERM (children stopped, checkpoints kept).
            DEIError: the network could not start.
        """
        run_dir = RunDir(self.run_dir)
        keys = {}
        for name in self.config.node_names:
            path = run_layout.identity_path(run_dir.process_path(name), name)
            path.parent.mkdir(parents=True, exist_ok=True)
            keys[name] = NodeIdentity.load_or_generate(path)
        if not self.resume and not self.config.members:
            # Every key and name of the run is known here: close the run to its members, each
            # key bound to its node's name so that no member can speak for another.
            self.config = attrs.evolve(
                self.config,
                members=tuple(f"{name}={key.public_key_hex}" for name, key in keys.items()),
            )
        if not self.resume:
            run_dir.write_config(self.config.to_json())
        try:
            options = self.network.start({name: self._key_path(name) for name in keys})
            for name, opts in options.items():
                settings = " ".join(f"{key}={value}" for key, value in opts.items())
                self._say(f"{name}: {self.config.transport} network ready ({settings})")
            self.options = options
            self.started = True
            # Only what the nodes log from now on is reported: a resumed run's earlier rounds
            # were reported by the process that ran them.
            for name in self.config.node_names:
                log = run_dir.process_path(name) / EVENTS_FILE
                self._offsets[name] = log.stat().st_size if log.exists() else 0
            for name in self.config.node_names:
                if (run_dir.process_path(name) / SUMMARY_FILE).exists():
                    self._say(f"{name}: already finished")
                    continue
                self._spawn(name, resume=self.resume)
            self._supervise()
        except KeyboardInterrupt:
            self._say(
                f"stopping {sum(c.process.poll() is None for c in self.children.values())} "
                "node processes ..."
            )
            self._stop_children()
            raise
        finally:
            self._stop_children()
            self.network.stop()
        self._follow()
        return self._merge()

    def stop(self) -> None:
        """Asks the run to stop (from a signal handler): :meth:`run` stops the children and
        raises ``KeyboardInterrupt``; before any child started, raises it at once."""
        self.stopping = True
        if not self.started:
            raise KeyboardInterrupt

    def kill_workers(self) -> None:
        """Kills the node processes at once (a second Ctrl-C, just before exit); their AXL
        nodes stop with the launcher (parent-death signal)."""
        for child in self.children.values():
            if child.process.poll() is None:
                child.process.kill()

    def _key_path(self, name: str) -> Path:
        return run_layout.identity_path(RunDir(self.run_dir).process_path(name), name)

    def _spawn(self, name: str, *, resume: bool) -> None:
        directory = RunDir(self.run_dir).process_path(name)
        directory.mkdir(parents=True, exist_ok=True)
        resume = resume and (directory / CONFIG_FILE).exists()
        args = (
            ["node", "--resume", str(self.run_dir)]
            if resume
            else ["node", "--config", str(self.run_dir / CONFIG_FILE), "--out", str(self.run_dir)]
        )
        args += ["--name", name, "--progress", "quiet", *self.child_args]
        for key, value in self.options.get(name, {}).items():
            args += ["--transport-option", f"{key}={json.dumps(value)}"]
        log = open(directory / NODE_LOG_FILE, "ab")  # noqa: SIM115 - closed when the child ends
        process = subprocess.Popen(
            node_command(*args),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,  # Ctrl-C reaches the launcher, which stops children in turn
            preexec_fn=parent_death_signal(signal.SIGINT),
        )
        previous = self.children.get(name)
        self.children[name] = _Child(
            name=name, process=process, log=log, resumes=previous.resumes if previous else 0
        )
        self.pids[name] = process.pid
        self._offsets.setdefault(name, 0)
        self._write_processes()
        self._say(f"{name}: {'resumed' if resume else 'started'} as pid {process.pid}")

    def _write_processes(self) -> None:
        network = self.network.describe()
        write_json_atomic(
            self.run_dir / PROCESSES_FILE,
            {name: {"pid": pid, **network.get(name, {})} for name, pid in self.pids.items()},
        )

    def _supervise(self) -> None:
        while any(child.process.poll() is None for child in self.children.values()):
            if self.stopping:
                raise KeyboardInterrupt
            time.sleep(POLL_SECONDS)
            if self.stopping:  # a Ctrl-C during the sleep: nothing to repair any more
                raise KeyboardInterrupt
            repaired = self.network.check()
            for line in repaired:
                self._say(line)
            if repaired:
                self._write_processes()
            self._follow()
            for name, child in list(self.children.items()):
                code = child.process.poll()
                if code is None or child.reported:
                    continue
                child.log.close()
                child.reported = True
                if code == 0:
                    self._say(f"{name} (pid {child.process.pid}): finished")
                elif code < 0 and child.resumes < MAX_RESUMES:
                    child.resumes += 1
                    self._say(
                        f"{name} (pid {child.process.pid}) was killed by signal {-code}; "
                        f"resuming it from its last checkpoint ({child.resumes}/"
                        f"{MAX_RESUMES})"
                    )
                    self._follow()
                    self._spawn(name, resume=True)
                else:
                    tail = _tail(RunDir(self.run_dir).process_path(name) / NODE_LOG_FILE)
                    self.failed[name] = f"exit status {code}: {tail}"
                    self._say(
                        f"{name} (pid {child.process.pid}) failed with exit status "
                        f"{code}; the others go on. {tail}"
                    )

    def _stop_children(self) -> None:
        alive = [c for c in self.children.values() if c.process.poll() is None]
        for child in alive:
            child.process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + STOP_SECONDS
        for child in alive:
            try:
                child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.process.kill()
                child.process.wait(timeout=10)
        for child in self.children.values():
            child.log.close()

    # --- the log ------------------------------------------------------------------------------

    def _follow(self) -> None:
        """Reports the rounds and receptions the node processes logged since the last look."""
        for name in self.config.node_names:
            path = RunDir(self.run_dir).process_path(name) / EVENTS_FILE
            try:
                size = path.stat().st_size
            except OSError:
                continue
            offset = self._offsets.get(name, 0)
            if size < offset:  # a resumed node cut its log back to its checkpoint
                self._offsets[name] = size
                continue
            with open(path, "rb") as handle:
                handle.seek(offset)
                data = handle.read(size - offset)
            complete = data[: data.rfind(b"\n") + 1]
            self._offsets[name] = offset + len(complete)
            for line in complete.splitlines():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                self._report(name, event)

    def _report(self, name: str, event: Mapping[str, Any]) -> None:
        who = _who(name, self.pids.get(name))
        if event.get("event") in _RECEIVED:
            sender = str(event.get("from"))
            late = (
                " after its last round had started (delivered, not fought)"
                if event["event"] == EventKind.RECEIVED_LATE
                else ""
            )
            self._say(
                f"{who} received over {self.config.transport} the round "
                f"{event.get('from_round')} champion of {_who(sender, self.pids.get(sender))}"
                f"{late}"
            )
        elif event.get("event") == EventKind.ROUND:
            stats = event.get("stats") or {}
            self._say(
                f"{who}: round {int(event.get('round', 0))} of "
                f"{self.config.rounds} done, coverage {stats.get('coverage', 0):.1%}"
            )

    # --- merging ------------------------------------------------------------------------------

    def _merge(self) -> RunSummary:
        # Imported here: merging builds the domain and an evaluator, which the launcher itself
        # never needs (it only starts the node processes).
        from dei_framework.runtime.node.join import merge_node_processes

        extra = {}
        network = self.network.describe()
        for name in self.config.node_names:
            extra[name] = {"transport_process": network.get(name, {})}
            if name in self.pids:
                extra[name]["pid"] = self.pids[name]
            if name in self.failed:
                extra[name]["failed"] = self.failed[name]
        summary = merge_node_processes(self.config, RunDir(self.run_dir), self.registry, extra)
        edges: dict[tuple[str, str], list[int]] = {}  # [taken in, after the last round began]
        for event in _events(self.run_dir / EVENTS_FILE):
            if event.get("event") in _RECEIVED:
                key = (str(event.get("from")), str(event.get("node")))
                edges.setdefault(key, [0, 0])[event["event"] == EventKind.RECEIVED_LATE] += 1
        pids = {name: node.pid for name, node in summary.nodes.items()}
        self._say(f"champions delivered between OS processes over {self.config.transport}:")
        for (sender, receiver), (taken, late) in sorted(edges.items()):
            after = f" (+{late} after its last round had started)" if late else ""
            self._say(
                f"  {_who(sender, pids.get(sender))} -> "
                f"{_who(receiver, pids.get(receiver))}: {taken}{after}"
            )
        if not edges:
            self._say("  none")
        for name, node in summary.nodes.items():
            sharing = node.sharing or {}
            delivered = (sharing.get("transport") or {}).get("delivered")
            if delivered is not None:
                self._say(
                    f"  {_who(name, node.pid)}: {delivered} messages delivered by "
                    f"{self.config.transport}, {sharing.get('accepted', 0)} champions "
                    "taken in at a round start"
                )
        return summary


def _who(name: str, pid: Any) -> str:
    """A node as the launcher names it: with its process id when one ran in this launch (a
    node that had finished before a resume ran none)."""
    return f"{name} (pid {pid})" if pid else name


def _events(path: Path) -> list[dict[str, Any]]:
    return list(read_jsonl(path))


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])
