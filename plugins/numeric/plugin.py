"""The plugin DEI loads through the ``dei_framework`` entry point: the ``numeric`` domain and its
``gaussian`` and ``iso-line`` operators."""

from __future__ import annotations

from dei_numeric.domain import NumericDomain
from dei_numeric.operators import create_gaussian, create_iso_line

from dei_framework.contract.domain import DomainSpec
from dei_framework.contract.operators import Operator, OperatorSettings, OperatorSpec
from dei_framework.plugin.hookspecs import hookimpl


def _gaussian(ctx: OperatorSettings) -> Operator:
    return create_gaussian(ctx, ctx.domain)


def _iso_line(ctx: OperatorSettings) -> Operator:
    return create_iso_line(ctx, ctx.domain)


@hookimpl
def dei_domains() -> list[DomainSpec]:
    return [
        DomainSpec(
            name="numeric",
            factory=NumericDomain,
            description="static benchmark: shifted sphere/Rastrigin, linear projection "
            "(pyribs' tutorial problem)",
        )
    ]


@hookimpl
def dei_operators() -> list[OperatorSpec]:
    return [
        OperatorSpec(
            name="gaussian",
            factory=_gaussian,
            domains=("numeric",),
            description="isotropic Gaussian mutation (option sigma)",
            # homo-temp: sigma 0.25 ... 1.0 (four nodes: 0.25, 0.5 the default, ...)
            ladder_option="sigma",
            ladder_range=(0.25, 1.0),
        ),
        OperatorSpec(
            name="iso-line",
            factory=_iso_line,
            domains=("numeric",),
            description="Iso+LineDD mutation (options iso_sigma, line_sigma)",
        ),
    ]
