"""docs/library.md's "Build your own loop" is real code: its blocks run, in order, as written."""

from __future__ import annotations

import re
from pathlib import Path

LIBRARY_MD = Path(__file__).resolve().parents[2] / "docs" / "library.md"


def _section_blocks(heading: str) -> list[str]:
    text = LIBRARY_MD.read_text()
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def test_the_loop_section_builds_a_domain_and_an_operator_and_runs_the_loop(capsys) -> None:
    blocks = _section_blocks("## Build your own loop")
    assert len(blocks) == 2
    namespace: dict = {"__name__": "library_md"}
    for block in blocks:
        exec(compile(block, str(LIBRARY_MD), "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "SymRegDomain symreg-gp 8"  # the domain and operator the page builds
    rounds = [line for line in out if line.startswith("round ")]
    assert [line.split(":")[0] for line in rounds] == ["round 0", "round 1"]
    scheduler = namespace["scheduler"]
    assert scheduler.finished and [event.round for event in scheduler.history] == [0, 1]
    champion = scheduler.history[-1].champion
    assert champion.operator and champion.fitness is not None


def test_evaluate_takes_the_schedulers_candidates_as_opponents() -> None:
    from dei_framework import Scheduler, evaluate, load_plugins

    domain = load_plugins().domain("symreg").factory({})
    scheduler = Scheduler.for_domain(domain, name="n0", calls=8, rounds=1, seed=1)
    item = scheduler.ask(1)[0]
    text = item.program.text
    parsed = [domain.parse(c.text) for c in scheduler.opponents]
    axes = scheduler.space.names
    direct = evaluate(domain, text, scheduler.opponents, seed=item.eval_seed, axes=axes)
    assert direct.error is None
    same = evaluate(domain, text, parsed, seed=item.eval_seed, axes=axes)
    assert direct.evaluation is not None
    assert direct.evaluation == same.evaluation
