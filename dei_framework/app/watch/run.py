"""One run directory on disk, followed live: its event files, config, checkpoints and summary.

A run's events may sit in several files: ``events.jsonl`` at the top, and one per node process
in subdirectories when each node runs in its own process (AXL). Every ``events.jsonl`` under
the run directory is followed; when there are several, an event seen twice (a node's file and
a merged copy) counts once. Side files are re-read only when they change:

- ``config.json``: node names, operators, quotas, rounds, caps (all optional);
- ``checkpoint.json``: each node's usage (attempts, tokens, cost) a few seconds behind, and
  its current archive with program texts;
- ``summary.json``: the final figures once the run has finished;
- ``nodes/<node>/round-NNN.json``: the grid's axes, and the texts of past rounds' elites.
"""

from __future__ import annotations

import json
import mmap
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import orjson

from dei_framework.analysis.formatting import node_colors
from dei_framework.app.watch.lines import Evaluated, events
from dei_framework.app.watch.state import MAX_CAUSES, NodeState, RunState
from dei_framework.app.watch.tail import JsonlTail, Rewound
from dei_framework.runtime.files import run_layout
from dei_framework.runtime.files.run_layout import (
    CALLS_FILE,
    CHECKPOINT_FILE,
    CONFIG_FILE,
    EVENTS_FILE,
    SUMMARY_FILE,
)

#: Seconds between looks for new event files (node processes starting, repeats beginning).
RESCAN_SECONDS = 2.0
#: Bytes read per step while catching up with a large file.
CHUNK_BYTES = 1 << 20
#: Rounds of champion flow in the state (the most recent ones; totals are in ``edges``).
FLOW_ROUNDS = 30
#: A run whose files have not changed for this long (and has no summary) is shown as idle.
IDLE_SECONDS = 30.0


