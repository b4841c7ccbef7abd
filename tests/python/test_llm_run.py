"""The python domain behind an LLM operator (a loopback model): the prompt shows the program
with its evolve block and the task's system message, replies are evolve blocks, and a reply
that breaks the block's syntax is invalid with its line numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dei_python.task import DEFAULT_TASK
from openai_stub import ok

TASK = DEFAULT_TASK / "initial_program.py"

MODEL = "openai/gpt-4o-mini"
BUDGET = 8
BROKEN = "```python\ndef priority(item, bins):\n    return -(bins - item\n```"
# First fit (a cell of its own: it often disagrees with best fit), written three ways.
BLOCKS = [
    f"Try this:\n```python\ndef priority(item, bins):\n    order = np.arange(len(bins))\n"
    f"    return -order * {k}\n```"
    for k in (1, 2, 3)
]


@pytest.mark.timeout(600)
def test_replies_are_evolve_blocks_and_a_broken_one_is_invalid_with_its_line(
    cli, stub, llm_env, tmp_path: Path
) -> None:
    stub.script(ok(BROKEN))
    stub.cycle(*(ok(block) for block in BLOCKS))
    out = tmp_path / "run"
    cli(
        "dei-run",
        "--domain",
        "python",
        "--operator",
        MODEL,
        "--api-base",
        stub.base_url,
        "--nodes",
        "2",
        "--budget",
        str(BUDGET),
        "--rounds",
        "2",
        "--seed",
        "3",
        "--eval-workers",
        "2",
        "--out",
        str(out),
        "--progress",
        "quiet",
        "--no-report",
        env=llm_env,
        timeout=600,
    )
    assert stub.completed == BUDGET
    events = [
        e
        for e in map(json.loads, (out / "events.jsonl").read_text().splitlines())
        if e["event"] == "evaluated" and e["kind"] in ("new", "mutate")
    ]
    assert len(events) == BUDGET
    invalid = [e for e in events if e["status"] == "invalid"]
    assert len(invalid) == 1  # the broken reply, and nothing else
    marker = TASK.read_text().splitlines().index("# EVOLVE-BLOCK-START") + 1
    assert invalid[0]["error"] == (
        f"line {marker + 2} (line 2 of the evolve block): '(' was never closed"
    )
    for event in events:
        if event["status"] != "invalid":
            assert set(event["descriptor"]) == {"best_fit_agreement", "first_fit_agreement"}
    elites = json.loads((out / "merged_archive.json").read_text())
    assert any("return -order * " in elite["text"] for elite in elites)  # a reply's block
    assert all(
        elite["text"].rstrip().endswith("return bins[bins != capacity]") for elite in elites
    )  # the scaffold after the block is kept
    prompt = stub.bodies[0]["messages"]
    assert prompt[0]["content"].startswith("You are an expert in combinatorial optimisation")
    assert "# EVOLVE-BLOCK-START" in prompt[1]["content"]


def _block(body: str) -> str:
    return f"```python\ndef priority(item, bins):\n{body}```"


@pytest.mark.timeout(600)
def test_hostile_blocks_end_their_own_evaluation_only(cli, stub, llm_env, tmp_path: Path) -> None:
    # The evaluator runs the block in-process: the sandbox's child is what a hostile one ends.
    hostile = [
        (_block("    while True:\n        pass\n"), "timeout after 2.0 s"),
        (_block("    import os\n    os._exit(3)\n"), "evaluation failed: the program exited"),
        (_block("    raise SystemExit(0)\n"), "line 15 (line 2 of the evolve block): SystemExit"),
        (
            _block("    hoard = []\n    while True:\n        hoard.append(bytes(10**8))\n"),
            "memory limit 512 MB exceeded",
        ),
    ]
    stub.script(*(ok(reply) for reply, _ in hostile))
    stub.cycle(*(ok(block) for block in BLOCKS))
    out = tmp_path / "run"
    cli(
        "dei-run",
        "--domain",
        "python",
        "--operator",
        MODEL,
        "--api-base",
        stub.base_url,
        "--nodes",
        "1",
        "--budget",
        "8",
        "--rounds",
        "1",
        "--seed",
        "5",
        "--eval-workers",
        "1",
        "--eval-timeout",
        "2",
        "--eval-memory",
        "512",
        "--out",
        str(out),
        "--progress",
        "quiet",
        "--no-report",
        env=llm_env,
        timeout=600,
    )
    events = [
        e
        for e in map(json.loads, (out / "events.jsonl").read_text().splitlines())
        if e["event"] == "evaluated" and e["kind"] in ("new", "mutate")
    ]
    assert len(events) == 8 == stub.completed
    reasons = sorted(e["error"] for e in events if e["status"] == "invalid")
    assert len(reasons) == len(hostile), reasons  # the ordinary blocks are all valid
    for start in (start for _, start in hostile):
        assert any(reason.startswith(start) for reason in reasons), (start, reasons)
