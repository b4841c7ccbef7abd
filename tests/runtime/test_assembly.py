"""assemble(): a run's parts built once from a configuration and the loaded plugins, without
running them (:mod:`dei_framework.runtime.assembly`)."""

from __future__ import annotations

import json

import attrs
import pytest

from dei_framework.contract.errors import ConfigError
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.files.checkpoints import write_checkpoint
from dei_framework.runtime.files.run_dir import RunDir
from dei_framework.runtime.node.assembly import LAG_PER_SLOT
from dei_framework.runtime.replay import RecordedOperator


def test_one_driver_per_node_with_the_lifecycle_the_domain_declares(
    build, toy_config, tmp_path
) -> None:
    config = toy_config(nodes=3, domain="toy-continual")
    assert config.lifecycle == ""  # unset: the domain decides

    parts = build(config, tmp_path)

    assert parts.config.lifecycle == "continual"
    assert [node.name for node in parts.nodes] == ["node-0", "node-1", "node-2"]
    assert list(parts.drivers) == ["node-0", "node-1", "node-2"]
    for name, driver in parts.drivers.items():
        scheduler = driver.scheduler
        assert (scheduler.name, scheduler.lifecycle) == (name, "continual")
        assert driver.operator is parts.operators[name]
        assert parts.operators[name].label == "toy-any"
        # No lag configured: six slots per call the operator may have in flight.
        assert scheduler.lag == LAG_PER_SLOT * parts.operators[name].max_in_flight
    assert len({id(driver) for driver in parts.drivers.values()}) == 3
    # The budget split equally: a hard cap per node.
    assert parts.ledger.quotas == {"node-0": 20, "node-1": 20, "node-2": 20}


def test_a_lifecycle_the_configuration_sets_wins_over_the_domains(
    build, toy_config, tmp_path
) -> None:
    parts = build(toy_config(domain="toy-continual", lifecycle="reset"), tmp_path)
    assert parts.config.lifecycle == "reset"
    assert {d.scheduler.lifecycle for d in parts.drivers.values()} == {"reset"}


def test_a_node_process_builds_its_own_node_and_leaves_common_ground_to_the_merge(
    build, toy_config, tmp_path
) -> None:
    config = toy_config(nodes=3, common_ground=True)

    whole = build(config, tmp_path / "whole")
    one = build(config, tmp_path / "one", local="node-1")

    assert whole.merge.reference is not None
    assert one.merge.reference is None
    assert list(one.drivers) == ["node-1"] and [node.name for node in one.nodes] == ["node-1"]
    assert one.ledger.quotas == {"node-1": whole.ledger.quotas["node-1"]}


def test_nodes_sharing_in_one_process_get_a_virtual_timeline(build, toy_config, tmp_path) -> None:
    sharing = build(toy_config(sharing="champion"), tmp_path / "sharing")
    alone = build(toy_config(sharing="none"), tmp_path / "alone")

    assert sharing.timeline is not None
    assert all(node.timeline is sharing.timeline for node in sharing.nodes)
    assert alone.timeline is None


def test_a_dynamic_allocator_sets_the_first_rounds_quotas_and_a_static_one_nothing(
    build, toy_config, tmp_path
) -> None:
    static = build(toy_config(rounds=4, allocation="static"), tmp_path / "static")
    bandit = build(toy_config(rounds=4, allocation="bandit"), tmp_path / "bandit")

    assert static.allocation is None
    assert not any(d.scheduler.allocated for d in static.drivers.values())
    first = bandit.allocation.decisions[0]
    assert set(first) == {"node-0", "node-1"}
    for name, driver in bandit.drivers.items():
        assert driver.scheduler.round_quotas == {0: first[name]}
        # A node's hard cap: the calls of its rounds so far.
        assert bandit.ledger.quotas[name] == first[name]


def test_an_operator_for_other_domains_is_refused_naming_it(build, toy_config, tmp_path) -> None:
    config = attrs.evolve(
        toy_config(domain="toy-continual"), nodes=[NodeConfig(name="node-0", operator="toy-random")]
    )
    with pytest.raises(ConfigError) as refused:
        build(config, tmp_path)
    assert str(refused.value) == (
        "operator 'toy-random' works with domains toy, not 'toy-continual'"
    )


def _recorded_run(build, config, path, *, lag: int):
    """A run directory as a replay reads it: node-0 recorded one call, every node's lag."""
    parts = build(config, path)
    run_dir = RunDir(path)
    run_dir.log_calls(
        [
            {
                "node": "node-0",
                "key": "node-0/r0/s0",
                "messages": [],
                "reply": {"text": "PROGRAM: 1 2"},
            }
        ]
    )
    for driver in parts.drivers.values():
        driver.scheduler.lag = lag
    write_checkpoint(run_dir, parts.drivers, parts.nodes, parts.ledger, parts.timeline)
    run_dir.close()
    return run_dir


def test_a_replay_serves_the_record_and_uses_its_lags(build, toy_config, tmp_path) -> None:
    config = toy_config(sharing="champion")
    record = _recorded_run(build, config, tmp_path / "record", lag=5)

    parts = build(config, tmp_path / "replay", replay_from=record)

    # node-0's calls are in the record; node-1 has none, and its offline operator runs again.
    assert isinstance(parts.operators["node-0"], RecordedOperator)
    assert parts.operators["node-0"].label == "toy-random"
    assert not isinstance(parts.operators["node-1"], RecordedOperator)
    assert {name: d.scheduler.lag for name, d in parts.drivers.items()} == {
        "node-0": 5,
        "node-1": 5,
    }
    # Receptions come from the record too: nothing is delivered live.
    assert parts.timeline is None
    assert parts.drivers["node-0"].replies is not None
    assert len(parts.drivers["node-0"].replies) == 1


def test_reasking_mismatched_calls_keeps_the_real_operator(build, toy_config, tmp_path) -> None:
    config = toy_config()
    record = _recorded_run(build, config, tmp_path / "record", lag=5)
    parts = build(config, tmp_path / "replay", replay_from=record, reask_mismatched=True)
    assert not any(isinstance(op, RecordedOperator) for op in parts.operators.values())


def test_a_resume_refuses_a_checkpoint_of_other_nodes_in_one_line(
    build, toy_config, tmp_path
) -> None:
    config = toy_config()
    parts = build(config, tmp_path)
    write_checkpoint(RunDir(tmp_path), parts.drivers, parts.nodes, parts.ledger, parts.timeline)

    with pytest.raises(ConfigError) as refused:
        build(config, tmp_path, local="node-0", resume=True)

    message = str(refused.value)
    assert "\n" not in message
    assert message == (
        f"{tmp_path / 'checkpoint.json'} is damaged: it holds nodes node-0, "
        "node-1 but the run has node-0; refusing to resume"
    )
    assert set(json.loads((tmp_path / "checkpoint.json").read_text())["nodes"]) == {
        "node-0",
        "node-1",
    }
