"""The README's test commands are the ones `.ci/run` runs, and together they run every test once."""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

from _pytest.mark.expression import Expression

ROOT = Path(__file__).resolve().parents[2]


def _pytest_commands(text: str) -> list[list[str]]:
    """Every ``pytest ...`` command of a text (after ``&&``, without a trailing comment)."""
    commands = []
    for line in text.splitlines():
        found = re.search(r"(?:^|&& )(pytest\b[^#\n]*)", line.strip())
        if found:
            commands.append(shlex.split(found.group(1)))
    return commands


def test_ci_runs_the_readmes_commands_in_order() -> None:
    readme = _pytest_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    ci = _pytest_commands((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert len(ci) == 4 and readme == ci[:3], (readme, ci)
    for command in ci[:2]:
        assert command[:3] == ["pytest", "-n", "auto"]  # in parallel; the axl tests one by one
    quickstart = _pytest_commands((ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8"))
    assert quickstart == ci[:3]
    # Then the README's set once more with more test processes than cores (the load pass).
    load = ci[3]
    assert load[load.index("-m") + 1] == ci[0][ci[0].index("-m") + 1]
    assert load[1] == "-n" and "nproc" in load[2] and "*" in load[2], load


def test_the_default_set_and_the_rest_together_select_every_test_once() -> None:
    ci = _pytest_commands((ROOT / ".ci" / "run").read_text(encoding="utf-8"))[:3]
    sets = [Expression.compile(command[command.index("-m") + 1]) for command in ci]
    for marks in itertools.product(((), ("slow",)), ((), ("axl",))):
        names = set(itertools.chain(*marks))

        def has(name: str, **_: object) -> bool:
            return name in names  # noqa: B023 (evaluated at once, in this iteration)

        chosen = [selection.evaluate(has) for selection in sets]
        assert chosen.count(True) == 1, names
        assert chosen[0] == (not names)  # the default set: unmarked tests only


def test_test_module_basenames_are_unique() -> None:
    # Test folders are not packages: pytest imports each test file by its basename, and a second
    # file of the same name is a collection error of the whole run.
    names = [path.name for path in (ROOT / "tests").rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []
