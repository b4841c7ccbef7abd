"""Descriptor axes and spaces: how raw behaviour measurements map to a MAP-Elites grid cell."""

from __future__ import annotations

import abc
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from dei_framework.contract.errors import ConfigError, PluginError
from dei_framework.contract.registry import Kind


class Axis(abc.ABC):
    """One descriptor axis: a name and a way to turn a raw value into a bin index."""

    name: str

    @property
    @abc.abstractmethod
    def bins(self) -> int:
        """Number of bins along this axis."""

    @abc.abstractmethod
    def index(self, value: float) -> int:
        """The bin of ``value`` (always within ``[0, bins)``; out-of-range values clamp)."""

    def indices(self, values: np.ndarray) -> np.ndarray:
        """The bins of many values (``int64``), each what :meth:`index` gives for it.

        This default calls :meth:`index` per value; built-in axes compute them vectorised.
        """
        values = np.asarray(values, dtype=float).tolist()
        return np.fromiter(map(self.index, values), dtype=np.int64, count=len(values))

    @abc.abstractmethod
    def to_json(self) -> dict[str, Any]:
        """A JSON description from which :func:`axis_from_json` rebuilds the axis."""

    @abc.abstractmethod
    def labels(self) -> list[str]:
        """One human-readable label per bin (for plots and reports)."""


@attrs.frozen
class ThresholdAxis(Axis):
    """Bins cut at ascending thresholds, as DRQ does.

    ``thresholds = (1, 10, 100)`` gives 4 bins: ``< 1``, ``[1, 10)``, ``[10, 100)``, ``>= 100``.
    """

    name: str
    thresholds: tuple[float, ...] = attrs.field(converter=tuple)

    def __attrs_post_init__(self) -> None:
        if not self.thresholds or list(self.thresholds) != sorted(set(self.thresholds)):
            raise ConfigError(
                f"axis {self.name!r}: thresholds must be strictly ascending, got {self.thresholds}"
            )

    @property
    def bins(self) -> int:
        return len(self.thresholds) + 1

    def index(self, value: float) -> int:
        return int(np.searchsorted(self.thresholds, value, side="right"))

    def indices(self, values: np.ndarray) -> np.ndarray:
        return np.searchsorted(
            self.thresholds, np.asarray(values, dtype=float), side="right"
        ).astype(np.int64)

    def labels(self) -> list[str]:
        t = [_fmt(x) for x in self.thresholds]
        return [f"<{t[0]}"] + [f"{a}-{b}" for a, b in zip(t, t[1:], strict=False)] + [f">={t[-1]}"]

    def to_json(self) -> dict[str, Any]:
        return {"kind": "threshold", "name": self.name, "thresholds": list(self.thresholds)}


@attrs.frozen
class UniformAxis(Axis):
    """``count`` equal-width bins over ``[low, high)`` (``bins`` is the same number)."""

    name: str
    low: float
    high: float
    count: int

    def __attrs_post_init__(self) -> None:
        if not (self.high > self.low and self.count >= 1):
            raise ConfigError(f"axis {self.name!r}: need high > low and at least one bin")

    @property
    def bins(self) -> int:
        return self.count

    def index(self, value: float) -> int:
        if not math.isfinite(value):
            return 0 if value < 0 or math.isnan(value) else self.count - 1
        position = (value - self.low) / (self.high - self.low) * self.count
        return min(max(int(math.floor(position)), 0), self.count - 1)

    def indices(self, values: np.ndarray) -> np.ndarray:
        # The same float operations as index(), elementwise; nan goes to bin 0 and the
        # infinities clamp, as there.
        values = np.asarray(values, dtype=float)
        with np.errstate(invalid="ignore", over="ignore"):
            position = np.floor((values - self.low) / (self.high - self.low) * self.count)
        position[np.isnan(position)] = 0.0
        return np.clip(position, 0, self.count - 1).astype(np.int64)

    def labels(self) -> list[str]:
        edges = np.linspace(self.low, self.high, self.count + 1)
        return [f"{_fmt(a)}-{_fmt(b)}" for a, b in zip(edges, edges[1:], strict=False)]

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "uniform",
            "name": self.name,
            "low": self.low,
            "high": self.high,
            "count": self.count,
        }


