"""Progress display of a run: a live table, one line per round, JSON lines, or nothing.

Rounds are numbered from 0, as in the run directory (``round-000.json``), the event log and
the reports, and named "round k of R" in prose (``round 0 of 3`` ... ``round 2 of 3``); the
table's counts ("1/3" rounds done, "40/40" calls) are counts.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from dei_framework.contract.kinds import CALL_KINDS, ProgressKind
from dei_framework.runtime.config.run_config import RunConfig


class Progress:
    """Receives ``(kind, data)`` updates from the ensemble (``kind`` a
    :class:`~dei_framework.contract.kinds.ProgressKind`); a context manager around the run."""

    def __init__(self, mode: str, config: RunConfig) -> None:
        self.mode = mode
        self.config = config
        self.quotas = config.node_quotas()
        self.rows: dict[str, dict[str, Any]] = {
            node.name: {
                "operator": node.operator,
                "rounds_done": 0,
                "calls": 0,
                "invalid": 0,
                "best": None,
                "coverage": 0.0,
                "errors": 0,
                "retries": 0,
                "problem": "",
            }
            for node in config.nodes
        }
        self._reported_errors: dict[str, int] = {}
        self._live = None

    def __enter__(self) -> Progress:
        if self.mode == "live":
            from rich.live import Live

            # The table is built when the display refreshes (4 times a second), not on
            # every update: a run makes one update per evaluation.
            self._live = Live(
                get_renderable=self._table,
                refresh_per_second=4,
                transient=False,
                console=_stderr_console(),
            )
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.refresh()
            self._live.__exit__(*exc)
            if not self._live.console.is_terminal:
                # Off a terminal the last frame is written without a line end: what follows
                # (done: ..., an error) would start on its last line.
                self._live.console.line()

    def update(self, kind: ProgressKind, data: dict[str, Any]) -> None:
        row = self.rows.get(data.get("node", ""))
        if row is None:
            return
        status = data.get("operator_status") or {}
        row["errors"] = status.get("errors", row["errors"])
        row["retries"] = status.get("retries", row["retries"])
        if kind == ProgressKind.RESUMED:
            # A resumed run counts on from the totals recorded before the interruption.
            for key in ("calls", "invalid", "rounds_done", "coverage", "best"):
                row[key] = data[key]
        elif kind == ProgressKind.EVALUATED and data.get("kind") in CALL_KINDS:
            row["calls"] += 1
            row["invalid"] += data.get("status") == "invalid"
            if data.get("fitness") is not None:
                row["best"] = max(row["best"] or 0.0, data["fitness"])
        elif kind == ProgressKind.ROUND:
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
                )
            elif self.mode == "json":
                print(json.dumps({k: v for k, v in data.items() if k != "champion"}), flush=True)
        elif kind == ProgressKind.STOPPED:
            row["problem"] = f"stopped: {data['reason']}"
            if self.mode == "lines":
                self._line(f"[{data['node']}] stopped: {data['reason']}")
            elif self.mode == "json":
                print(json.dumps(data), flush=True)
        elif kind == ProgressKind.STATUS:
            self._transient(data["node"], row, status)
            if self.mode == "json":
                print(json.dumps({"event": ProgressKind.STATUS, **data}), flush=True)

    def _transient(self, node: str, row: dict[str, Any], status: dict[str, Any]) -> None:
        """Shows the cause of new failed attempts (retried, or given back to the budget)."""
        errors = status.get("errors", 0)
        if errors <= self._reported_errors.get(node, 0) or row["problem"].startswith("stopped"):
            return
        self._reported_errors[node] = errors
        cause = status.get("last_error") or "unknown cause"
        row["problem"] = cause
        if self.mode == "lines":
            self._line(
                f"[{node}] failed attempts so far {errors} (retries {row['retries']}); "
                f"last: {cause}"
            )

    @staticmethod
    def _line(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def _table(self, width: int | None = None):
        """The live table: one line per node, readable in an 80-column terminal.

        Node names and the figures are never cut (a cut name, "node…", tells nodes apart no
        better than a blank); the operator and the last problem share the width left, cut
        with an ellipsis: the full cause is in the summary and in ``--progress lines``. Laid
        out here rather than by ``rich.table``, which shrinks every column alike.

        Args:
            width: The terminal's width (default: the live display's console's, else 80).
        """
        from rich.console import Group
        from rich.text import Text

        if width is None:
            width = self._live.console.width if self._live is not None else 80
        headers = (
            "node",
            "operator",
            "rounds",
            "calls",
            "inv",
            "best",
            "cov",
            "err/rt",
            "last problem",
        )
        rows = []
        for name, row in self.rows.items():
            best = "-" if row["best"] is None else f"{row['best']:.3f}"
            rows.append(
                (
                    name,
                    row["operator"],
                    f"{row['rounds_done']}/{self.config.rounds}",
                    f"{row['calls']}/{self.quotas[name]}",
                    str(row["invalid"]),
                    best,
                    f"{row['coverage']:.0%}",
                    f"{row['errors']}/{row['retries']}",
                    row["problem"],
                )
            )
        widths = [
            max([len(header)] + [len(row[i]) for row in rows]) for i, header in enumerate(headers)
        ]
        # What the fixed columns leave goes to the operator (up to its longest name, at most
        # half) and the rest to the last problem.
        gap = 1
        left = max(width - 1 - widths[0] - sum(widths[2:8]) - gap * (len(headers) - 1), 16)
        widths[1] = min(widths[1], max(left // 2, 8))
        widths[8] = max(left - widths[1], 8)

        def line(cells: tuple[str, ...]) -> str:
            out = []
            for index, cell in enumerate(cells):
                cell = cell if len(cell) <= widths[index] else cell[: widths[index] - 1] + "…"
                numeric = 2 <= index <= 7
                out.append(cell.rjust(widths[index]) if numeric else cell.ljust(widths[index]))
            text = (" " * gap).join(out).rstrip()
            # Too narrow even so: cut at the edge, never wrapped into the next row's place.
            return text if len(text) < width else text[: width - 2] + "…"

        # A Group of one Text per line: each ends its line, the last one too (what follows
        # the final frame starts on a line of its own).
        return Group(
            Text(f"DEI {self.config.domain}: {len(self.rows)} nodes", style="bold"),
            Text(line(headers), style="bold"),
            *(Text(line(row)) for row in rows),
        )


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def make_progress(mode: str, config: RunConfig) -> Progress:
    """``auto`` is a live table on a terminal, one line per round otherwise."""
    if mode == "auto":
        mode = "live" if sys.stderr.isatty() else "lines"
    return Progress(mode, config)
