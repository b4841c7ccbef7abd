"""Offline operators of the ``numeric`` domain: the two classic MAP-Elites variation operators.

* ``gaussian`` — isotropic Gaussian mutation, as pyribs' ``GaussianEmitter`` makes it: a child is
  its parent plus ``N(0, sigma^2 I)``; a new program is ``N(0, sigma^2 I)`` around the origin.
* ``iso-line`` — Iso+LineDD (Vassiliades & Mouret, 2018), as pyribs' ``IsoLineEmitter``: a
  child is ``parent + iso_sigma * N(0, I) + line_sigma * N(0, 1) * (other - parent)``, where
  ``other`` is a second elite (the scheduler hands it over in ``others``); without one it is
  the isotropic part alone.

Both ignore the chat messages and draw everything from the request's seed, so a run is
reproducible. The noise is counter-based (:func:`seeded_normals`): request ``r``'s numbers
depend on its seed alone, so a whole batch of requests is drawn in one vectorised pass, and
:meth:`~dei_framework.contract.operators.Operator.propose`, ``propose_batch`` and
``propose_genomes``
give the same child for a request however requests are grouped. ``propose_genomes`` is the
array form a library loop uses (no text is written; see ``NumericDomain.texts``). They are
written from the published descriptions; no pyribs code is used.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from dei_numeric.domain import NumericDomain, written_genome

from dei_framework.contract.errors import ConfigError
from dei_framework.contract.operators import (
    Operator,
    OperatorReply,
    OperatorRequest,
    OperatorSettings,
)
from dei_framework.contract.records import Candidate

# SplitMix64 (Steele, Lea & Flood, 2014): a stream seeded by ``s`` has its k-th word at
# mix(s + k * gamma) (mix: the xor-shift-multiply finaliser below); every word is computed on its
# own, so any block of words is one numpy pass.
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX_A = np.uint64(0xBF58476D1CE4E5B9)
_MIX_B = np.uint64(0x94D049BB133111EB)
_UNIT53 = 2.0**-53


_STEPS: dict[int, np.ndarray] = {}  # count -> the stream offsets of words 1 .. 2 count


def seeded_normals(seeds: Sequence[int], count: int) -> np.ndarray:
    """``count`` standard normal numbers per seed, row ``i`` a function of ``seeds[i]`` alone.

    Row ``i`` takes words ``1 .. 2 count`` of the SplitMix64 stream seeded by ``seeds[i]`` and
    turns each pair ``(a, b)`` into one normal number by Box-Muller,
    ``sqrt(-2 ln u) cos(2 pi v)`` with the 53-bit uniforms ``u = (a >> 11 + 1/2) / 2**53``
    (never 0) and ``v = (b >> 11) / 2**53``. Done in place, in few numpy passes: a single
    request (``propose``) costs about what a batch of a few does.

    Args:
        seeds: Non-negative 64-bit seeds (request seeds are 31-bit).
        count: Numbers per seed.

    Returns:
        An array of shape ``(len(seeds), count)``.
    """
    steps = _STEPS.get(count)
    if steps is None:
        steps = _STEPS[count] = np.arange(1, 2 * count + 1, dtype=np.uint64) * _GAMMA
    words = np.array(seeds, dtype=np.uint64).reshape(-1, 1) + steps  # wraps modulo 2**64
    words ^= words >> np.uint64(30)
    words *= _MIX_A
    words ^= words >> np.uint64(27)
    words *= _MIX_B
    words ^= words >> np.uint64(31)
    words >>= np.uint64(11)
    uniforms = words.astype(float)
    radius, angle = uniforms[:, 0::2], uniforms[:, 1::2]
    radius += 0.5
    radius *= _UNIT53
    np.log(radius, out=radius)
    radius *= -2.0
    np.sqrt(radius, out=radius)
    angle *= 2.0 * np.pi * _UNIT53  # = 2 pi (b / 2**53): scaling by a power of two is exact
    np.cos(angle, out=angle)
    radius *= angle
    return radius


class _NumericOperator(Operator):
    """What both operators share: a batch of requests in, a batch of genomes out."""

    offline = True
    capabilities = frozenset({"batch"})
    domain: NumericDomain

    def _genome(self, candidate: Candidate) -> np.ndarray:
        """A candidate's genome: its cached parsed form, else its text parsed."""
        data = candidate.data
        if isinstance(data, np.ndarray) and data.shape == (self.domain.dim,):
            return data
        return self.domain.genome(candidate.text)

    async def propose_batch(self, requests: Sequence[OperatorRequest]) -> list[OperatorReply]:
        return [
            OperatorReply(text=written_genome(row))
            for row in self.propose_genomes(requests).tolist()
        ]

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        """One request's reply. Calls made in the same turn of the event loop (``dei-run``
        starts up to ``max_in_flight`` at once) are drawn together in one vectorised pass:
        numpy's per-call cost would otherwise dominate a single small genome. Each reply
        depends on its own request only, so grouping changes nothing in the result."""
        loop = asyncio.get_running_loop()
        reply = loop.create_future()
        pending = self.__dict__.setdefault("_pending", [])
        pending.append((request, reply))
        if len(pending) == 1:
            loop.call_soon(self._answer_pending)
        return await reply

    def _answer_pending(self) -> None:
        pending, self._pending = self._pending, []
        try:
            rows = self.propose_genomes([request for request, _ in pending]).tolist()
        except Exception as exc:  # noqa: BLE001 - handed to every caller, as propose would raise
            for _, reply in pending:
                if not reply.done():
                    reply.set_exception(exc)
            return
        for (_, reply), row in zip(pending, rows, strict=True):
            if not reply.done():  # a caller cancelled meanwhile
                reply.set_result(OperatorReply(text=written_genome(row)))

    def _parents(self, requests: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Each request's starting genome (the origin for a new program) and whether it
        mutates a parent."""
        starts = np.zeros((len(requests), self.domain.dim))
        mutates = np.array([request.parent is not None for request in requests], dtype=bool)
        if mutates.any():
            starts[mutates] = [
                self._genome(request.parent) for request in requests if request.parent is not None
            ]
        return starts, mutates


class GaussianOperator(_NumericOperator):
    """Isotropic Gaussian mutation.

    Args:
        domain: The domain (its dimension).
        sigma: Standard deviation of the noise on every coordinate.
        max_in_flight: Concurrent calls.
    """

    label = "gaussian"
    capabilities = frozenset({"batch", "array"})

    def __init__(self, domain: NumericDomain, *, sigma: float = 0.5, max_in_flight: int = 8):
        self.domain = domain
        self.sigma = sigma
        self.max_in_flight = max_in_flight

    def propose_genomes(self, requests: Sequence[Any]) -> np.ndarray:
        starts, _ = self._parents(requests)
        noise = seeded_normals([request.seed for request in requests], self.domain.dim)
        return starts + self.sigma * noise


class IsoLineOperator(_NumericOperator):
    """Iso+LineDD mutation.

    Args:
        domain: The domain (its dimension).
        iso_sigma: Standard deviation of the isotropic part.
        line_sigma: Standard deviation of the step along the line to another elite.
        max_in_flight: Concurrent calls.
    """

    label = "iso-line"
    capabilities = frozenset({"batch", "array"})

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

    def propose_genomes(self, requests: Sequence[Any]) -> np.ndarray:
        dim = self.domain.dim
        starts, mutates = self._parents(requests)
        # dim isotropic numbers, then the step along the line (drawn for every request so a
        # request's numbers do not depend on the others').
        noise = seeded_normals([request.seed for request in requests], dim + 1)
        children = starts + self.iso_sigma * noise[:, :dim]
        for row, request in enumerate(requests):
            if mutates[row] and request.others:
                other = self._genome(request.others[0])
                step = self.line_sigma * noise[row, dim]
                children[row] += step * (other - starts[row])
        return children


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
    return GaussianOperator(
        _domain(settings, domain, "gaussian"),
        sigma=_positive(settings, "sigma", 0.5),
        max_in_flight=_concurrency(settings),
    )


def create_iso_line(settings: OperatorSettings, domain: Any) -> IsoLineOperator:
    """The ``iso-line`` factory: options ``iso_sigma`` (0.01), ``line_sigma`` (0.2) and
    ``concurrency`` (8)."""
    return IsoLineOperator(
        _domain(settings, domain, "iso-line"),
        iso_sigma=_positive(settings, "iso_sigma", 0.01),
        line_sigma=_positive(settings, "line_sigma", 0.2),
        max_in_flight=_concurrency(settings),
    )


#: Operator name -> factory.
FACTORIES: dict[str, Callable[[OperatorSettings, Any], Operator]] = {
    "gaussian": create_gaussian,
    "iso-line": create_iso_line,
}