@attrs.frozen
class LogAxis(Axis):
    """``count`` bins equal in ``log10`` over ``[low, high)``, for values spanning decades."""

    name: str
    low: float
    high: float
    count: int

    def __attrs_post_init__(self) -> None:
        if not (self.high > self.low > 0 and self.count >= 1):
            raise ConfigError(f"axis {self.name!r}: need high > low > 0 and at least one bin")

    @property
    def bins(self) -> int:
        return self.count

    def index(self, value: float) -> int:
        if not value > self.low:
            return 0
        if math.isinf(value):  # clamps, as every other out-of-range value (was OverflowError)
            return self.count - 1
        span = math.log10(self.high) - math.log10(self.low)
        position = (math.log10(value) - math.log10(self.low)) / span * self.count
        return min(max(int(math.floor(position)), 0), self.count - 1)

    def labels(self) -> list[str]:
        edges = np.geomspace(self.low, self.high, self.count + 1)
        return [f"{_fmt(a)}-{_fmt(b)}" for a, b in zip(edges, edges[1:], strict=False)]

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "log",
            "name": self.name,
            "low": self.low,
            "high": self.high,
            "count": self.count,
        }


#: A learned axis's range spans at most this many units of a power of two (see
#: :func:`learned_bounds`): more gives a tighter range, fewer re-binnings per doubling.
LEARNED_UNITS = 8
#: The finest unit a learned range uses, as a power of two below the values' magnitude: a
#: constant feature gets a range of ``2**-LEARNED_PRECISION`` times its size.
LEARNED_PRECISION = 10


def learned_bounds(low: float, high: float) -> tuple[float, float]:
    """The bounds a learned axis gives values seen in ``[low, high]`` (finite, ``low <= high``).

    The range is ``[k * u, (k + n) * u)`` for the smallest power of two ``u`` (no finer than
    ``2**-LEARNED_PRECISION`` of the values' magnitude) for which ``n``, the units the seen
    values touch, is at most :data:`LEARNED_UNITS`. It depends on the lowest and highest value
    seen alone, not on the order they came in (so a merge of archives gets the bounds one
    archive seeing all their values would have), every bound is exact in binary floating point,
    and it grows by whole powers of two: the bounds change O(log range) times however many
    values arrive. The seen values span more than ``1 / LEARNED_UNITS``-th of the range less
    one unit, at least about 3/8 of it.
    """
    scale = max(abs(low), abs(high))
    unit = math.ldexp(1.0, (math.frexp(scale)[1] if scale > 0 else 1) - LEARNED_PRECISION)
    while True:
        first, last = math.floor(low / unit), math.floor(high / unit)
        if last - first < LEARNED_UNITS:
            return first * unit, (last + 1) * unit
        unit *= 2.0


