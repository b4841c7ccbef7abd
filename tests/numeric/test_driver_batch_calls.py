"""dei-run's driver with a batching offline operator: a loop turn's calls go out as one
``propose_batch`` call, and the run is the one the per-call path makes; replay still checks
the messages, hashing the recorded ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dei_numeric.domain import NumericDomain
from dei_numeric.operators import GaussianOperator, IsoLineOperator, _NumericOperator

from dei_framework import NodeConfig, RunConfig, run
from dei_framework.contract.errors import ReplayMismatch


def _config() -> RunConfig:
    # The text path (the array path, which skips texts and call records, has its own tests).
    return RunConfig(
        domain="numeric",
        budget=400,
        rounds=2,
        seed=5,
        eval_workers=0,
        domain_options={"dim": 6},
        array_path=False,
        nodes=[
            NodeConfig(name="a", operator="gaussian"),
            NodeConfig(name="b", operator="iso-line"),
        ],
    )


def _calls(directory: Path) -> list[dict]:
    lines = (directory / "calls.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _without(record: dict, *keys: str) -> dict:
    return {key: value for key, value in record.items() if key not in keys}


def _rounds(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): path.read_text()
        for path in sorted(directory.glob("nodes/*/round-*.json"))
    }


def test_a_turns_calls_are_one_batch_and_the_run_equals_the_per_call_one(
    tmp_path, monkeypatch
) -> None:
    sizes: list[int] = []
    singles: list[str] = []
    batch = _NumericOperator.propose_batch
    propose = _NumericOperator.propose

    async def counted_batch(self, requests):
        sizes.append(len(requests))
        return await batch(self, requests)

    async def counted_propose(self, request):
        singles.append(request.key)
        return await propose(self, request)

    monkeypatch.setattr(_NumericOperator, "propose_batch", counted_batch)
    monkeypatch.setattr(_NumericOperator, "propose", counted_propose)
    run(_config(), tmp_path / "batched")
    # Calls of the next round made early, while a round drains, go out one by one.
    assert sum(sizes) + len(singles) == 400 and max(sizes) > 1 and sum(sizes) > 300
    singles.clear()
    # The per-call path: what the driver does for an operator that does not declare "batch".
    for operator in (GaussianOperator, IsoLineOperator):
        monkeypatch.setattr(operator, "capabilities", frozenset({"array"}))
    run(_config(), tmp_path / "per-call")
    assert len(singles) == 400

    batched, per_call = tmp_path / "batched", tmp_path / "per-call"
    assert (batched / "merged_archive.json").read_text() == (
        per_call / "merged_archive.json"
    ).read_text()
    assert _rounds(batched) == _rounds(per_call) and len(_rounds(batched)) == 4
    calls, expected = _calls(batched), _calls(per_call)
    assert all("messages_sha256" not in call for call in calls)
    assert all(call["messages_sha256"].startswith("sha256:") for call in expected)
    by_key = {call["key"]: _without(call, "seconds", "messages_sha256") for call in expected}
    assert {call["key"]: _without(call, "seconds") for call in calls} == by_key


def test_a_batched_run_replays_exactly_and_a_changed_prompt_is_caught(
    tmp_path, monkeypatch
) -> None:
    run(_config(), tmp_path / "first")
    run(_config(), tmp_path / "replay", replay_from=tmp_path / "first")
    assert (tmp_path / "replay" / "merged_archive.json").read_text() == (
        tmp_path / "first" / "merged_archive.json"
    ).read_text()
    replayed = _calls(tmp_path / "replay")
    assert len(replayed) == 400 and all(call.get("replayed") for call in replayed)

    messages = NumericDomain.messages

    def reworded(self, kind, **kwargs):
        return [
            {**message, "content": message["content"] + " Please."}
            for message in messages(self, kind, **kwargs)
        ]

    monkeypatch.setattr(NumericDomain, "messages", reworded)
    with pytest.raises(ReplayMismatch, match="has different messages"):
        run(_config(), tmp_path / "changed", replay_from=tmp_path / "first")


@pytest.mark.parametrize("array_path", [False, True], ids=["text-path", "array-path"])
def test_a_batched_numeric_run_stopped_midway_resumes_to_the_uninterrupted_run(
    toy_env, cli, tmp_path, array_path
) -> None:
    from midway import ctrl_c, events, stop_midway

    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "numeric"\nnodes = 2\nbudget = 8000\nrounds = 2\nseed = 2\n'
        "checkpoint_seconds = 0.1\neval_workers = 0\n"
        f"array_path = {str(array_path).lower()}\n"
    )
    stopped, whole = tmp_path / "stopped", tmp_path / "whole"
    common = ["--progress", "quiet", "--no-report"]
    run_args = ["--config", str(config), *common]
    # The stopped run's calls and evaluations stall at random (DEI_CHAOS_STALL, sleeps of up to
    # 100 ms): unstalled, an array-path run of 8000 evaluations can end before a loaded machine
    # gets round to stopping it, and its result must not depend on timing anyway.
    stalled = {**toy_env, "DEI_CHAOS_STALL": "0.1"}
    halted = stop_midway(
        [*run_args, "--out", str(stopped)], stopped, stalled, min_events=1500, send=ctrl_c
    )
    assert halted.returncode == 130, halted.stderr
    assert (
        cli("dei-run", "--resume", str(stopped), *common, env=toy_env, timeout=300).returncode == 0
    )
    assert cli("dei-run", *run_args, "--out", str(whole), env=toy_env, timeout=300).returncode == 0
    assert (stopped / "merged_archive.json").read_text() == (
        whole / "merged_archive.json"
    ).read_text()
    assert _rounds(stopped) == _rounds(whole) and len(_rounds(whole)) == 4
    if array_path:  # no call records: every call's candidate is evaluated once
        assert not (stopped / "calls.jsonl").exists()
        ids = [
            e["id"]
            for e in events(stopped)
            if e["event"] == "evaluated" and e["kind"] in ("new", "mutate")
        ]
        assert len(ids) == 8000 and len(set(ids)) == 8000
        return
    keys = [call["key"] for call in _calls(stopped)]
    assert len(keys) == 8000 and len(set(keys)) == 8000
