"""The live progress table stays one readable line per node in an 80-column terminal."""

from __future__ import annotations

import pytest
from rich.console import Console

from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.progress import Progress

OPERATORS = (
    "openai/gpt-4.1-mini",
    "anthropic/claude-haiku-4-5",
    "gemini/gemini-2.5-flash",
    "ollama/qwen2.5-coder",
)


def _progress() -> Progress:
    # Names as one process per node makes them (a suffix per run), the README's four models.
    nodes = [NodeConfig(name=f"node-{i}-3fa9c1", operator=op) for i, op in enumerate(OPERATORS)]
    progress = Progress("live", RunConfig(domain="coreware", nodes=nodes, budget=1000, rounds=20))
    progress.rows["node-0-3fa9c1"]["problem"] = "RateLimitError (429): You exceeded your quota"
    progress.rows["node-1-3fa9c1"].update(best=0.8123, calls=17, errors=3, retries=2)
    return progress


def _rendered(width: int) -> list[str]:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(_progress()._table(width))
    return console.export_text().rstrip("\n").splitlines()


@pytest.mark.parametrize("width", [80, 120])
def test_every_node_has_one_line_with_its_whole_name_and_figures(width) -> None:
    lines = _rendered(width)
    assert all(len(line) <= width for line in lines), lines
    assert lines[1].split()[:2] == ["node", "operator"]
    rows = lines[2:]
    assert [row.split()[0] for row in rows] == [f"node-{i}-3fa9c1" for i in range(4)], lines
    assert rows[1].split()[2:7] == ["0/20", "17/250", "0", "0.812", "0%"], rows[1]
    assert rows[1].split()[7] == "3/2"
    assert "RateLimitError" in rows[0]
    if width >= 120:  # room enough: nothing is cut
        assert all(op in line for op, line in zip(OPERATORS, rows, strict=True))


def test_what_follows_the_last_frame_starts_on_a_line_of_its_own(capsys) -> None:
    import sys

    with _progress():
        pass
    print("done: ...", file=sys.stderr)
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1] == "done: ..." and lines[-2].startswith("node-3-3fa9c1"), lines