@attrs.frozen
class LearnedAxis(Axis):
    """``count`` equal-width bins over bounds learned from the values seen.

    ``seen`` is the lowest and highest value seen (``None``: none yet, every value in bin 0);
    :attr:`low` and :attr:`high` are :func:`learned_bounds` of it. The axis itself never
    changes: an archive over it replaces it with :meth:`widened` when a value falls outside
    ``seen`` and, when the bounds move, re-bins its elites.
    """

    name: str
    count: int
    seen: tuple[float, float] | None = attrs.field(
        default=None, converter=lambda s: None if s is None else (float(s[0]), float(s[1]))
    )
    low: float | None = attrs.field(init=False, default=None, eq=False)
    high: float | None = attrs.field(init=False, default=None, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.count < 1:
            raise ConfigError(f"axis {self.name!r}: need at least one bin")
        if self.seen is not None:
            low, high = self.seen
            if not (math.isfinite(low) and math.isfinite(high) and low <= high):
                raise ConfigError(f"axis {self.name!r}: seen range {self.seen} is not finite")
            bounds = learned_bounds(low, high)
            object.__setattr__(self, "low", bounds[0])
            object.__setattr__(self, "high", bounds[1])

    @property
    def bins(self) -> int:
        return self.count

    def covers(self, low: float, high: float) -> bool:
        """Whether ``[low, high]`` lies in the seen range (non-finite ends teach nothing)."""
        seen = self.seen
        if seen is None:
            return not (math.isfinite(low) or math.isfinite(high))
        return not (seen[0] > low > -math.inf) and not (seen[1] < high < math.inf)

    def widened(self, low: float, high: float) -> LearnedAxis:
        """This axis having seen ``[low, high]`` too (non-finite ends ignored)."""
        ends = [v for v in (low, high) if math.isfinite(v)] + list(self.seen or ())
        if not ends:
            return self
        return LearnedAxis(self.name, self.count, (min(ends), max(ends)))

    def fixed(self) -> UniformAxis:
        """The current bins as a fixed :class:`UniformAxis` (a grid comparisons can share).

        Raises:
            ConfigError: no value has been seen yet.
        """
        if self.low is None or self.high is None:
            raise ConfigError(f"axis {self.name!r}: no value seen, no bounds learned")
        return UniformAxis(self.name, self.low, self.high, self.count)

    def index(self, value: float) -> int:
        if self.low is None or self.high is None:
            return 0
        return UniformAxis.index(self, value)  # type: ignore[arg-type]

    def indices(self, values: np.ndarray) -> np.ndarray:
        if self.low is None or self.high is None:
            return np.zeros(len(np.asarray(values)), dtype=np.int64)
        return UniformAxis.indices(self, values)  # type: ignore[arg-type]

    def labels(self) -> list[str]:
        if self.low is None or self.high is None:
            return ["(not learned)"] * self.count
        return UniformAxis.labels(self)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "learned",
            "name": self.name,
            "count": self.count,
            "seen": None if self.seen is None else list(self.seen),
            # For readers (the bounds follow from seen; axis_from_json recomputes them).
            "low": self.low,
            "high": self.high,
        }


def axis_from_json(data: Mapping[str, Any]) -> Axis:
    """Rebuilds an axis from :meth:`Axis.to_json` output."""
    kind = data.get("kind")
    if kind == "threshold":
        return ThresholdAxis(data["name"], tuple(data["thresholds"]))
    if kind == "uniform":
        return UniformAxis(data["name"], data["low"], data["high"], data["count"])
    if kind == "log":
        return LogAxis(data["name"], data["low"], data["high"], data["count"])
    if kind == "learned":
        return LearnedAxis(data["name"], data["count"], data.get("seen"))
    raise ConfigError(f"unknown axis kind {kind!r}")


def check_descriptor(descriptor: Any) -> Mapping[str, float]:
    """Returns ``descriptor`` if it is a mapping of axis name to value.

    Raises:
        PluginError: it is not (a tuple of values, say), with a message showing the fix.
    """
    if not isinstance(descriptor, Mapping):
        raise PluginError(
            "a descriptor must map axis names to values, e.g. {'tsp': 3, 'mc': 0.4}; got "
            f"{type(descriptor).__name__} {descriptor!r:.80}"
        )
    return descriptor


