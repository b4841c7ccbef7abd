"""The plugin DEI loads through the ``dei_framework`` entry point: domain, operator, CLI command.

Registered in ``pyproject.toml`` exactly as any third-party plugin would be::

    [project.entry-points.dei_framework]
    symreg = "dei_symreg.plugin"
"""

from __future__ import annotations

import json

import click

from dei_framework.contract.domain import DomainSpec
from dei_framework.contract.errors import DEIError
from dei_framework.contract.operators import OperatorSpec
from dei_framework.plugin.hookspecs import hookimpl
from dei_symreg.domain import SymRegDomain
from dei_symreg.operator import create


@hookimpl
def dei_domains() -> list[DomainSpec]:
    return [
        DomainSpec(
            name="symreg",
            factory=SymRegDomain,
            description="symbolic regression: expressions fitted to generated data (example)",
        )
    ]


@hookimpl
def dei_operators() -> list[OperatorSpec]:
    return [
        OperatorSpec(
            name="symreg-gp",
            factory=create,
            domains=("symreg",),
            description="genetic programming on expression trees (offline)",
        )
    ]


@click.group("symreg")
def symreg_group() -> None:
    """Symbolic-regression example domain."""


@symreg_group.command("score")
@click.argument("expression")
@click.option(
    "--domain-option",
    "domain_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="A domain option, repeatable (as for dei-run).",
)
def score_command(expression: str, domain_options: tuple[str, ...]) -> None:
    """Parse EXPRESSION and print its fitness and descriptors as JSON."""
    options = {}
    for pair in domain_options:
        key, _, value = pair.partition("=")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    try:
        domain = SymRegDomain(options)
        program = domain.parse(expression)
        evaluation = domain.evaluate(program, (), seed=0)
    except DEIError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(
        json.dumps(
            {
                "expression": program.text,
                "fitness": evaluation.fitness,
                "generality": domain.generality(program),
                **evaluation.info,
                "descriptor": dict(evaluation.descriptor),
            }
        )
    )


@hookimpl
def dei_cli_commands() -> list[click.Command]:
    return [symreg_group]
