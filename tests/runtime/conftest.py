"""Fixtures of the runtime unit tests: the toy plugins loaded in this process, a run's
reactions kept in lists instead of logged, and :func:`assemble` with its evaluators closed
after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import toy_domain

from dei_framework.contract.domain import DomainSpec
from dei_framework.contract.operators import OperatorSpec
from dei_framework.plugin.hookspecs import hookimpl
from dei_framework.plugin.manager import PluginRegistry, load_plugins
from dei_framework.runtime.assembly import RunParts, assemble
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.files.run_dir import RunDir


class ContinualToy(toy_domain.ToyDomain):
    """The toy domain, declaring the ``continual`` archive lifecycle."""

    name = "toy-continual"
    lifecycle = "continual"


class ContinualToyPlugin:
    """Registers :class:`ContinualToy`, and an operator for it (``toy-random`` serves ``toy``
    only)."""

    @hookimpl
    def dei_domains(self):
        return [DomainSpec(name="toy-continual", factory=ContinualToy)]

    @hookimpl
    def dei_operators(self):
        return [OperatorSpec(name="toy-any", factory=lambda ctx: toy_domain.ToyOperator("toy-any"))]


class Reactions:
    """A run's reactions (:class:`~dei_framework.runtime.node.assembly.RunReactions`), kept."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.evaluated: list = []
        self.calls: list[dict] = []
        self.rounds: list[tuple[str, int]] = []
        self.checkpoints = 0

    def record(self, events: list[dict], calls: list[dict]) -> None:
        self.events.extend(events)
        self.calls.extend(calls)

    def evaluated(self, events) -> None:
        self.evaluated.extend(events)

    def round_ended(self, name: str) -> Callable[[Any, Any], None]:
        return lambda entry, archive: self.rounds.append((name, entry.round))

    def checkpoint(self) -> None:
        self.checkpoints += 1

    def progress(self, kind: str, data: dict[str, Any]) -> None:
        pass


def small_config(nodes: int = 2, **settings: Any) -> RunConfig:
    """A small toy run (``settings`` change it): ``nodes`` nodes of ``toy-random``
    (``toy-any`` on ``toy-continual``), 20 calls each over 2 rounds, evaluated in this process.
    """
    settings = {
        "domain": "toy",
        "budget": 20 * nodes,
        "rounds": 2,
        "eval_workers": 0,
        "seed": 3,
        **settings,
    }
    operator = "toy-random" if settings["domain"] == "toy" else "toy-any"
    return RunConfig(
        nodes=[NodeConfig(name=f"node-{i}", operator=operator) for i in range(nodes)], **settings
    )


@pytest.fixture
def toy_config() -> Callable[..., RunConfig]:
    """:func:`small_config`: ``toy_config(nodes=2, **settings)``."""
    return small_config


@pytest.fixture(scope="module")
def registry() -> PluginRegistry:
    """The installed plugins, the toy ones and :class:`ContinualToyPlugin`."""
    return load_plugins([toy_domain, ContinualToyPlugin()])


@pytest.fixture
def build(registry: PluginRegistry) -> Iterator[Callable[..., RunParts]]:
    """:func:`assemble` with this module's registry and fresh :class:`Reactions`; the parts'
    evaluators are closed after the test."""
    built: list[RunParts] = []

    def build(config: RunConfig, path: Path, **options: Any) -> RunParts:
        parts = assemble(config, registry, RunDir(path), Reactions(), **options)
        built.append(parts)
        return parts

    yield build
    for parts in built:
        parts.evaluator.close()
