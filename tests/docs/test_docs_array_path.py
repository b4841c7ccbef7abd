"""docs/for-pyribs-users.md's array-path loop runs as written and fills the grid."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "for-pyribs-users.md"


def test_the_array_path_block_runs_and_fills_the_grid(capsys) -> None:
    section = DOC.read_text().split("\n## The array path\n", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    scope: dict = {}
    exec(compile(block, str(DOC), "exec"), scope)
    scheduler = scope["scheduler"]
    assert scheduler.finished and scheduler.history[-1].calls == 2000
    elites, qd_score = map(int, capsys.readouterr().out.split())
    assert elites == scheduler.archive.stats().num_elites > 100 and qd_score > 0
    elite = scheduler.archive.occupied[0]
    assert elite.data is not None and elite.text.count(" ") == 19
