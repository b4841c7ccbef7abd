"""DEI plugin entry point of Core War: the ``coreware`` domain, its descriptor axes, offline
operators, the ``--human-set`` run option and the ``dei coreware`` commands."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import click

from dei_framework import hookimpl
from dei_framework.contract.cli_options import RunOption
from dei_framework.contract.context import FactoryContext
from dei_framework.contract.descriptors import AxisSpec
from dei_framework.contract.domain import Domain, DomainSpec
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.operators import Operator, OperatorSettings, OperatorSpec
from dei_framework.contract.records import ExportedProgram


def _domain(ctx: FactoryContext) -> Domain:
    from dei_coreware.domain import CorewarDomain

    return CorewarDomain(ctx)


def _assembler_settings(domain: Domain | None):
    from dei_coreware.assembler import AssemblerSettings
    from dei_coreware.domain import CorewarDomain

    if isinstance(domain, CorewarDomain):
        return domain.settings.assembler_settings()
    return AssemblerSettings()


def _gp(ctx: OperatorSettings) -> Operator:
    from dei_coreware.operators.gp import GPOperator

    return GPOperator(
        _assembler_settings(ctx.domain), label=ctx.spec, strength=_strength(ctx, "gp")
    )


def _strength(settings: OperatorSettings, name: str) -> float:
    """The ``strength`` option (mutation strength, 1.0 by default) of an offline operator."""
    strength = settings.options.get("strength", 1.0)
    if isinstance(strength, bool) or not isinstance(strength, int | float) or strength <= 0:
        raise ConfigError(f"operator {name}: strength must be a positive number, got {strength!r}")
    return float(strength)


def _templates(ctx: OperatorSettings) -> Operator:
    from dei_coreware.operators.templates import TemplateOperator

    return TemplateOperator(_assembler_settings(ctx.domain), label=ctx.spec)


def _family(name: str):
    def build(ctx: OperatorSettings) -> Operator:
        from dei_coreware.operators.families import FAMILIES, FamilyOperator

        return FamilyOperator(
            FAMILIES[name],
            _assembler_settings(ctx.domain),
            label=ctx.spec,
            strength=_strength(ctx, name),
        )

    return build


#: The operator families (see dei_coreware.operators.families) with their one-line description.
_FAMILIES = {
    "bombers": "Core War family: dwarf, stone, core clear; fresh constants and edits",
    "papers": "Core War family: paper replicators; fresh constants and edits",
    "scanners": "Core War family: scanner, vampire; fresh constants and edits",
    "imps": "Core War family: imp, imp ring; fresh constants and edits",
}


@hookimpl
def dei_domains() -> list[DomainSpec]:
    return [
        DomainSpec(
            name="coreware",
            factory=_domain,
            description="Core War: Redcode warriors in a pMARS-exact MARS (DRQ/DEI)",
        )
    ]


@hookimpl
def dei_descriptor_axes() -> list[AxisSpec]:
    from dei_coreware.domain import descriptor_axes

    return descriptor_axes()


@hookimpl
def dei_operators() -> list[OperatorSpec]:
    return [
        OperatorSpec(
            name="gp",
            factory=_gp,
            offline=True,
            domains=("coreware",),
            description="Core War genetic programming: instruction edits, crossover "
            "(option strength: edits per mutation x strength)",
            ladder_option="strength",
            ladder_range=(0.5, 2.0),
        ),
        OperatorSpec(
            name="templates",
            factory=_templates,
            offline=True,
            domains=("coreware",),
            description="Core War strategy archetypes with random constants",
        ),
        *(
            OperatorSpec(
                name=name,
                factory=_family(name),
                offline=True,
                domains=("coreware",),
                description=description,
                default=False,
                ladder_option="strength",
                ladder_range=(0.5, 2.0),
            )
            for name, description in _FAMILIES.items()
        ),
    ]


@hookimpl
def dei_run_options() -> list[RunOption]:
    return [
        RunOption(
            option=click.Option(
                ["--human-set"],
                type=click.Path(file_okay=False),
                help="Folder of reference programs for generality (Core War: human warriors).",
            ),
            target="domain_options",
            convert=lambda folder: str(Path(folder).resolve()),
        )
    ]


@hookimpl
def dei_export_program(domain: str, program: ExportedProgram) -> tuple[str, str] | None:
    if domain != "coreware":
        return None
    from dei_coreware.export import export_text

    return ".red", export_text(program)


@hookimpl
def dei_cli_commands() -> list[Any]:
    # The simulator's CLI may not exist yet in a given checkout; the domain works without it.
    try:
        module = importlib.import_module("dei_coreware.cli")
    except ModuleNotFoundError as exc:
        if exc.name == "dei_coreware.cli":
            return []
        raise
    return [module.coreware_group]