@attrs.frozen
class DescriptorSpace:
    """The grid: an ordered tuple of axes. A cell is a tuple of bin indices, one per axis."""

    axes: tuple[Axis, ...] = attrs.field(converter=tuple)

    def __attrs_post_init__(self) -> None:
        if not self.axes:
            raise ConfigError("a descriptor space needs at least one axis")
        names = [axis.name for axis in self.axes]
        if len(set(names)) != len(names):
            raise ConfigError(f"descriptor axes repeat a name: {names}")

    @property
    def names(self) -> tuple[str, ...]:
        """Axis names in grid order."""
        return tuple(axis.name for axis in self.axes)

    @property
    def shape(self) -> tuple[int, ...]:
        """Bins per axis."""
        return tuple(axis.bins for axis in self.axes)

    @property
    def cells(self) -> int:
        """Total number of cells."""
        return int(np.prod(self.shape))

    def cell(self, descriptor: Mapping[str, float]) -> tuple[int, ...]:
        """The cell of a raw descriptor.

        Raises:
            PluginError: ``descriptor`` is not a mapping of axis name to value.
            KeyError: ``descriptor`` lacks one of the axes.
        """
        if type(descriptor) is not dict:  # (a dict passes the check: once per evaluation)
            check_descriptor(descriptor)
        return tuple([axis.index(float(descriptor[axis.name])) for axis in self.axes])

    def indices(self, values: np.ndarray) -> np.ndarray:
        """The cells of many raw descriptors: ``values`` has one row per descriptor and one
        column per axis (in :attr:`names` order); row ``i`` of the result is the cell
        :meth:`cell` gives for row ``i``.

        Raises:
            ValueError: ``values`` is not a 2-D array with one column per axis.
        """
        values = np.asarray(values, dtype=float)
        if values.ndim != 2 or values.shape[1] != len(self.axes):
            raise ValueError(
                f"descriptor values of shape {values.shape}: need (n, "
                f"{len(self.axes)}), one column per axis {self.names}"
            )
        return np.stack(
            [axis.indices(values[:, k]) for k, axis in enumerate(self.axes)], axis=1
        ).reshape(len(values), len(self.axes))

    @property
    def learned(self) -> tuple[int, ...]:
        """Positions of the axes whose bounds are learned (:class:`LearnedAxis`)."""
        return tuple(k for k, axis in enumerate(self.axes) if isinstance(axis, LearnedAxis))

    def joined(self, others: Iterable[DescriptorSpace]) -> DescriptorSpace:
        """This space with each learned axis widened to what the learned axis of the same
        name in each of ``others`` saw: the common grid of archives that learned their bounds
        apart (the union of the ranges seen; other axes stay as they are)."""
        axes = list(self.axes)
        for other in others:
            for k in self.learned:
                theirs = next((a for a in other.axes if a.name == axes[k].name), None)
                if isinstance(theirs, LearnedAxis) and theirs.seen is not None:
                    axes[k] = axes[k].widened(*theirs.seen)  # type: ignore[attr-defined]
        return self if axes == list(self.axes) else DescriptorSpace(axes)

    def fixed(self) -> DescriptorSpace:
        """This space with every learned axis that saw a value fixed at its current bounds
        (:meth:`LearnedAxis.fixed`): a grid that no longer moves."""
        return DescriptorSpace(
            [
                axis.fixed() if isinstance(axis, LearnedAxis) and axis.seen is not None else axis
                for axis in self.axes
            ]
        )

    def to_json(self) -> list[dict[str, Any]]:
        """JSON description (see :meth:`from_json`)."""
        return [axis.to_json() for axis in self.axes]

    @classmethod
    def from_json(cls, data: Sequence[Mapping[str, Any]]) -> DescriptorSpace:
        """Rebuilds a space from :meth:`to_json` output."""
        return cls(tuple(axis_from_json(item) for item in data))


@attrs.frozen(kw_only=True)
class AxisSpec:
    """A descriptor axis a plugin registers through ``dei_descriptor_axes``.

    Attributes:
        name: The axis name users select (``--axes tsp,mc``) and domains report values under.
        axis: The binning to use; a :class:`LearnedAxis` learns its bounds from the values
            seen (the grid archive widens it).
        domain: The domain whose evaluations carry this value; empty means any domain.
        description: One line for ``dei plugins``.
    """

    name: str
    axis: Axis
    domain: str = ""
    description: str = ""


def _fmt(value: float) -> str:
    if math.isinf(value):
        return "inf"
    return f"{value:g}"


#: The descriptor axes: ``registry.lookup(AXES, name)`` is an :class:`AxisSpec`.
AXES: Kind[AxisSpec] = Kind("dei_descriptor_axes")
