"""Offline operators of the ``numeric`` domain: the two classic MAP-Elites variation operators.

* ``gaussian`` — isotropic Gaussian mutation, as pyribs' ``GaussianEmitter`` makes it: a child is
  its parent plus ``N(0, sigma^2 I)``; a new program is ``N(0, sigma^2 I)`` around the origin.
* ``iso-line`` — Iso+LineDD (Vassiliades & Mouret, 2018), as pyribs' ``IsoLineEmitter``: a
  child is ``parent + iso_sigma * N(0, I) + line_sigma * N(0, 1) * (other - parent)``, where
  ``other`` is a second elite (the scheduler hands it over in ``others``); without one it is
  the isotropic part alone.

Both ignore the chat messages and draw everything from the request's seed, so a run is
reproducible. They are written from the published descriptions; no pyribs code is used.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from dei_numeric.domain import NumericDomain, format_genome

from dei_framework.errors import ConfigError
from dei_framework.operators import Operator, OperatorReply, OperatorRequest, OperatorSettings


def _values(text: str) -> list[float]:
    """The genome of a canonical program text (the domain wrote it)."""
    return [float(token) for token in text.split()]


class GaussianOperator(Operator):
    """Isotropic Gaussian mutation.

    Args:
        domain: The domain (its dimension).
        sigma: Standard deviation of the noise on every coordinate.
        max_in_flight: Concurrent calls.
    """

    offline = True
    label = "gaussian"

    def __init__(self, domain: NumericDomain, *, sigma: float = 0.5, max_in_flight: int = 8):
        self.domain = domain
        self.sigma = sigma
        self.max_in_flight = max_in_flight

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        rng = random.Random(request.seed)
        sigma = self.sigma
        if request.parent is None:
            start = [0.0] * self.domain.dim
        else:
            start = _values(request.parent.text)
        return OperatorReply(text=format_genome([x + rng.gauss(0.0, sigma) for x in start]))


class IsoLineOperator(Operator):
    """Iso+LineDD mutation.

    Args:
        domain: The domain (its dimension).
        iso_sigma: Standard deviation of the isotropic part.
        line_sigma: Standard deviation of the step along the line to another elite.
        max_in_flight: Concurrent calls.
    """

    offline = True
    label = "iso-line"

    def __init__(
        self,
        domain: NumericDomain,
        *,
        iso_sigma: float = 0.01,
        line_sigma: float = 0.2,
        max_in_flight: int = 8,
    ):
        self.domain = domain
        self.iso_sigma = iso_sigma
        self.line_sigma = line_sigma
        self.max_in_flight = max_in_flight

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        rng = random.Random(request.seed)
        iso = self.iso_sigma
        if request.parent is None:
            return OperatorReply(text=format_genome([rng.gauss(0.0, iso) for _ in
                                                     range(self.domain.dim)]))  # fmt: skip
        parent = _values(request.parent.text)
        child = [x + rng.gauss(0.0, iso) for x in parent]
        if request.others:
            step = rng.gauss(0.0, self.line_sigma)
            other = _values(request.others[0].text)
            child = [c + step * (o - x) for c, o, x in zip(child, other, parent, strict=True)]
        return OperatorReply(text=format_genome(child))


def _positive(settings: OperatorSettings, name: str, default: float) -> float:
    try:
        value = float(settings.options.get(name, default))
    except (TypeError, ValueError):
        raise ConfigError(f"{settings.node}: option {name} must be a number") from None
    if not value > 0:
        raise ConfigError(f"{settings.node}: option {name} must be > 0, got {value}")
    return value


def _concurrency(settings: OperatorSettings) -> int:
    try:
        value = int(settings.options.get("concurrency", 8))
    except (TypeError, ValueError):
        raise ConfigError(f"{settings.node}: option concurrency must be an integer") from None
    if value < 1:
        raise ConfigError(f"{settings.node}: concurrency must be at least 1, got {value}")
    return value


def _domain(settings: OperatorSettings, domain: Any, operator: str) -> NumericDomain:
    if not isinstance(domain, NumericDomain):
        raise ConfigError(f"{settings.node}: {operator} works only with --domain numeric")
    return domain


def create_gaussian(settings: OperatorSettings, domain: Any) -> GaussianOperator:
    """The ``gaussian`` factory: options ``sigma`` (default 0.5) and ``concurrency`` (8)."""
    return GaussianOperator(_domain(settings, domain, "gaussian"),
                            sigma=_positive(settings, "sigma", 0.5),
                            max_in_flight=_concurrency(settings))  # fmt: skip


def create_iso_line(settings: OperatorSettings, domain: Any) -> IsoLineOperator:
    """The ``iso-line`` factory: options ``iso_sigma`` (0.01), ``line_sigma`` (0.2) and
    ``concurrency`` (8)."""
    return IsoLineOperator(_domain(settings, domain, "iso-line"),
                           iso_sigma=_positive(settings, "iso_sigma", 0.01),
                           line_sigma=_positive(settings, "line_sigma", 0.2),
                           max_in_flight=_concurrency(settings))  # fmt: skip


#: Operator name -> factory.
FACTORIES: dict[str, Callable[[OperatorSettings, Any], Operator]] = {
    "gaussian": create_gaussian,
    "iso-line": create_iso_line,
}
