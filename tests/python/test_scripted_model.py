"""The scripted loopback model of the benchmarks (benchmarks/scripted_model.py): it finds the
program a prompt shows as the current one, and its edit and whole-program replies make the
same child of it."""

from __future__ import annotations

import random

import pytest
from dei_python.domain import PythonDomain
from dei_python.task import DEFAULT_TASK
from scripted_model import current_program, reply_for

INITIAL = (DEFAULT_TASK / "initial_program.py").read_text()


def test_the_current_program_is_found_after_its_heading_not_among_the_others() -> None:
    other = INITIAL.replace("-1.0 * room_after", "-2.0 * room_after")
    openevolve = [
        {
            "role": "user",
            "content": f"## Top Performing Programs\n```python\n{other}```"
            f"\n# Current Program\n```python\n{INITIAL}```\n",
        }
    ]
    dei = [
        {
            "role": "user",
            "content": f"The current program (score -0.05):\n```python\n"
            f"{INITIAL}```\nAnother program in the archive:\n```python\n{other}```",
        }
    ]
    assert current_program(openevolve) == INITIAL
    assert current_program(dei) == INITIAL
    assert current_program([{"role": "user", "content": "no code here"}]) is None


@pytest.mark.parametrize("style", ["ast", "terms", "mixed"])
@pytest.mark.parametrize("seed", range(6))
def test_edit_and_whole_program_replies_make_the_same_child(style: str, seed: int) -> None:
    domain = PythonDomain({})
    full = reply_for(INITIAL, f"scripted-{style}-full", random.Random(seed))
    edit = reply_for(INITIAL, f"scripted-{style}-diff", random.Random(seed))
    assert "<<<<<<< SEARCH" in edit and "<<<<<<< SEARCH" not in full
    from_full = domain.parse(domain.resolve_reply(full, parent=None)).text
    from_edit = domain.parse(domain.resolve_reply(edit, parent=None)).text
    assert from_full == from_edit != INITIAL
