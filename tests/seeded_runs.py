"""What seeded runs are compared by, and an operator that fails for good: shared by the tests
of determinism (tests/system) and of budget allocation (tests/search)."""

from __future__ import annotations

import json
from pathlib import Path

from midway import events

from dei_framework import hookimpl
from dei_framework.contract.errors import OperatorError
from dei_framework.contract.operators import Operator, OperatorReply, OperatorRequest, OperatorSpec


def run_outcome(path: Path) -> dict:
    """Everything a seeded run decides: summary figures, every node's round archives (the full
    merged archive among them), every candidate, and what each node received when."""
    summary = json.loads((path / "summary.json").read_text())
    log = events(path)
    archives = {
        file.relative_to(path).as_posix(): json.loads(file.read_text())["archive"]
        for file in sorted((path / "nodes").glob("*/round-*.json"))
    }
    return {
        "merged": summary["merged"],
        "champions": {n: node["champion"] for n, node in summary["nodes"].items()},
        "calls": summary["budget"]["calls"],
        "archives": archives,
        "evaluated": sorted(
            (e["id"], e["fitness"], e["status"], e["cell"])
            for e in log
            if e["event"] == "evaluated"
        ),
        # per node and round, in the order taken (nodes log concurrently, so the interleaving
        # of different nodes' lines in the file follows the wall clock)
        "received": sorted(
            (
                (e["node"], e["round"], e["from"], e["from_round"], e["program"])
                for e in log
                if e["event"] == "received"
            ),
            key=lambda r: (r[0], r[1]),
        ),
    }


class GivesUp(Operator):
    """Answers a few calls, then fails beyond retrying (its node stops early)."""

    label = "gives-up"

    def __init__(self, calls: int) -> None:
        self.left = calls

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        self.left -= 1
        if self.left < 0:
            raise OperatorError("gives-up: the provider went away")
        return OperatorReply(text="1")


class GivesUpPlugin:
    """Registers ``gives-up`` (option ``calls``: the calls it answers, default 5)."""

    @hookimpl
    def dei_operators(self):
        return [
            OperatorSpec(
                name="gives-up", factory=lambda ctx: GivesUp(int(ctx.options.get("calls", 5)))
            )
        ]
