"""The live picture of one run, built incrementally from its events.

:class:`RunState` takes the objects of ``events.jsonl`` one at a time (in file order) and keeps
what the watch page shows: each node's current archive (the round's, filled cell by cell, as
the search loop fills it), the merged archive (best elite per cell over the nodes' current
archives — at the end of a run, exactly the merged archive of ``summary.json``), each round's
champion, every champion transfer between nodes and what became of it, error causes, and
coverage / QD-score curves. Nodes are discovered from the events; unknown event kinds and
fields are ignored, so newer writers do not break it.

Work per event is constant (a round change costs one pass over the grid's filled cells), and
memory is bounded by the grid, the rounds and the curves' resolution, not by the events.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from dei_framework.app.watch.lines import Evaluated
from dei_framework.contract.payloads import JSONValue
from dei_framework.evaluation.sandbox.limits import stop_kind

#: Points kept per curve; older points are thinned (every other one dropped) beyond this.
CURVE_POINTS = 400
#: Error causes listed per node (the most frequent ones).
MAX_CAUSES = 6
#: Event kinds of candidates that are not operator calls (re-evaluated opponents, peers).
NOT_CALLS = frozenset({"warm", "peer"})
#: Archive statuses of an admitted candidate.
ADMITTED = frozenset({"new", "improve_existing"})


class Curve:
    """A thinned time series: at most about :data:`CURVE_POINTS` points, always the latest."""

    def __init__(self, limit: int = CURVE_POINTS) -> None:
        self.limit = limit
        self.points: list[tuple[float, ...]] = []
        self.stride = 1
        self._skipped = 0
        self._last: tuple[float, ...] | None = None

    def add(self, *point: float) -> None:
        self._last = point
        self._skipped += 1
        if self._skipped < self.stride:
            return
        self._skipped = 0
        self.points.append(point)
        if len(self.points) >= self.limit:
            self.points = self.points[::2]
            self.stride *= 2

    def values(self) -> list[tuple[float, ...]]:
        if self._last is not None and (not self.points or self.points[-1] is not self._last):
            return [*self.points, self._last]
        return list(self.points)


@attrs.define
class Cell:
    """The elite of one cell of a current archive."""

    id: str
    fitness: float
    node: str
    round: int
    operator: str
    kind: str
    #: A mapping, or its JSON text as read from the event line (parsed when first shown).
    descriptor: Mapping[str, float] | str

    def to_json(self, cell: tuple[int, ...]) -> dict[str, Any]:
        if isinstance(self.descriptor, str):
            self.descriptor = json.loads(self.descriptor)
        return {
            "cell": list(cell),
            "fitness": self.fitness,
            "id": self.id,
            "node": self.node,
            "round": self.round,
            "operator": self.operator,
            "kind": self.kind,
            "descriptor": dict(self.descriptor),
        }


class Archive:
    """Filled cells with a running fitness sum, enough for coverage and QD-score."""

    def __init__(self) -> None:
        self.cells: dict[tuple[int, ...], Cell] = {}
        self.fitness_sum = 0.0
        self.best: tuple[int, ...] | None = None

    def put(self, cell: tuple[int, ...], elite: Cell) -> None:
        old = self.cells.get(cell)
        self.fitness_sum += elite.fitness - (old.fitness if old is not None else 0.0)
        self.cells[cell] = elite
        best = self.cells.get(self.best) if self.best is not None else None
        # As GridArchive.best: highest fitness, ties to the lowest cell index.
        if (
            best is None
            or elite.fitness > best.fitness
            or (elite.fitness == best.fitness and cell < self.best)
        ):
            self.best = cell

    def clear(self) -> None:
        self.cells.clear()
        self.fitness_sum = 0.0
        self.best = None

    def qd_score(self, offset: float) -> float:
        return self.fitness_sum - offset * len(self.cells)

    def to_json(self, cells: int | None, offset: float) -> dict[str, Any]:
        best = self.cells.get(self.best) if self.best is not None else None
        return {
            "num_elites": len(self.cells),
            "coverage": len(self.cells) / cells if cells else None,
            "qd_score": self.qd_score(offset),
            "best": best.to_json(self.best) if best is not None else None,
            "cells": [elite.to_json(cell) for cell, elite in sorted(self.cells.items())],
        }


@attrs.define
class Transfer:
    """A champion one node published and another took in at a round's start."""

    sender: str
    sender_round: int
    receiver: str
    round: int
    operator: str
    #: ``pending`` until re-evaluated; then ``filled`` (took an empty cell), ``taken`` (its
    #: cell was already occupied) or ``invalid``.
    status: str = "pending"
    cell: tuple[int, ...] | None = None
    fitness: float | None = None
    #: The cell was empty in the receiver's previous round (DEI's niche novelty).
    novel: bool | None = None
    id: str | None = None
    error: str | None = None
    #: The program text (served on hover, not listed in the state).
    program: str | None = attrs.field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "from": self.sender,
            "from_round": self.sender_round,
            "to": self.receiver,
            "round": self.round,
            "operator": self.operator,
            "status": self.status,
            "cell": list(self.cell) if self.cell is not None else None,
            "fitness": self.fitness,
            "novel": self.novel,
            "id": self.id,
            "error": self.error,
        }


