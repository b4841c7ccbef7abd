"""The plugin DEI loads through the ``dei_framework`` entry point: the ``python`` domain, its
``python-ast`` operator, the ``--task`` flag and the nodes a task's ``config.yaml`` names
(one per model of ``llm.models``, for a run given no ``--operator``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from dei_framework.contract.cli_options import RunOption
from dei_framework.contract.context import FactoryContext
from dei_framework.contract.default_nodes import DefaultNodes
from dei_framework.contract.domain import Domain, DomainSpec
from dei_framework.contract.operators import Operator, OperatorSettings, OperatorSpec
from dei_framework.contract.records import ExportedProgram
from dei_framework.plugin.hookspecs import hookimpl


def _domain(ctx: FactoryContext) -> Domain:
    from dei_python.domain import PythonDomain

    return PythonDomain(ctx)


def _operator(ctx: OperatorSettings) -> Operator:
    from dei_python.mutate import create

    return create(ctx, ctx.domain)


@hookimpl
def dei_domains() -> list[DomainSpec]:
    return [
        DomainSpec(
            name="python",
            factory=_domain,
            description="Python programs: an OpenEvolve task folder (--task DIR; "
            "default: bundled FunSearch bin packing)",
        )
    ]


@hookimpl
def dei_operators() -> list[OperatorSpec]:
    return [
        OperatorSpec(
            name="python-ast",
            factory=_operator,
            domains=("python",),
            description="seeded AST mutations of the evolve block (offline)",
        )
    ]


@hookimpl
def dei_run_options() -> list[RunOption]:
    return [
        RunOption(
            option=click.Option(
                ["--task"],
                type=click.Path(file_okay=False, exists=True),
                help="python domain: an OpenEvolve task folder (initial_program.py, "
                "evaluator.py, optional config.yaml).",
            ),
            target="domain_options",
            convert=lambda folder: str(Path(folder).resolve()),
        )
    ]


@hookimpl
def dei_export_program(domain: str, program: ExportedProgram) -> tuple[str, str] | None:
    """A python program exports as a runnable ``.py`` file."""
    if domain != "python":
        return None
    return ".py", program.text


@hookimpl
def dei_default_nodes(
    domain: str, options: Mapping[str, Any], operators: tuple[str, ...]
) -> DefaultNodes | None:
    """One node per model of the task's ``config.yaml`` (:mod:`dei_python.models`)."""
    if domain != "python":
        return None
    from dei_python.models import default_nodes

    return default_nodes(options, operators)
