"""SEARCH/REPLACE replies applied to the parent's evolve block: what applies, what is invalid
and why, and a run answered only in edits reaching the archive of one answered with the
equivalent whole blocks."""

from __future__ import annotations

import json
from pathlib import Path

import edit_operators
import pytest
from dei_python.blocks import split
from dei_python.domain import PythonDomain

from dei_framework import NodeConfig, RunConfig, load_plugins, run
from dei_framework.contract.errors import InvalidProgram
from dei_framework.contract.records import Candidate

EDIT = "<<<<<<< SEARCH\n{}=======\n{}>>>>>>> REPLACE\n"


@pytest.fixture(scope="module")
def domain() -> PythonDomain:
    return PythonDomain({})


def test_edits_apply_in_order_to_the_parents_block(domain: PythonDomain) -> None:
    parent = Candidate(text=domain.initial_text.replace("-1.0 * room_after", "-2.0 * room_after"))
    reply = (
        "Two changes:\n```\n"
        + EDIT.format("    score = -2.0 * room_after\n", "    score = -3.0 * room_after\n")
        + EDIT.format("    return score\n", "    return score * 2\n")
        + "```\n"
    )
    text = domain.parse(domain.resolve_reply(reply, parent=parent)).text
    block = split(text).block
    assert "score = -3.0 * room_after" in block and "return score * 2" in block
    assert split(text).head == domain.scaffold.head and split(text).tail == domain.scaffold.tail
    fresh = domain.resolve_reply(
        EDIT.format("    return score\n", "    return -score\n"), parent=None
    )  # a new program: edits of the initial block
    assert "return -score" in split(domain.parse(fresh).text).block


@pytest.mark.parametrize(
    ("search", "reason"),
    [
        (
            "    return nothing\n",
            r"edit 1 \(SEARCH starting 'return nothing'\): the text does not "
            r"occur in the parent's evolve block",
        ),
        ("import numpy as np\n", "outside the evolve block"),
        ("\n\n", "the SEARCH text is empty"),
    ],
)
def test_an_edit_that_does_not_apply_is_invalid_with_why(
    domain: PythonDomain, search: str, reason: str
) -> None:
    with pytest.raises(InvalidProgram, match=reason):
        domain.resolve_reply(EDIT.format(search, "x = 1\n"), parent=None)


def test_an_ambiguous_edit_is_invalid(domain: PythonDomain) -> None:
    twice = "    score = score + 0\n"
    parent = Candidate(
        text=domain.initial_text.replace("    return score\n", f"{twice}{twice}    return score\n")
    )
    with pytest.raises(InvalidProgram, match="occurs 2 times .* make it unique"):
        domain.resolve_reply(EDIT.format(twice, "    score = score + 1\n"), parent=parent)


def test_an_unfinished_edit_is_invalid(domain: PythonDomain) -> None:
    with pytest.raises(InvalidProgram, match="none is complete"):
        domain.resolve_reply("<<<<<<< SEARCH\n    return score\n=======\n", parent=None)
    complete = EDIT.format("    return score\n", "    return -score\n")
    with pytest.raises(InvalidProgram, match="opens 2 SEARCH/REPLACE edits but completes 1"):
        domain.resolve_reply(complete + "<<<<<<< SEARCH\n    x\n", parent=None)


def test_a_reply_without_edits_is_left_to_parse(domain: PythonDomain) -> None:
    reply = "```python\ndef priority(item, bins):\n    return -bins\n```"
    assert domain.resolve_reply(reply, parent=None) == reply


def _run(out: Path, operator: str, *, budget: int = 32, nodes: int = 2) -> Path:
    config = RunConfig(
        domain="python",
        budget=budget,
        rounds=2,
        seed=11,
        eval_workers=0,
        nodes=[NodeConfig(name=f"node-{i}", operator=operator) for i in range(nodes)],
    )
    run(config, out, registry=load_plugins(extra=[edit_operators]))
    return out


def _evaluated(out: Path) -> list[dict]:
    return [
        e
        for e in map(json.loads, (out / "events.jsonl").read_text().splitlines())
        if e["event"] == "evaluated"
    ]


@pytest.mark.timeout(600)
def test_a_run_answered_in_edits_reaches_the_archive_of_whole_blocks(tmp_path: Path) -> None:
    full = _run(tmp_path / "full", "full-blocks")
    edits = _run(tmp_path / "edits", "edits")
    replies = [json.loads(line) for line in (edits / "calls.jsonl").read_text().splitlines()]
    assert replies and all("<<<<<<< SEARCH" in str(call) for call in replies)

    def archive(out: Path) -> list[dict]:
        entries = json.loads((out / "merged_archive.json").read_text())
        return [{k: v for k, v in e.items() if k != "operator"} for e in entries]

    assert archive(full) == archive(edits)
    assert len(archive(full)) >= 2

    def outcomes(out: Path) -> list[tuple]:
        # Sorted: the nodes' events interleave as their evaluations happen to finish.
        return sorted((e["id"], e["status"], e["fitness"]) for e in _evaluated(out))

    assert outcomes(full) == outcomes(edits)


@pytest.mark.timeout(600)
def test_edits_that_never_apply_are_invalid_with_their_reason(tmp_path: Path) -> None:
    out = _run(tmp_path / "stale", "stale-edits", budget=6, nodes=1)
    made = [e for e in _evaluated(out) if e["kind"] in ("new", "mutate")]
    assert len(made) == 6
    for event in made:
        assert event["status"] == "invalid"
        assert event["error"].startswith(
            "edit 1 (SEARCH starting 'return nothing_like_this'): the text does not occur"
        )
