"""Progress display of a run: a live table, one line per round, JSON lines, or nothing.

Rounds are numbered from 0, as in the run directory (``round-000.json``), the event log and
the reports, and named "round k of R" in prose (``round 0 of 3`` ... ``round 2 of 3``); the
table's counts ("1/3 rounds done", "40/40 calls") are counts.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from dei_framework.config import RunConfig


class Progress:
    """Receives ``(kind, data)`` updates from the ensemble; a context manager around the run."""

    def __init__(self, mode: str, config: RunConfig) -> None:
        self.mode = mode
        self.config = config
        self.quotas = config.node_quotas()
        self.rows: dict[str, dict[str, Any]] = {
            node.name: {"operator": node.operator, "rounds_done": 0, "calls": 0, "invalid": 0,
                        "best": None, "coverage": 0.0, "errors": 0, "retries": 0,
                        "problem": ""}
            for node in config.nodes
        }  # fmt: skip
        self._reported_errors: dict[str, int] = {}
        self._live = None

    def __enter__(self) -> Progress:
        if self.mode == "live":
            from rich.live import Live

            # The table is built when the display refreshes (4 times a second), not on
            # every update: a run makes one update per evaluation.
            self._live = Live(get_renderable=self._table, refresh_per_second=4,
                              transient=False, console=_stderr_console())  # fmt: skip
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.refresh()
            self._live.__exit__(*exc)

    def update(self, kind: str, data: dict[str, Any]) -> None:
        row = self.rows.get(data.get("node", ""))
        if row is None:
            return
        status = data.get("operator_status") or {}
        row["errors"] = status.get("errors", row["errors"])
        row["retries"] = status.get("retries", row["retries"])
        if kind == "resumed":
            # A resumed run counts on from the totals recorded before the interruption.
            for key in ("calls", "invalid", "rounds_done", "coverage", "best"):
                row[key] = data[key]
        elif kind == "evaluated" and data.get("kind") in ("new", "mutate"):
            row["calls"] += 1
            row["invalid"] += data.get("status") == "invalid"
            if data.get("fitness") is not None:
                row["best"] = max(row["best"] or 0.0, data["fitness"])
        elif kind == "round":
            self._transient(data["node"], row, status)
            row["rounds_done"] = data["round"] + 1
            row["coverage"] = data["stats"]["coverage"]
            if self.mode == "lines":
                champion = data.get("champion") or {}
                self._line(
                    f"[{data['node']}] round {data['round']} of {self.config.rounds} done: "
                    f"{data['stats']['num_elites']} elites, coverage "
                    f"{data['stats']['coverage']:.1%}, champion fitness "
                    f"{champion.get('fitness', float('nan')):.3f}, calls {row['calls']}"
                    f"/{self.quotas[data['node']]} ({row['operator']}; errors {row['errors']}, "
                    f"retries {row['retries']})"
                )  # fmt: skip
            elif self.mode == "json":
                print(json.dumps({k: v for k, v in data.items() if k != "champion"}), flush=True)
        elif kind == "stopped":
            row["problem"] = f"stopped: {data['reason']}"
            if self.mode == "lines":
                self._line(f"[{data['node']}] stopped: {data['reason']}")
            elif self.mode == "json":
                print(json.dumps(data), flush=True)
        elif kind == "status":
            self._transient(data["node"], row, status)
            if self.mode == "json":
                print(json.dumps({"event": "status", **data}), flush=True)

    def _transient(self, node: str, row: dict[str, Any], status: dict[str, Any]) -> None:
        """Shows the cause of new failed attempts (retried, or given back to the budget)."""
        errors = status.get("errors", 0)
        if errors <= self._reported_errors.get(node, 0) or row["problem"].startswith("stopped"):
            return
        self._reported_errors[node] = errors
        cause = status.get("last_error") or "unknown cause"
        row["problem"] = cause
        if self.mode == "lines":
            self._line(f"[{node}] failed attempts so far {errors} (retries {row['retries']}); "
                       f"last: {cause}")  # fmt: skip

    @staticmethod
    def _line(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def _table(self):
        from rich.table import Table

        table = Table(title=f"DEI {self.config.domain}: {len(self.rows)} nodes")
        for column in ("node", "operator", "rounds done", "calls", "invalid", "best",
                       "coverage", "errors", "retries", "last problem"):
            table.add_column(column, overflow="fold" if column == "last problem" else "ellipsis")
        for name, row in self.rows.items():
            best = "-" if row["best"] is None else f"{row['best']:.3f}"
            table.add_row(name, row["operator"], f"{row['rounds_done']}/{self.config.rounds}",
                          f"{row['calls']}/{self.quotas[name]}", str(row["invalid"]), best,
                          f"{row['coverage']:.0%}", str(row["errors"]), str(row["retries"]),
                          row["problem"])  # fmt: skip
        return table


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def make_progress(mode: str, config: RunConfig) -> Progress:
    """``auto`` is a live table on a terminal, one line per round otherwise."""
    if mode == "auto":
        mode = "live" if sys.stderr.isatty() else "lines"
    return Progress(mode, config)
