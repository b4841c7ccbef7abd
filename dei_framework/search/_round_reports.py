"""Round reports: what a budget allocation needs to know of one node's round (its archive's
cells and its calls), made from the node's archive or received from a peer, and the credits
each node earns from the reports of one round."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.records import Candidate
from dei_framework.search._allocators import RoundCredit
from dei_framework.search.archives import ArchiveBase

#: An operator-made elite's id ends with its call slot (``node-0-r2-s17``).
_CALL_ID = re.compile(r"-r\d+-s\d+$")
#: A received champion evaluated by its receiver (``node-1-r2-p0``).
_PEER_ID = re.compile(r"-r\d+-p\d+$")
#: Most cells one round report may list (the wire bound of a report: a few hundred KB).
MAX_REPORT_CELLS = 20_000


@attrs.frozen(kw_only=True)
class RoundReport:
    """What the allocation needs to know of one node's round: its archive's cells at the
    round's end and the calls it spent. In one process it is made from the node's archive; a
    node in a process of its own publishes it with its champions, so that every node makes the
    same decision from the same reports.

    Attributes:
        node: The node's name.
        round: The round it ended.
        calls: Calls it spent in the round.
        total: Calls it had spent in all, at the round's end.
        found: Cells (see :func:`cell_key`) of elites its own calls made, in archive order.
        held: Cells of its other elites (initial programs, received champions).
        landed: Per sender: that peer's champions holding a cell of this node's archive.
        done: The node runs no more rounds (finished, stopped or failed); ``round`` is then
            the first round it did not end, and ``total`` all it spent.
    """

    node: str
    round: int
    calls: int
    total: int
    found: tuple[str, ...] = ()
    held: tuple[str, ...] = ()
    landed: Mapping[str, int] = attrs.field(factory=dict)
    done: bool = False

    @classmethod
    def from_archive(
        cls,
        node: str,
        round_index: int,
        archive: ArchiveBase | Mapping[str, Any],
        calls: int,
        space: DescriptorSpace,
        *,
        total: int = 0,
    ) -> RoundReport:
        """The report of a node's round from its archive at the round's end (or the archive's
        JSON, from a round file)."""
        found: list[str] = []
        held: list[str] = []
        landed: dict[str, int] = {}
        for elite in _elites(archive):
            cell = cell_key(_merged_cell(elite, node, space))
            if _CALL_ID.search(elite.id or ""):
                found.append(cell)
                continue
            held.append(cell)
            if _PEER_ID.search(elite.id or "") and (elite.operator or "").startswith("peer:"):
                sender = elite.operator.removeprefix("peer:")
                landed[sender] = landed.get(sender, 0) + 1
        return cls(
            node=node,
            round=round_index,
            calls=int(calls),
            total=int(total),
            found=tuple(found),
            held=tuple(held),
            landed=landed,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "round": self.round,
            "calls": self.calls,
            "total": self.total,
            "found": list(self.found),
            "held": list(self.held),
            "landed": dict(self.landed),
            "done": self.done,
        }

    @classmethod
    def from_json(cls, data: Any) -> RoundReport:
        """Reads :meth:`to_json` output, checking every field (it may come from a peer).

        Raises:
            ValueError: A field is missing, of the wrong type or out of bounds.
        """
        if not isinstance(data, Mapping):
            raise ValueError("a round report is a JSON object")

        def number(key: str) -> int:
            value = data.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**12:
                raise ValueError(f"round report: {key} is {value!r}")
            return value

        def cells(key: str) -> tuple[str, ...]:
            value = data.get(key)
            if (
                not isinstance(value, list)
                or len(value) > MAX_REPORT_CELLS
                or not all(isinstance(cell, str) and len(cell) <= 256 for cell in value)
            ):
                raise ValueError(f"round report: {key} is not a list of cells")
            return tuple(value)

        landed = data.get("landed")
        if (
            not isinstance(landed, Mapping)
            or len(landed) > 1024
            or not all(
                isinstance(k, str)
                and len(k) <= 64
                and isinstance(v, int)
                and not isinstance(v, bool)
                and 0 <= v <= MAX_REPORT_CELLS
                for k, v in landed.items()
            )
        ):
            raise ValueError("round report: landed is not a map of sender to count")
        node = data.get("node")
        if not isinstance(node, str) or not node or len(node) > 64:
            raise ValueError(f"round report: node is {node!r}")
        if not isinstance(data.get("done"), bool):
            raise ValueError(f"round report: done is {data.get('done')!r}")
        return cls(
            node=node,
            round=number("round"),
            calls=number("calls"),
            total=number("total"),
            found=cells("found"),
            held=cells("held"),
            landed=dict(landed),
            done=data["done"],
        )


def cell_key(cell: Any) -> str:
    """A merged-archive cell as a short string: ``"3,4"``, or ``"node-0/3,4"`` for a cell of
    a node's own axes (same cell, same string, in every process)."""
    if cell and isinstance(cell[0], str):
        return f"{cell[0]}/{','.join(map(str, cell[1]))}"
    return ",".join(map(str, cell))


def report_credits(reports: Sequence[RoundReport], known: set[str]) -> dict[str, RoundCredit]:
    """Each node's credit for one round, from the nodes' reports of that round (in run order).

    Args:
        reports: One report per node that ended the round.
        known: The merged archive's cells before the round; updated with the round's cells.
    """
    finders: dict[str, list[str]] = {}
    names = {report.node for report in reports}
    landed = dict.fromkeys((report.node for report in reports), 0)
    reached: set[str] = set()
    for report in reports:
        reached.update(report.held)
        for cell in report.found:
            reached.add(cell)
            if cell not in known:
                finders.setdefault(cell, [])
                if report.node not in finders[cell]:
                    finders[cell].append(report.node)
        for sender, count in report.landed.items():
            if sender in names and sender != report.node:
                landed[sender] += count
    new_cells = dict.fromkeys(landed, 0.0)
    for nodes in finders.values():
        for node in nodes:
            new_cells[node] += 1.0 / len(nodes)
    known.update(reached)
    return {
        report.node: RoundCredit(
            spent=report.calls, new_cells=new_cells[report.node], landed=landed[report.node]
        )
        for report in reports
    }


def _elites(archive: ArchiveBase | Mapping[str, Any]) -> Iterable[Candidate]:
    """An archive's elites, from the archive or its JSON (a round file read on resume)."""
    if isinstance(archive, Mapping):
        return [Candidate.from_json(elite) for elite in archive["elites"]]
    return archive


def _merged_cell(elite: Any, node: str, space: DescriptorSpace) -> Any:
    try:
        return space.cell(elite.descriptor)
    except KeyError:  # an array-path elite keeps its node's own axes only
        return (node, tuple(elite.cell))