class NodeState:
    """What is known about one node from the events so far."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.operator: str | None = None
        self.round = 0
        self.rounds_done = 0
        self.calls = 0
        self.round_calls = 0
        self.invalid = 0
        #: Invalid candidates a limit or the sandbox stopped, by kind (timeout, memory, ...).
        self.limits: dict[str, int] = {}
        self.statuses: dict[str, int] = {}
        self.causes: dict[str, int] = {}
        self.examples: dict[str, str] = {}
        self.archive = Archive()
        self.previous_cells: frozenset[tuple[int, ...]] = frozenset()
        self.round_stats: list[dict[str, Any]] = []
        self.stopped: str | None = None
        self.curve = Curve()
        self.best_ever: float | None = None

    def start_round(self, round_index: int, *, keep_archive: bool = False) -> None:
        """A new round: a fresh archive (``reset`` lifecycle: the search loop starts each round
        from scratch), or the same one (``continual``: ``keep_archive``)."""
        self.previous_cells = frozenset(self.archive.cells)
        if not keep_archive:
            self.archive.clear()
        self.round = round_index
        self.round_calls = 0


class RunState:
    """The watch page's model of one run, fed event by event.

    Example:
        >>> state = RunState()
        >>> state.apply_all([{"event": "evaluated", "node": "n0", "round": 0, "kind": "new",
        ...     "id": "n0-r0-s0", "status": "new", "fitness": 1.0, "cell": [0, 1],
        ...     "descriptor": {"x": 0.5}, "operator": "gp"}])
        >>> state.nodes["n0"].calls, len(state.merged.cells)
        (1, 1)
    """

    def __init__(self) -> None:
        self.nodes: dict[str, NodeState] = {}
        self.merged = Archive()
        self.merged_curve = Curve()
        self.calls = 0
        self.events = 0
        self.kinds: dict[str, int] = {}
        self.champions: dict[tuple[str, int], dict[str, Any]] = {}
        self.transfers: list[Transfer] = []
        self._pending: dict[tuple[str, int], list[Transfer]] = {}
        #: Program texts the events carried (champions, received programs), by elite id.
        self.texts: dict[str, str] = {}
        #: QD offset reported by the run (``stats.qd_offset`` of round events).
        self.qd_offset: float | None = None
        #: Largest cell index seen per axis (the grid's extent when nothing else tells it).
        self.extent: list[int] = []
        #: The run keeps its archives across rounds (``lifecycle = "continual"``).
        self.continual = False
        #: A dynamic budget allocator's decisions (``allocation`` events), by round.
        self.allocations: dict[int, dict[str, Any]] = {}

    # --- feeding --------------------------------------------------------------------------------

    def apply_all(self, events: Iterable[Mapping[str, Any]]) -> None:
        for event in events:
            self.apply(event)

    def apply(self, event: Mapping[str, JSONValue]) -> None:
        """Takes one event (any kind; unknown kinds are only counted)."""
        kind = event.get("event")
        name = event.get("node")
        if kind == "evaluated" and isinstance(name, str):
            get = event.get
            fitness = get("fitness")
            self.evaluated(
                Evaluated(
                    name,
                    get("round"),
                    _text(get("kind")),
                    _text(get("status")),
                    float(fitness)
                    if isinstance(fitness, (int, float)) and not isinstance(fitness, bool)
                    else None,
                    _cell(get("cell")),
                    str(get("id") or ""),
                    str(get("operator") or ""),
                    get("descriptor") or {},
                    get("error"),
                )
            )
            return
        self.events += 1
        if type(kind) is not str:
            kind = _text(kind)
        kinds = self.kinds
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind == "allocation":  # a decision for every node: it names none
            self._allocation(event)
            return
        if not isinstance(name, str):
            return
        node = self.node(name)
        if kind == "received":
            self._enter_round(node, event.get("round"))
            self._received(node, event)
        elif kind == "round":
            self._round(node, event)
        elif kind == "node_stopped":
            node.stopped = str(event.get("reason") or "stopped")

    def _allocation(self, event: Mapping[str, Any]) -> None:
        """Keeps what the page shows of a decision: quotas, shares and the rewards behind them."""
        round_index = event.get("round")
        if not isinstance(round_index, int) or isinstance(round_index, bool):
            return
        if event.get("kept") and round_index in self.allocations:
            # A node process that did not hear from a peer in time kept its own last quota:
            # the decision the others made stays, with that quota in it.
            self.allocations[round_index]["quotas"].update(_mapping(event.get("quotas")))
            return
        self.allocations[round_index] = {
            "round": round_index,
            "allocator": _text(event.get("allocator")),
            "budget": event.get("budget"),
            "quotas": dict(_mapping(event.get("quotas"))),
            "share": dict(_mapping(event.get("share"))),
            "reward": dict(_mapping(event.get("reward"))),
        }

    def node(self, name: str) -> NodeState:
        """The node called ``name`` (created empty on first mention)."""
        node = self.nodes.get(name)
        if node is None:
            node = self.nodes[name] = NodeState(name)
        return node

    def _enter_round(self, node: NodeState, round_index: Any) -> None:
        if isinstance(round_index, int) and round_index > node.round:
            node.start_round(round_index, keep_archive=self.continual)
            if not self.continual:
                self._remerge()

    def _remerge(self) -> None:
        self.merged.clear()
        for node in self.nodes.values():
            for cell, elite in node.archive.cells.items():
                held = self.merged.cells.get(cell)
                if held is None or elite.fitness > held.fitness:
                    self.merged.put(cell, elite)

    def evaluated(self, event: Evaluated) -> None:
        """Takes one ``evaluated`` event given as its fields (nearly every event is one).

        Work per event is a few dict operations; nothing is copied or recomputed per event
        except at a round change.
        """
        self.events += 1
        kinds = self.kinds
        kinds["evaluated"] = kinds.get("evaluated", 0) + 1
        node = self.nodes.get(event.node) or self.node(event.node)
        self._enter_round(node, event.round)
        kind, status = event.kind, event.status
        statuses = node.statuses
        statuses[status] = statuses.get(status, 0) + 1
        current = event.round == node.round
        if kind not in NOT_CALLS:
            node.calls += 1
            self.calls += 1
            node.round_calls += current
            if node.operator is None and event.operator:
                node.operator = event.operator
            if status == "invalid":
                node.invalid += 1
                kind = stop_kind(event.error)
                if kind is not None:
                    node.limits[kind] = node.limits.get(kind, 0) + 1
        if status == "invalid":
            cause = error_cause(event.error)
            node.causes[cause] = node.causes.get(cause, 0) + 1
            node.examples.setdefault(cause, str(event.error or "")[:300])
        if kind == "peer":
            self._landed(node, event)
        if status in ADMITTED and current and event.cell is not None and event.fitness is not None:
            self._admit(node, event)
        archive, merged = node.archive, self.merged
        node.curve.add(node.calls, len(archive.cells), archive.fitness_sum)
        self.merged_curve.add(self.calls, len(merged.cells), merged.fitness_sum)

    def _admit(self, node: NodeState, event: Evaluated) -> None:
        cell = event.cell
        self._note_extent(cell)
        elite = Cell(
            id=event.id,
            fitness=event.fitness,
            node=node.name,
            round=node.round,
            operator=event.operator,
            kind=event.kind,
            descriptor=event.descriptor,
        )
        node.archive.put(cell, elite)
        if node.best_ever is None or elite.fitness > node.best_ever:
            node.best_ever = elite.fitness
        # Within a round a cell's fitness only rises, and the merge holds only current rounds'
        # elites, so the best per cell stays the best (ties keep the holder).
        held = self.merged.cells.get(cell)
        if held is None or elite.fitness > held.fitness:
            self.merged.put(cell, elite)

    def _received(self, node: NodeState, event: Mapping[str, Any]) -> None:
        transfer = Transfer(
            sender=str(event.get("from") or "?"),
            sender_round=_int(event.get("from_round")),
            receiver=node.name,
            round=node.round,
            operator=str(event.get("operator") or ""),
            program=event.get("program") if isinstance(event.get("program"), str) else None,
        )
        self.transfers.append(transfer)
        self._pending.setdefault((node.name, node.round), []).append(transfer)

    def _landed(self, node: NodeState, event: Evaluated) -> None:
        """Matches a re-evaluated peer champion to its ``received`` event (by sender, in order)."""
        operator = event.operator
        sender = operator.split(":", 1)[1] if operator.startswith("peer:") else None
        queue = self._pending.get((node.name, node.round), [])
        transfer = next((t for t in queue if sender is None or t.sender == sender), None)
        if transfer is None:
            return
        queue.remove(transfer)
        transfer.id = event.id or None
        if transfer.id is not None and transfer.program is not None:
            self.texts[transfer.id] = transfer.program
        transfer.cell = cell = event.cell
        transfer.fitness = event.fitness
        if event.status == "invalid" or cell is None:
            transfer.status = "invalid"
            transfer.error = str(event.error or "") or None
        else:
            transfer.status = "filled" if event.status in ADMITTED else "taken"
            transfer.novel = cell not in node.previous_cells

    def _round(self, node: NodeState, event: Mapping[str, Any]) -> None:
        round_index = _int(event.get("round"))
        node.rounds_done = max(node.rounds_done, round_index + 1)
        stats = event.get("stats") if isinstance(event.get("stats"), Mapping) else {}
        offset = stats.get("qd_offset")
        if isinstance(offset, (int, float)):
            self.qd_offset = float(offset)
        node.round_stats.append(
            {
                "round": round_index,
                "coverage": stats.get("coverage"),
                "qd_score": stats.get("qd_score"),
                "num_elites": stats.get("num_elites"),
                "calls": event.get("calls"),
                "niche_novelty": event.get("niche_novelty"),
            }
        )
        champion = event.get("champion")
        if isinstance(champion, Mapping):
            text = champion.get("text")
            if isinstance(text, str) and champion.get("id"):
                self.texts[str(champion["id"])] = text
            self.champions[(node.name, round_index)] = {
                "node": node.name,
                "round": round_index,
                "id": champion.get("id"),
                "fitness": champion.get("fitness"),
                "cell": champion.get("cell"),
                "descriptor": champion.get("descriptor"),
                "operator": champion.get("operator"),
            }

    def _note_extent(self, cell: tuple[int, ...]) -> None:
        if len(self.extent) < len(cell):
            self.extent += [0] * (len(cell) - len(self.extent))
        for axis, index in enumerate(cell):
            if index + 1 > self.extent[axis]:
                self.extent[axis] = index + 1

    # --- reading --------------------------------------------------------------------------------

    def edges(self) -> list[dict[str, Any]]:
        """Transfers summed per (sender, receiver)."""
        totals: dict[tuple[str, str], Counter[str]] = {}
        for transfer in self.transfers:
            counts = totals.setdefault((transfer.sender, transfer.receiver), Counter())
            counts["sent"] += 1
            counts[transfer.status] += 1
            counts["novel"] += bool(transfer.novel)
        return [
            {
                "from": sender,
                "to": receiver,
                "sent": c["sent"],
                "filled": c["filled"],
                "taken": c["taken"],
                "invalid": c["invalid"],
                "pending": c["pending"],
                "novel": c["novel"],
            }
            for (sender, receiver), c in sorted(totals.items())
        ]


def error_cause(error: Any) -> str:
    """A short cause for grouping errors: the first line, numbers and quoted parts elided."""
    text = str(error or "unknown error").strip().splitlines()[0] if error else "unknown error"
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return text[:120]


def _cell(value: Any) -> tuple[int, ...] | None:
    if type(value) is list and all(type(i) is int for i in value):
        return tuple(value)
    return None


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
