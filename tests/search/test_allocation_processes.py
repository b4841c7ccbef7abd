"""The allocation of nodes in processes of their own, without a network: one coordinator per
node, round reports delivered by hand (late, out of order, or never).

Every process must make the same decision from the same reports, whatever order they come in;
a node that hears nothing from a peer within ``peer_wait`` keeps its last quota. The same over
real AXL node processes: tests/transports/test_axl_allocation.py.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

import pytest

from dei_framework.contract.descriptors import DescriptorSpace, UniformAxis
from dei_framework.contract.records import Candidate
from dei_framework.search.allocation import AllocationCoordinator, BanditAllocator, RoundReport

NAMES = ("a", "b", "c")
ROUNDS = 4
BUDGET = 120


class Network:
    """Reports between coordinators; a receiver takes what waits for it when it polls."""

    def __init__(self) -> None:
        self.queues: dict[str, list[RoundReport]] = defaultdict(list)
        self.coordinators: dict[str, AllocationCoordinator] = {}
        #: (sender, receiver) pairs whose reports are delivered newest first.
        self.reversed: set[tuple[str, str]] = set()
        #: (sender, receiver) pairs whose last round report comes only after the sender's
        #: "done", one poll later.
        self.late: set[tuple[str, str]] = set()
        self._held: dict[str, list[RoundReport]] = defaultdict(list)
        #: senders nobody hears from.
        self.silent: set[str] = set()

    def publish(self, report: RoundReport) -> None:
        if report.node not in self.silent:
            for name in self.coordinators:
                if name != report.node:
                    self.queues[name].append(report)

    def poll(self, name: str) -> None:
        waiting, self.queues[name] = self.queues[name], []
        held, self._held[name] = self._held[name], []
        for report in waiting:
            if (report.node, name) in self.late and not report.done:
                self._held[name].append(report)  # until its sender's "done" has come
        waiting = [r for r in waiting if r not in self._held[name]]
        if any(r.done for r in waiting):
            self._held[name] += held
        else:
            waiting = held + waiting
        by_sender = defaultdict(list)
        for report in waiting:
            by_sender[report.node].append(report)
        for sender, reports in by_sender.items():
            if (sender, name) in self.reversed:
                reports.reverse()
            for report in reports:
                self.coordinators[name].report_received(report)


def _space() -> DescriptorSpace:
    return DescriptorSpace([UniformAxis("x", 0.0, 100.0, 100)])


def _archive(name: str, round_index: int, cells: range) -> dict:
    """A node's archive at a round's end: one elite of its own calls per cell."""
    return {
        "elites": [
            Candidate(
                text=f"{name}{x}",
                id=f"{name}-r{round_index}-s{x}",
                descriptor={"x": float(x)},
                node=name,
                operator="op",
                round=round_index,
            ).to_json()
            for x in cells
        ]
    }


async def _run(
    network: Network, *, stop_after: dict[str, int] | None = None, wait: float = 30.0
) -> dict[str, dict[int, dict]]:
    """Every node runs its rounds against its own coordinator; returns each one's log."""
    logs: dict[str, dict[int, dict]] = {name: {} for name in NAMES}
    spent: dict[str, int] = dict.fromkeys(NAMES, 0)

    def record(name: str):
        def log(events: list[dict]) -> None:
            for event in events:
                if event["event"] == "allocation":
                    logs[name][event["round"]] = event

        return log

    for name in NAMES:
        network.coordinators[name] = AllocationCoordinator(
            BanditAllocator(),
            nodes=NAMES,
            rounds=ROUNDS,
            limit=BUDGET,
            spent=lambda node: spent[node],
            space=_space(),
            apply=lambda *_: None,
            record=record(name),
            local=[name],
            publish=network.publish,
            poll=lambda name=name: network.poll(name),
            wait_seconds=wait,
        )
        network.coordinators[name].first_round()

    async def node(name: str, offset: int) -> None:
        coordinator = network.coordinators[name]
        try:
            for round_index in range(ROUNDS):
                quota = await coordinator.quota(name, round_index)
                spent[name] += quota
                # a fills 3 new cells a round, b 1, c none after round 0
                width = {"a": 3, "b": 1, "c": 0}[name] if round_index else 5
                start = offset + 10 * round_index
                coordinator.round_ended(
                    name,
                    round_index,
                    _archive(name, round_index, range(start, start + width)),
                    quota,
                )
                if stop_after and stop_after.get(name) == round_index:
                    return
                await asyncio.sleep(0)
        finally:
            coordinator.finish(name)

    await asyncio.gather(*(node(name, 30 * i) for i, name in enumerate(NAMES)))
    return logs


def test_every_process_makes_the_same_decisions_in_whatever_order_reports_come() -> None:
    network = Network()
    network.reversed = {("a", "b"), ("c", "a"), ("b", "c")}
    logs = asyncio.run(_run(network))
    for round_index in range(1, ROUNDS):
        made = [logs[name][round_index] for name in NAMES]
        assert all(
            d["quotas"] == made[0]["quotas"] and d["credits"] == made[0]["credits"] for d in made
        ), made
        assert sum(made[0]["quotas"].values()) == made[0]["budget"]
    quotas = [logs["a"][r]["quotas"] for r in range(1, ROUNDS)]
    assert sum(q["a"] for q in quotas) > sum(q["c"] for q in quotas)  # the bandit moved calls


def test_a_stopped_node_is_left_out_everywhere_even_if_its_last_report_comes_late() -> None:
    network = Network()
    # c stops after round 1; b gets c's "done" before c's round-1 report
    network.late = {("c", "b")}
    logs = asyncio.run(_run(network, stop_after={"c": 1}))
    for round_index in range(1, ROUNDS):
        made = [logs[name][round_index] for name in NAMES if round_index in logs[name]]
        assert all(d["quotas"] == made[0]["quotas"] for d in made), made
    # c ended round 1, so it was given round 2's quota everywhere; round 3 leaves it out
    assert "c" in logs["a"][2]["quotas"] and "c" not in logs["a"][3]["quotas"]
    assert logs["a"][3]["spent_so_far"] == logs["b"][3]["spent_so_far"]


def test_a_node_that_hears_from_no_peer_in_time_keeps_its_last_quota() -> None:
    network = Network()
    network.silent = {"b", "c"}  # a hears nothing (b and c still hear a, and time out too)
    logs = asyncio.run(_run(network, wait=0.3))
    first = logs["a"][1]
    assert first["kept"] is True and first["quotas"] == {"a": BUDGET // ROUNDS // 3}
    assert sorted(first["missing"]) == ["b", "c"]


@pytest.mark.parametrize(
    "field, value",
    [("calls", -1), ("found", "3,4"), ("done", 1), ("landed", {"a": "x"}), ("node", "")],
)
def test_a_malformed_report_is_refused(field, value) -> None:
    report = RoundReport(node="a", round=0, calls=1, total=1, found=("1",)).to_json()
    assert RoundReport.from_json(report) == RoundReport.from_json(dict(report))
    with pytest.raises(ValueError):
        RoundReport.from_json({**report, field: value})
