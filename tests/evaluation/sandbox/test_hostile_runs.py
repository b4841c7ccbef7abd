"""`dei-run` of a naive program domain (its `evaluate` execs the model's code) against a
loopback model whose replies are, in turn, hostile: a loop, a memory bomb, a self-SIGKILL,
`os.system` with a delete and a write outside the scratch directory, a missing import, a
syntax error and prose, then ordinary programs. Under a sandbox the run ends with its exact
budget, each hostile candidate is invalid with its own reason within its limit + 1 s, no
ordinary candidate is invalid, and (``isolated``) the files outside are untouched."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from openai_stub import ok

from dei_framework.app.watch.run import WatchedRun

TIMEOUT, MEMORY = 3.0, 512
BUDGET = 16
MODEL = "openai/gpt-4o-mini"


def _hostile(canary: Path) -> list[tuple[str, str]]:
    """(reply, the start of the reason it must be invalid with); ``""``: valid."""
    # The bomb reserves address space with bytes(10**8) (calloc: pages left untouched), so
    # it meets the limit in microseconds: a bomb that writes its 512 MB took over 3 s on
    # CI's loaded machine and was (rightly) stopped as a timeout instead.
    fence = "```python\n{}```"
    return [
        (
            fence.format("def priority(item, bins):\n    while True:\n        pass\n"),
            f"timeout after {TIMEOUT:.1f} s",
        ),
        (
            fence.format(
                "def priority(item, bins):\n    hoard = []\n    while True:\n"
                "        hoard.append(bytes(10**8))\n"
            ),
            f"memory limit {MEMORY} MB exceeded",
        ),
        (
            fence.format(
                "import os, signal\ndef priority(item, bins):\n"
                "    os.kill(os.getpid(), signal.SIGKILL)\n"
            ),
            "killed by signal 9",
        ),
        (
            fence.format(
                f"import os\nos.system('rm -f {canary}; echo pwned > {canary}.outside')\n"
                "def priority(item, bins):\n    return [0.0] * len(bins)\n"
            ),
            "",
        ),
        (
            fence.format(
                "import nosuchmodule\ndef priority(item, bins):\n    return [0.0] * len(bins)\n"
            ),
            "evaluation failed: ModuleNotFoundError",
        ),
        (fence.format("def priority(item, bins)\n    return [1.0] * len(bins)\n"), "line 1:"),
        ("I would pack the largest items first, then fill the gaps.", "line 1:"),
    ]


ORDINARY = [
    f"```python\ndef priority(item, bins):\n    return [-(free - item) * {k} for free in bins]\n```"
    for k in range(1, 6)
]


def _evaluated(out: Path) -> list[dict]:
    lines = (out / "events.jsonl").read_text().splitlines()
    return [event for event in map(json.loads, lines) if event["event"] == "evaluated"]


def _hostile_run(cli, stub, env, tmp_path: Path, *placement: str, level: str) -> tuple[Path, Path]:
    canary = tmp_path / "canary.txt"
    canary.write_text("keep me")
    hostile = _hostile(canary)
    stub.script(*(ok(reply) for reply, _ in hostile))
    stub.cycle(*(ok(reply) for reply in ORDINARY))
    out = tmp_path / "run"
    cli(
        "dei-run",
        "--domain",
        "naive",
        "--transport",
        "inmemory",
        "--nodes",
        "2",
        "--operator",
        MODEL,
        "--api-base",
        stub.base_url,
        "--budget",
        str(BUDGET),
        "--rounds",
        "2",
        "--seed",
        "1",
        "--out",
        str(out),
        "--progress",
        "quiet",
        "--no-report",
        "--sandbox",
        level,
        "--eval-timeout",
        str(TIMEOUT),
        "--eval-memory",
        str(MEMORY),
        *placement,
        env=env,
        timeout=600,
    )
    summary = json.loads((out / "summary.json").read_text())
    assert stub.completed == BUDGET == summary["budget"]["calls"]  # exactly the budget
    events = _evaluated(out)
    made = [e for e in events if e["kind"] in ("new", "mutate")]
    assert len(made) == BUDGET
    reasons = sorted(e.get("error") or "" for e in made if e["status"] == "invalid")
    expected = sorted(reason for _, reason in hostile if reason)
    assert len(reasons) == len(expected), reasons  # no ordinary candidate is invalid
    for reason, start in zip(reasons, expected, strict=True):
        assert reason.startswith(start), (reason, start)
    for event in made:  # each stopped within its limit + 1 s
        assert event["timings"]["eval_s"] <= TIMEOUT + 1.0, event
    assert summary["invalid"] == len(expected)
    assert summary["stopped"] == {
        "timeout": 1,
        "memory": 1,
        "file": 0,
        "processes": 0,
        "killed": 1,
        "sandbox": 0,
    }
    # The watch page and the report count them too.
    state = WatchedRun(out).state(seconds=None)
    shown = Counter()
    for node in state["nodes"]:
        shown.update(node["limits"])
    assert shown == Counter(timeout=1, memory=1, killed=1)
    cli("dei", "report", str(out), env=env)
    report = (out / "report.md").read_text()
    assert (
        "(of which 1 over the time limit, 1 over the memory limit, 1 killed by a signal)" in report
    )
    return out, canary


@pytest.mark.timeout(600)
def test_isolated_run_survives_hostile_replies_and_keeps_files_outside(
    cli, stub, naive_env, tmp_path, bubblewrap
) -> None:
    _, canary = _hostile_run(
        cli, stub, naive_env, tmp_path, "--eval-workers", "2", level="isolated"
    )
    assert canary.read_text() == "keep me"
    assert not Path(f"{canary}.outside").exists()


@pytest.mark.timeout(600)
def test_process_run_in_this_process_survives_hostile_replies(
    cli, stub, naive_env, tmp_path
) -> None:
    # --eval-workers 0: without the sandbox a self-SIGKILL would end dei-run itself.
    _hostile_run(cli, stub, naive_env, tmp_path, "--eval-workers", "0", level="process")


@pytest.mark.timeout(600)
def test_process_run_on_dask_survives_hostile_replies(cli, stub, naive_env, tmp_path) -> None:
    pytest.importorskip("distributed", reason="the Dask backend needs distributed")
    from dask_cluster import start_cluster

    cluster = start_cluster(0)
    try:
        worker_env = {**naive_env}  # the workers see the naive domain as the run does
        for _ in range(2):
            cluster.add_worker(env=worker_env)
        cluster.wait_for_workers(2)
        _hostile_run(
            cli,
            stub,
            naive_env,
            tmp_path,
            "--evaluator",
            "dask",
            "--evaluator-address",
            cluster.address,
            level="process",
        )
    finally:
        cluster.stop()


def _offline_run(cli, env, tmp_path: Path, operator: str) -> Path:
    out = tmp_path / operator
    config = tmp_path / "naive.toml"
    config.write_text(f'[operator_options]\ncanary = "{tmp_path / "canary.txt"}"\n')
    cli(
        "dei-run",
        "--config",
        str(config),
        "--domain",
        "naive",
        "--operator",
        operator,
        "--nodes",
        "2",
        "--budget",
        "60",
        "--rounds",
        "3",
        "--seed",
        "3",
        "--sandbox",
        "process",
        "--eval-timeout",
        "1",
        "--eval-memory",
        "256",
        "--eval-workers",
        "2",
        "--out",
        str(out),
        "--progress",
        "quiet",
        "--no-report",
        env=env,
        timeout=600,
    )
    return out


@pytest.mark.timeout(600)
def test_hostile_replies_give_the_archive_that_syntax_errors_in_their_place_give(
    cli, naive_env, tmp_path
) -> None:
    hostile = _offline_run(cli, naive_env, tmp_path, "naive-hostile")
    syntax = _offline_run(cli, naive_env, tmp_path, "naive-syntax")
    reasons = {e.get("error") for e in _evaluated(hostile) if e["status"] == "invalid"}
    # The seeded run met every kind of hostile program (else it would prove less).
    for start in (
        "timeout after 1.0 s",
        "memory limit 256 MB exceeded",
        "killed by signal 9",
        "evaluation failed: the sandbox process died",
        "evaluation failed: SystemExit",
        "evaluation failed: ModuleNotFoundError",
    ):
        assert any(reason.startswith(start) for reason in reasons), (start, reasons)

    def archive(out: Path) -> list[dict]:
        entries = json.loads((out / "merged_archive.json").read_text())
        return [{k: v for k, v in e.items() if k != "operator"} for e in entries]

    assert archive(hostile) == archive(syntax)
    assert len(archive(hostile)) > 3
    invalid = [
        json.loads((out / "summary.json").read_text())["invalid"] for out in (hostile, syntax)
    ]
    assert invalid[0] == invalid[1] > 0
