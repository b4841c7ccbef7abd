"""dei-run's array path: an offline operator's genomes go straight to the domain's vectorised
evaluation and to ``Scheduler.tell_batch``. It must give exactly the run the text path gives,
log every evaluation as the text path does (but no call records), and fail as the text path
fails: a bad row is an invalid candidate with its reason, a broken operator stops its node."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import numpy as np
import pytest
from dei_numeric.domain import NumericDomain
from dei_numeric.operators import _NumericOperator

from dei_framework import BudgetExhausted, BudgetLedger, NodeConfig, RunConfig, run


def _config(**changes) -> RunConfig:
    settings = {
        "domain": "numeric",
        "budget": 600,
        "rounds": 3,
        "seed": 11,
        "eval_workers": 0,
        "domain_options": {"dim": 6},
        "nodes": [
            NodeConfig(name="a", operator="gaussian"),
            NodeConfig(name="b", operator="iso-line"),
        ],
    }
    return RunConfig(**{**settings, **changes})


def _events(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "events.jsonl").read_text().splitlines()]


def _evaluated(directory: Path) -> dict[str, dict]:
    """Evaluated events by candidate id, without their timings (wall-clock figures)."""
    return {
        event["id"]: {k: v for k, v in event.items() if k != "timings"}
        for event in _events(directory)
        if event["event"] == "evaluated"
    }


def _files(directory: Path, pattern: str) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): path.read_text()
        for path in sorted(directory.glob(pattern))
    }


def test_the_array_path_makes_the_text_paths_run_without_texts_or_call_records(
    tmp_path, monkeypatch
) -> None:
    genome_calls: list[int] = []
    batch_calls: list[int] = []
    propose_genomes = {cls: cls.propose_genomes for cls in _NumericOperator.__subclasses__()}
    for cls, method in propose_genomes.items():

        def counted(self, requests, method=method):
            genome_calls.append(len(requests))
            return method(self, requests)

        monkeypatch.setattr(cls, "propose_genomes", counted)
    batch = _NumericOperator.propose_batch

    async def counted_batch(self, requests):
        batch_calls.append(len(requests))
        return await batch(self, requests)

    monkeypatch.setattr(_NumericOperator, "propose_batch", counted_batch)
    arrays, texts = tmp_path / "arrays", tmp_path / "texts"
    array_summary = run(_config(), arrays)
    assert batch_calls == [] and sum(genome_calls) == 600
    # Steps take what the lag rule lets be planned, not one loop turn's calls.
    assert max(genome_calls) > 8
    genome_calls.clear()
    text_summary = run(_config(array_path=False), texts)
    assert sum(batch_calls) + sum(genome_calls) >= 300  # the text path's own batches

    assert (arrays / "merged_archive.json").read_text() == (
        texts / "merged_archive.json"
    ).read_text()
    assert _files(arrays, "nodes/*/round-*.json") == _files(texts, "nodes/*/round-*.json")
    assert len(_files(arrays, "nodes/*/round-*.json")) == 6
    evaluated = _evaluated(arrays)
    assert evaluated == _evaluated(texts) and len(evaluated) > 600
    assert array_summary.merged == text_summary.merged
    assert [node.calls for node in array_summary.nodes.values()] == [300, 300]
    assert [node.array_path for node in array_summary.nodes.values()] == [True, True]
    assert [node.array_path for node in text_summary.nodes.values()] == [False, False]
    assert {n: attrs.evolve(node, array_path=False) for n, node in array_summary.nodes.items()} == (
        text_summary.nodes
    )
    # No call records on the array path; the text path logs every call.
    assert not (arrays / "calls.jsonl").exists()
    assert len((texts / "calls.jsonl").read_text().splitlines()) == 600

    # Champions crossed between the nodes on both paths alike (the nodes' lines interleave
    # in the log as they ran).
    def received(directory: Path) -> list[dict]:
        return sorted(
            (e for e in _events(directory) if e["event"] == "received"),
            key=lambda e: (e["node"], e["round"]),
        )

    assert len(received(arrays)) == 4 and received(arrays) == received(texts)


def test_a_cap_besides_the_call_quota_keeps_the_text_path(tmp_path) -> None:
    summary = run(_config(max_attempts_per_node=1000), tmp_path / "capped")
    assert [node.array_path for node in summary.nodes.values()] == [False, False]
    assert len((tmp_path / "capped" / "calls.jsonl").read_text().splitlines()) == 600


def test_rows_without_a_finite_evaluation_are_invalid_with_the_reason(
    tmp_path, monkeypatch
) -> None:
    evaluate_genomes = NumericDomain.evaluate_genomes

    def half_broken(self, genomes, *, seeds):
        scores = evaluate_genomes(self, genomes, seeds=seeds)
        fitness = np.array(scores.fitness, dtype=float)
        fitness[::2] = np.nan
        return type(scores)(fitness=fitness, descriptors=scores.descriptors)

    monkeypatch.setattr(NumericDomain, "evaluate_genomes", half_broken)
    run(_config(rounds=1), tmp_path / "run")
    made = [e for e in _events(tmp_path / "run") if e["event"] == "evaluated"]
    invalid = [e for e in made if e["status"] == "invalid"]
    assert len(made) == 600 and 250 < len(invalid) < 350
    assert {e["error"] for e in invalid} == {"the domain's evaluation is not a finite number"}
    assert all(e["fitness"] is None and e["cell"] is None for e in invalid)


def test_a_domain_whose_array_evaluation_raises_makes_its_batch_invalid(
    tmp_path, monkeypatch
) -> None:
    def broken(self, genomes, *, seeds):
        raise RuntimeError("no vectorised objective today")

    monkeypatch.setattr(NumericDomain, "evaluate_genomes", broken)
    summary = run(_config(rounds=1), tmp_path / "run")
    made = [e for e in _events(tmp_path / "run") if e["event"] == "evaluated"]
    assert len(made) == 600 and {e["error"] for e in made} == {
        "domain's evaluate_genomes failed: RuntimeError: no vectorised objective today"
    }
    assert summary.merged.stats.coverage == 0.0


def test_an_operator_that_raises_stops_its_node_with_the_cause(tmp_path, monkeypatch) -> None:
    def broken(self, requests):
        raise ZeroDivisionError("sigma is zero")

    monkeypatch.setattr(_NumericOperator.__subclasses__()[0], "propose_genomes", broken)
    run(
        _config(
            rounds=1,
            nodes=[
                NodeConfig(name="a", operator="gaussian"),
                NodeConfig(name="b", operator="iso-line"),
            ],
        ),
        tmp_path / "run",
    )
    stopped = [e for e in _events(tmp_path / "run") if e["event"] == "node_stopped"]
    assert [e["node"] for e in stopped] == ["a"]
    assert "operator 'gaussian' failed: ZeroDivisionError: sigma is zero" in stopped[0]["reason"]
    made = {e["node"] for e in _events(tmp_path / "run") if e["event"] == "evaluated"}
    assert made == {"b"}


def test_free_calls_are_counted_in_one_step_within_the_quota() -> None:
    ledger = BudgetLedger(quotas={"a": 10})
    ledger.count_free_calls("a", 4, seconds=0.5)
    usage = ledger.usage["a"]
    assert (usage.calls, usage.attempts, usage.cost_usd, usage.call_seconds) == (4, 4, 0.0, 2.0)
    assert ledger.remaining("a") == 6
    with pytest.raises(BudgetExhausted, match="7 calls asked, 6 left of the call budget of 10"):
        ledger.count_free_calls("a", 7)
    assert ledger.usage["a"].calls == 4


def test_the_command_line_flag_chooses_the_path_and_the_summary_says_which(cli, tmp_path) -> None:
    common = [
        "--domain",
        "numeric",
        "--nodes",
        "1",
        "--budget",
        "40",
        "--rounds",
        "1",
        "--eval-workers",
        "0",
        "--progress",
        "quiet",
        "--no-report",
    ]
    cli("dei-run", *common, "--out", str(tmp_path / "arrays"))
    cli("dei-run", *common, "--no-array-path", "--out", str(tmp_path / "texts"))
    for name, on in (("arrays", True), ("texts", False)):
        summary = json.loads((tmp_path / name / "summary.json").read_text())
        assert [node["array_path"] for node in summary["nodes"].values()] == [on]
        config = json.loads((tmp_path / name / "config.json").read_text())
        assert config["array_path"] is on
    assert not (tmp_path / "arrays" / "calls.jsonl").exists()
    assert len((tmp_path / "texts" / "calls.jsonl").read_text().splitlines()) == 40
    assert (tmp_path / "arrays" / "merged_archive.json").read_text() == (
        tmp_path / "texts" / "merged_archive.json"
    ).read_text()


def test_array_evaluations_leave_the_event_loop_only_when_dear() -> None:
    import asyncio
    import threading
    import time

    from dei_framework.evaluation.local import Evaluator

    class Timed(NumericDomain):
        spin = 0.0
        threads: list[str] = []

        def evaluate_genomes(self, genomes, *, seeds):
            Timed.threads.append(threading.current_thread().name)
            end = time.thread_time() + self.spin
            while time.thread_time() < end:  # CPU, as a dear objective spends it
                pass
            return super().evaluate_genomes(genomes, seeds=seeds)

    async def batches(domain: Timed, count: int) -> list[str]:
        evaluator = Evaluator(domain, workers=0)
        genomes = np.zeros((8, domain.dim))
        Timed.threads = []
        for _ in range(count):
            scores = await evaluator.evaluate_genomes(genomes, [0] * 8)
            assert np.asarray(scores.fitness).shape == (8,)
        evaluator.close()
        return Timed.threads

    loop_thread = threading.current_thread().name
    cheap = asyncio.run(batches(Timed({"dim": 4}), 4))
    # The first batch is measured in a thread; cheap ones then stay on the loop.
    assert cheap[0] != loop_thread and cheap[1:] == [loop_thread] * 3
    Timed.spin = 0.005
    dear = asyncio.run(batches(Timed({"dim": 4}), 3))
    assert loop_thread not in dear


def test_a_replay_of_an_array_path_run_makes_its_calls_again(tmp_path) -> None:
    first, replay = tmp_path / "first", tmp_path / "replay"
    run(_config(), first)
    summary = run(_config(), replay, replay_from=first)
    assert (replay / "merged_archive.json").read_text() == (
        first / "merged_archive.json"
    ).read_text()
    assert _files(replay, "nodes/*/round-*.json") == _files(first, "nodes/*/round-*.json")
    assert [node.array_path for node in summary.nodes.values()] == [True, True]


@pytest.mark.parametrize("array_path", [True, False], ids=["array-path", "text-path"])
def test_every_checkpoint_has_the_round_files_it_names(tmp_path, monkeypatch, array_path) -> None:
    # An array step used to tell its results in its own task: a checkpoint taken after that
    # task ended a round, before the node's loop wrote the round's file, named a finished
    # round whose file a resume then could not find. Checkpoints here are taken at every turn
    # of the event loop, so one falls into any such gap.
    from dei_framework.runtime import ensemble

    write_checkpoint = ensemble.write_checkpoint
    gaps: list[str] = []
    taken: list[int] = []

    def checked(run_dir, drivers, nodes, ledger, timeline):
        for name, driver in drivers.items():
            finished = driver.scheduler.round
            gaps.extend(
                f"{name} round {index}"
                for index in range(finished)
                if not run_dir.round_path(name, index).exists()
            )
        taken.append(1)
        write_checkpoint(run_dir, drivers, nodes, ledger, timeline)

    monkeypatch.setattr(ensemble, "write_checkpoint", checked)
    run(
        _config(array_path=array_path, checkpoint_seconds=0.0, budget=1200, rounds=6),
        tmp_path / "run",
    )
    assert len(taken) > 10 and gaps == []
