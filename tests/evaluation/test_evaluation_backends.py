"""Evaluation backends are plugins: a plugin's backend (``dei_evaluation_backends``) is chosen by
``evaluator`` / ``--evaluator``, runs every job of the run, and gives the local pool's results."""

from __future__ import annotations

import json

import pytest

from dei_framework import hookimpl
from dei_framework.contract.backend import EvaluatorOptions, EvaluatorSpec
from dei_framework.contract.errors import ConfigError
from dei_framework.evaluation.local import LocalBackend
from dei_framework.plugin.manager import load_plugins
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.ensemble import run


class CountingBackend(LocalBackend):
    """The local pool in threads, noting the jobs it runs."""

    def __init__(self, domain, jobs: list[str]) -> None:
        super().__init__(domain, workers=0)
        self.jobs = jobs

    async def run(self, function, *args, lane="candidates"):
        self.jobs.append(function.__name__)
        return await super().run(function, *args, lane=lane)


class CountingPlugin:
    """Registers ``counting``; notes the options of every backend made and their jobs."""

    def __init__(self) -> None:
        self.made: list[EvaluatorOptions] = []
        self.jobs: list[str] = []

    def make(self, ctx: EvaluatorOptions) -> CountingBackend:
        self.made.append(ctx)
        return CountingBackend(ctx.domain, self.jobs)

    @hookimpl
    def dei_evaluation_backends(self):
        return [
            EvaluatorSpec(
                name="counting", factory=self.make, description="the local pool, counted (tests)"
            )
        ]


def config(**placement) -> RunConfig:
    return RunConfig(
        domain="numeric",
        budget=200,
        rounds=2,
        seed=7,
        eval_workers=0,
        domain_options={"dim": 4},
        nodes=[
            NodeConfig(name="a", operator="gaussian"),
            NodeConfig(name="b", operator="iso-line"),
        ],
        **placement,
    )


def test_a_plugin_backend_runs_every_job_and_gives_the_local_results(tmp_path) -> None:
    plugin = CountingPlugin()
    registry = load_plugins(extra=[plugin])
    assert registry.evaluators["counting"].plugin.endswith("CountingPlugin")
    run(config(), tmp_path / "local", registry=registry)
    run(
        config(evaluator="counting", evaluator_address="somewhere", evaluator_options={"knob": 1}),
        tmp_path / "counting",
        registry=registry,
    )
    assert plugin.made == [
        EvaluatorOptions(workers=0, address="somewhere", options={"knob": 1}, seed=7)
    ]
    assert plugin.made[0].domain.name == "numeric" and plugin.made[0].registry is registry
    assert plugin.jobs.count("_parse_and_evaluate_batch") >= 2
    merged = [
        json.loads((tmp_path / name / "merged_archive.json").read_text())
        for name in ("local", "counting")
    ]
    assert len(merged[0]) > 5 and merged[0] == merged[1]


def test_an_unknown_backend_is_one_clear_error(tmp_path) -> None:
    with pytest.raises(
        ConfigError, match="unknown evaluation backend 'nowhere'; registered: dask, local"
    ):
        run(config(evaluator="nowhere"), tmp_path / "x", registry=load_plugins())