class _SideFile:
    """A whole-file JSON document re-read only when its size or modification time changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stamp: tuple[int, int] | None = None
        self.data: Any = None

    def poll(self) -> bool:
        """Re-reads the file if it changed; returns whether it did."""
        try:
            stat = self.path.stat()
        except OSError:
            changed, self.stamp, self.data = self.data is not None, None, None
            return changed
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp == self.stamp:
            return False
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return False  # being replaced; the next poll reads it
        self.stamp, self.data = stamp, data
        return True

    @property
    def mtime(self) -> float | None:
        return self.stamp[0] / 1e9 if self.stamp else None


@attrs.define
class _Source:
    """One followed ``events.jsonl`` and the directory around it."""

    dir: Path
    tail: JsonlTail
    config: _SideFile
    checkpoint: _SideFile


class WatchedRun:
    """Follows one run directory; :meth:`state` returns what ``/api/state`` serves.

    Thread-safe: concurrent requests take turns.

    Args:
        path: The run directory (it may not exist yet).
        label: How the run is named in the state (an experiment's ``condition/repeat-k``).
    """

    def __init__(self, path: str | Path, *, label: str = "") -> None:
        self.path = Path(path)
        self.label = label
        self._lock = threading.Lock()
        self._sources: dict[Path, _Source] = {}
        self._scanned = 0.0
        self._seen: set[tuple[Any, ...]] = set()
        self._dedup = False
        self._space_file: Any = None
        self._checkpoint_texts: dict[str, str] = {}
        self.summary = _SideFile(self.path / SUMMARY_FILE)
        self.version = 0
        self._reset()

    def _reset(self) -> None:
        self.model = RunState()
        self._seen.clear()
        for source in self._sources.values():
            source.tail = JsonlTail(source.tail.path)
        self.version += 1

    # --- reading --------------------------------------------------------------------------------

    def refresh(self, *, seconds: float | None = None) -> bool:
        """Reads what was appended since the last call.

        Args:
            seconds: Stop after about this long, even if behind (the state says how far);
                ``None`` reads everything.

        Returns:
            Whether anything new was read.
        """
        with self._lock:
            return self._refresh(seconds)

    def _refresh(self, seconds: float | None) -> bool:
        deadline = None if seconds is None else time.monotonic() + seconds
        now = time.monotonic()
        if now - self._scanned >= RESCAN_SECONDS or not self._sources:
            self._scanned = now
            if self._scan() and len(self._sources) > 1 and not self._dedup:
                # A second event file appeared: read all of them again, counting each event once.
                self._dedup = True
                self._reset()
        changed = False
        for source in list(self._sources.values()):
            changed |= source.config.poll()
            if source.checkpoint.poll():
                changed = True
                self._index_checkpoint()
        changed |= self.summary.poll()
        # Known before any event: config.json is written before a run logs anything.
        self.model.continual = self._config().get("lifecycle") == "continual"
        try:
            for source in list(self._sources.values()):
                while text := source.tail.read_text(None if deadline is None else CHUNK_BYTES):
                    changed = True
                    self._apply(text)
                    if deadline is not None and time.monotonic() >= deadline:
                        break
                if deadline is not None and time.monotonic() >= deadline:
                    break
        except Rewound:
            # `dei-run --resume` cut the log back to its checkpoint: start again.
            self._reset()
            return self._refresh(seconds)
        if changed:
            self.version += 1
        return changed

    def _scan(self) -> bool:
        """Looks for event files; returns whether new ones were found."""
        if not self.path.is_dir():
            return False
        known = len(self._sources)
        found = sorted(self.path.rglob(EVENTS_FILE), key=lambda p: (len(p.parts), p))
        directories = {path.parent for path in found} | {self.path}
        for directory in sorted(directories, key=lambda p: (len(p.parts), p)):
            if directory not in self._sources:
                self._sources[directory] = _Source(
                    dir=directory,
                    tail=JsonlTail(directory / EVENTS_FILE),
                    config=_SideFile(directory / CONFIG_FILE),
                    checkpoint=_SideFile(directory / CHECKPOINT_FILE),
                )
        return len(self._sources) > known

    def _apply(self, text: str) -> None:
        model, seen = self.model, self._seen
        for event in events(text):
            if self._dedup:
                key = _identity(event)
                if key is not None:
                    if key in seen:
                        continue
                    seen.add(key)
            if isinstance(event, Evaluated):
                model.evaluated(event)
            else:
                model.apply(event)

    def _index_checkpoint(self) -> None:
        texts: dict[str, str] = {}
        for source in self._sources.values():
            for state in _mapping(_mapping(source.checkpoint.data).get("nodes")).values():
                for elite in _mapping(_mapping(state).get("archive")).get("elites") or ():
                    if isinstance(elite, Mapping) and isinstance(elite.get("text"), str):
                        texts[str(elite.get("id"))] = elite["text"]
        self._checkpoint_texts = texts

    # --- the state ------------------------------------------------------------------------------

    def state(self, *, since: int | None = None, seconds: float | None = 0.5) -> dict[str, Any]:
        """Refreshes (for at most ``seconds``) and returns the run's state.

        Args:
            since: A ``version`` the caller already has: if nothing changed, only
                ``{"version": ..., "unchanged": true}`` is returned.
            seconds: Reading budget of this call (see :meth:`refresh`).
        """
        with self._lock:
            self._refresh(seconds)
            behind = sum(source.tail.behind for source in self._sources.values())
            if since is not None and since == self.version and not behind:
                return {"version": self.version, "unchanged": True}
            return self._state(behind)

    def _state(self, behind: int) -> dict[str, Any]:
        model = self.model
        config = self._config()
        summary = _mapping(self.summary.data)
        space = self._space(summary)
        cells = space.get("cells")
        offset = model.qd_offset if model.qd_offset is not None else space.get("qd_offset", 0.0)
        rounds = config.get("rounds") if isinstance(config.get("rounds"), int) else None
        quotas = self._quotas(config, summary)
        usage = self._usage(summary)
        cost_cap = config.get("max_cost_usd")
        nodes = self._node_states(
            config, summary, quotas=quotas, usage=usage, rounds=rounds, cells=cells, offset=offset
        )
        merged = {
            **model.merged.to_json(cells, offset),
            "curve": _curve(model.merged_curve.values(), cells, offset),
            "final": {k: v for k, v in _mapping(summary.get("merged")).items() if k != "per_round"}
            or None,
        }
        totals = _totals(usage)
        limit = (
            sum(quotas.values())
            if quotas and all(isinstance(q, int) for q in quotas.values())
            else None
        )
        newest = max((m for m in self._mtimes() if m is not None), default=None)
        started = min(
            (s.config.mtime for s in self._sources.values() if s.config.mtime), default=None
        )
        status = (
            "finished"
            if summary
            else "waiting"
            if not model.events
            else "running"
            if newest is not None and time.time() - newest < IDLE_SECONDS
            else "idle"
        )
        return {
            "version": self.version,
            "run": {
                "label": self.label,
                "path": str(self.path),
                "status": status,
                "domain": config.get("domain"),
                "transport": config.get("transport"),
                "sharing": config.get("sharing"),
                "seed": config.get("seed"),
                "rounds": rounds,
                "events": model.events,
                "behind_bytes": behind,
                "calls": model.calls,
                "limit": limit,
                "usage": totals,
                "max_cost_usd": cost_cap if isinstance(cost_cap, (int, float)) else None,
                "elapsed_s": round(newest - started, 3) if newest and started else None,
                "updated_s_ago": round(time.time() - newest, 3) if newest else None,
                "sources": len([s for s in self._sources.values() if s.tail.offset]),
            },
            "space": space,
            "nodes": nodes,
            "merged": merged,
            # A dynamic budget allocator's decisions, by round (empty for a static run).
            "allocation": [model.allocations[r] for r in sorted(model.allocations)],
            **self._flow(),
        }

    def _node_states(
        self,
        config: Mapping[str, Any],
        summary: Mapping[str, Any],
        *,
        quotas: Mapping[str, Any],
        usage: Mapping[str, Any],
        rounds: int | None,
        cells: Any,
        offset: float,
    ) -> list[dict[str, Any]]:
        """Every node's state, the configuration's nodes first (then any only the log names),
        each coloured as the report's plots colour it."""
        model = self.model
        operators = {node["name"]: node.get("operator") for node in config["nodes"]}
        names = list(dict.fromkeys([*operators, *model.nodes]))
        cost_cap = config.get("max_cost_usd")
        node_cost_cap = (
            cost_cap / len(names) if isinstance(cost_cap, (int, float)) and names else None
        )
        final_nodes = _mapping(summary.get("nodes"))
        nodes = [
            self._node_state(
                model.nodes.get(name) or NodeState(name),
                operator=operators.get(name),
                quota=quotas.get(name),
                rounds=rounds,
                usage=usage.get(name, {}),
                cost_cap=node_cost_cap,
                final=_mapping(final_nodes.get(name)),
                cells=cells,
                offset=offset,
            )
            for name in names
        ]
        colors = node_colors(names)  # the report's plots colour the nodes alike
        for node in nodes:
            node["color"] = colors[node["name"]]
        return nodes

    @staticmethod
    def _node_state(
        node: NodeState,
        *,
        operator: str | None,
        quota: int | None,
        rounds: int | None,
        usage: Mapping[str, Any],
        cost_cap: float | None,
        final: Mapping[str, Any],
        cells: int | None,
        offset: float,
    ) -> dict[str, Any]:
        """One entry of ``nodes`` (see docs/watch.md)."""
        causes = sorted(node.causes.items(), key=lambda item: -item[1])[:MAX_CAUSES]
        entry = {
            "name": node.name,
            "operator": operator or node.operator,
            "round": node.round,
            "rounds": rounds,
            "rounds_done": node.rounds_done,
            "round_calls": node.round_calls,
            "round_quota": _round_quota(quota, rounds, node.round),
            "calls": node.calls,
            "quota": quota,
            "invalid": node.invalid,
            "limits": dict(node.limits),
            "statuses": dict(node.statuses),
            "errors": [
                {"cause": cause, "count": count, "example": node.examples.get(cause, "")}
                for cause, count in causes
            ],
            "stopped": node.stopped or final.get("stopped"),
            "usage": dict(usage),
            "cost_cap_usd": cost_cap,
            "operator_status": final.get("operator_status"),
            "best_ever": node.best_ever,
            "round_stats": node.round_stats,
            "curve": _curve(node.curve.values(), cells, offset),
            **node.archive.to_json(cells, offset),
        }
        for key in ("pid", "transport"):  # written by one-process-per-node runs
            if key in final:
                entry[key] = final[key]
        return entry

    def _flow(self) -> dict[str, Any]:
        """Champions and transfers of the last :data:`FLOW_ROUNDS` rounds, and all-time edges."""
        model = self.model
        latest = max(
            [c["round"] for c in model.champions.values()]
            + [t.round for t in model.transfers[-1:]],
            default=0,
        )
        first = max(0, latest - FLOW_ROUNDS + 1)
        champions = [c for c in model.champions.values() if c["round"] >= first]
        transfers = []
        for transfer in reversed(model.transfers):
            if transfer.round < first:
                break
            transfers.append(transfer.to_json())
        return {
            "flow_from_round": first,
            "champions": sorted(champions, key=lambda c: (c["round"], c["node"])),
            "transfers": transfers[::-1],
            "transfers_total": len(model.transfers),
            "edges": model.edges(),
        }

    def _mtimes(self) -> list[float | None]:
        stamps = []
        for source in self._sources.values():
            try:
                stamps.append(source.tail.path.stat().st_mtime)
            except OSError:
                pass
            stamps.append(source.checkpoint.mtime)
        stamps.append(self.summary.mtime)
        return stamps

    def _config(self) -> dict[str, Any]:
        """The run's configuration; several node processes' configs are joined by node name."""
        merged: dict[str, Any] = {}
        nodes: dict[str, Any] = {}
        for source in self._sources.values():
            data = _mapping(source.config.data)
            for key, value in data.items():
                merged.setdefault(key, value)
            for node in data.get("nodes") or ():
                if isinstance(node, Mapping) and isinstance(node.get("name"), str):
                    nodes.setdefault(node["name"], dict(node))
        merged["nodes"] = list(nodes.values())
        return merged

    def _quotas(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> dict[str, int]:
        quotas: dict[str, Any] = {}
        for name, info in _mapping(_mapping(summary.get("budget")).get("nodes")).items():
            if isinstance(_mapping(info).get("quota"), int):
                quotas[name] = info["quota"]
        if quotas:
            return quotas
        from dei_framework.contract.errors import DEIError
        from dei_framework.runtime.config.run_config import RunConfig

        fields = attrs.fields_dict(RunConfig)
        try:
            run_config = RunConfig.from_json({k: v for k, v in config.items() if k in fields})
            return dict(run_config.node_quotas())
        except (DEIError, TypeError, ValueError, KeyError):
            return {}

    def _usage(self, summary: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        final = _mapping(_mapping(summary.get("budget")).get("nodes"))
        if final:
            return {name: dict(_mapping(info)) for name, info in final.items()}
        usage: dict[str, dict[str, Any]] = {}
        for source in self._sources.values():
            for name, state in _mapping(_mapping(source.checkpoint.data).get("nodes")).items():
                if isinstance(_mapping(state).get("usage"), Mapping):
                    usage[name] = dict(state["usage"])
        return usage

    def _space(self, summary: Mapping[str, Any]) -> dict[str, Any]:
        """The grid: from a checkpoint or round file (axes and bins), the summary (shape), or
        the cells seen so far (``inferred``)."""
        axes_json = self._axes_json()
        if axes_json is not None:
            from dei_framework.contract.descriptors import DescriptorSpace

            try:
                space = DescriptorSpace.from_json(axes_json["space"])
                return {
                    "axes": list(space.names),
                    "shape": list(space.shape),
                    "cells": space.cells,
                    "labels": [axis.labels() for axis in space.axes],
                    "qd_offset": axes_json.get("qd_offset", 0.0),
                    "inferred": False,
                }
            except Exception:  # an axis kind this version does not know: fall through
                pass
        known = _mapping(summary.get("space"))
        if known.get("shape"):
            return {
                "axes": known.get("axes", []),
                "shape": known["shape"],
                "cells": known.get("cells"),
                "labels": None,
                "qd_offset": 0.0,
                "inferred": False,
            }
        shape = list(self.model.extent)
        return {
            "axes": [f"axis {i}" for i in range(len(shape))],
            "shape": shape,
            "cells": None,
            "labels": None,
            "qd_offset": 0.0,
            "inferred": True,
        }

    def _axes_json(self) -> dict[str, Any] | None:
        if self._space_file is not None:
            return self._space_file
        for source in self._sources.values():
            for state in _mapping(_mapping(source.checkpoint.data).get("nodes")).values():
                archive = _mapping(_mapping(state).get("archive"))
                if archive.get("space"):
                    self._space_file = archive
                    return archive
        for path in run_layout.round_paths_below(self.path)[:1]:
            try:
                archive = json.loads(path.read_bytes()).get("archive") or {}
            except (OSError, ValueError):
                continue
            if archive.get("space"):
                self._space_file = {k: v for k, v in archive.items() if k != "elites"}
                return self._space_file
        return None

    # --- program texts --------------------------------------------------------------------------

    def elite(self, elite_id: str) -> dict[str, Any]:
        """What is known of one elite, with its program text when it can be found.

        ``text_source`` says where the text came from: ``archive`` (the program as the archive
        holds it) or ``reply`` (the operator's raw reply, for an elite of the round in
        progress that no checkpoint holds yet); ``None`` when it was not found.
        """
        with self._lock:
            found = self._find_cell(elite_id)
            text = self.model.texts.get(elite_id) or self._checkpoint_texts.get(elite_id)
            if text is None and found is not None:
                text = self._round_file_text(elite_id, found.get("node"), found.get("round"))
            source = "archive" if text is not None else None
            if text is None:
                text = self._call_text(elite_id)
                source = "reply" if text is not None else None
        return {"id": elite_id, **(found or {}), "text": text, "text_source": source}

    def _find_cell(self, elite_id: str) -> dict[str, Any] | None:
        for archive in [self.model.merged, *(n.archive for n in self.model.nodes.values())]:
            for cell, elite in archive.cells.items():
                if elite.id == elite_id:
                    return elite.to_json(cell)
        for champion in self.model.champions.values():
            if champion.get("id") == elite_id:
                return dict(champion)
        return None

    def _round_file_text(self, elite_id: str, node: Any, round_index: Any) -> str | None:
        if not isinstance(node, str) or not isinstance(round_index, int):
            return None
        for source in self._sources.values():
            path = run_layout.round_path(source.dir, node, round_index)
            try:
                archive = json.loads(path.read_bytes()).get("archive") or {}
            except (OSError, ValueError):
                continue
            for elite in archive.get("elites") or ():
                if elite.get("id") == elite_id and isinstance(elite.get("text"), str):
                    return elite["text"]
        return None

    def _call_text(self, elite_id: str) -> str | None:
        """The reply text of the operator call that made ``elite_id`` (``calls.jsonl``).

        Searched from the end, where the current round's calls are, without parsing the file.
        """
        needle = b'"id":' + orjson.dumps(elite_id) + b","  # as runlog.dumps writes it
        for source in self._sources.values():
            path = source.dir / CALLS_FILE
            try:
                with (
                    open(path, "rb") as handle,
                    mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data,
                ):
                    at = data.rfind(needle)
                    if at < 0:
                        continue
                    start = data.rfind(b"\n", 0, at) + 1
                    end = data.find(b"\n", at)
                    line = data[start : end if end >= 0 else len(data)]
            except (OSError, ValueError):
                continue
            try:
                reply = json.loads(line).get("reply") or {}
            except ValueError:
                continue
            if isinstance(reply.get("text"), str):
                return reply["text"]
        return None


def _identity(event: Evaluated | Mapping[str, Any]) -> tuple[Any, ...] | None:
    """What makes an event the same event in two files (``None``: never deduplicated)."""
    if isinstance(event, Evaluated):
        return ("evaluated", event.node, event.id) if event.id else None
    kind = event.get("event")
    if kind == "evaluated" and event.get("id"):
        return ("evaluated", event.get("node"), event["id"])
    if kind == "round":
        return ("round", event.get("node"), event.get("round"))
    if kind == "received":
        return (
            "received",
            event.get("node"),
            event.get("round"),
            event.get("from"),
            event.get("from_round"),
            hash(event.get("program")),
        )
    if kind == "node_stopped":
        return ("node_stopped", event.get("node"), event.get("round"))
    return None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _round_quota(quota: int | None, rounds: int | None, round_index: int) -> int | None:
    """Calls of round ``round_index``: the node's quota spread evenly (as the search loop)."""
    if not isinstance(quota, int) or not rounds:
        return None
    base, extra = divmod(quota, rounds)
    return base + (1 if round_index < extra else 0)


def _curve(points: list[tuple[float, ...]], cells: int | None, offset: float) -> list[list]:
    """``[calls, coverage, qd_score]`` rows (coverage ``null`` while the grid is unknown)."""
    return [
        [x, round(n / cells, 6) if cells else None, round(total - offset * n, 6)]
        for x, n, total in points
    ]


def _totals(usage: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Numeric usage fields summed over nodes; a ``None`` (an unknown price) stays unknown."""
    totals: dict[str, Any] = {}
    for info in usage.values():
        for key, value in info.items():
            if key == "quota" or isinstance(value, bool):
                continue
            if value is None:
                totals[key] = None
            elif isinstance(value, (int, float)) and (key not in totals or totals[key] is not None):
                totals[key] = totals.get(key, 0) + value
    return totals
