"""One round numbering on every console: 0-based indices, "round k of R" in prose.

The run directory (``round-000.json``), the event log and the reports number rounds from 0;
the in-memory run's progress lines and the AXL launcher's log say the same index, of R rounds.
(The watch page's header and node panels are checked in a browser: tests/app/watch.)
"""

from __future__ import annotations

from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.node.launcher import Launcher
from dei_framework.runtime.progress import Progress

CONFIG = RunConfig(
    domain="toy", nodes=[NodeConfig(name="node-0", operator="toy-random")], budget=30, rounds=3
)


def _round_event(index: int) -> dict:
    return {
        "node": "node-0",
        "round": index,
        "stats": {"num_elites": 4, "coverage": 0.25},
        "champion": {"fitness": 1.5},
    }


def test_progress_lines_name_the_round_index_of_the_rounds(capsys) -> None:
    progress = Progress("lines", CONFIG)
    for index in range(3):
        progress.update("round", _round_event(index))
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "[node-0] round 0 of 3 done",
        "[node-0] round 1 of 3 done",
        "[node-0] round 2 of 3 done",
    ]
    assert progress.rows["node-0"]["rounds_done"] == 3  # the table's column is a count


def test_the_axl_launchers_log_names_the_same_round_as_the_events(tmp_path) -> None:
    lines: list[str] = []
    launcher = Launcher(
        config=CONFIG, run_dir=tmp_path, network=None, registry=None, echo=lines.append
    )
    launcher.pids.update({"node-0": 71, "node-1": 72})
    launcher._report("node-0", _round_event(0) | {"event": "round"})
    launcher._report("node-0", {"event": "received", "from": "node-1", "from_round": 0})
    launcher._report("node-0", _round_event(2) | {"event": "round"})
    assert lines == [
        "node-0 (pid 71): round 0 of 3 done, coverage 25.0%",
        "node-0 (pid 71) received over inmemory the round 0 champion of node-1 (pid 72)",
        "node-0 (pid 71): round 2 of 3 done, coverage 25.0%",
    ]
