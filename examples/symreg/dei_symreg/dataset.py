"""The regression data: generated deterministically from the options, with a held-out split.

Targets are written in the same expression language candidates use and parsed by the same
parser, so a target in a TOML file is as safe as a candidate from a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from dei_framework.contract.errors import ConfigError, InvalidProgram
from dei_symreg.expr import Limits, evaluate, parse_expression


@attrs.frozen(kw_only=True, eq=False)
class Dataset:
    """Inputs and targets, split into a training part (fitness) and a held-out part.

    Attributes:
        variables: Variable names, in column order.
        x_train: Training inputs, shape ``(n_train, n_variables)``.
        y_train: Training targets.
        x_test: Held-out inputs (used only for ``generality`` and logging).
        y_test: Held-out targets.
    """

    variables: tuple[str, ...]
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    def train_inputs(self) -> dict[str, np.ndarray]:
        """Training inputs by variable name (what :func:`~dei_symreg.expr.evaluate` takes)."""
        return {name: self.x_train[:, i] for i, name in enumerate(self.variables)}

    def test_inputs(self) -> dict[str, np.ndarray]:
        """Held-out inputs by variable name."""
        return {name: self.x_test[:, i] for i, name in enumerate(self.variables)}


def make_dataset(
    *,
    target: str,
    variables: Sequence[str],
    samples: int,
    test_fraction: float,
    low: float,
    high: float,
    noise: float,
    seed: int,
) -> Dataset:
    """Samples inputs uniformly in ``[low, high)`` and computes ``target`` on them.

    Args:
        target: The ground-truth expression, e.g. ``"x0^2 * sin(x1) + 0.5*x0"``.
        variables: Variable names.
        samples: Total number of points (training plus held-out).
        test_fraction: Share of points held out.
        low: Lower bound of every input.
        high: Upper bound of every input.
        noise: Standard deviation of Gaussian noise added to the targets, relative to their
            standard deviation (0 for exact data).
        seed: Seed of the sampling; the same options always give the same data.

    Raises:
        ConfigError: an option is out of range, or the target does not parse or is not finite
            on the sampled inputs.
    """
    if not variables or len(set(variables)) != len(variables):
        raise ConfigError(f"symreg: variables must be distinct names, got {list(variables)}")
    if samples < 4:
        raise ConfigError(f"symreg: samples must be at least 4, got {samples}")
    if not 0.0 < test_fraction < 1.0:
        raise ConfigError(f"symreg: test_fraction must be in (0, 1), got {test_fraction}")
    if not high > low:
        raise ConfigError(f"symreg: need high > low, got low={low}, high={high}")
    if noise < 0:
        raise ConfigError(f"symreg: noise must be >= 0, got {noise}")
    try:
        tree = parse_expression(
            target, variables=variables, limits=Limits(max_nodes=500, max_depth=64)
        )
    except InvalidProgram as exc:
        raise ConfigError(f"symreg: target {target!r}: {exc}") from None
    rng = np.random.default_rng(seed)
    x = rng.uniform(low, high, size=(samples, len(variables)))
    y = evaluate(tree, {name: x[:, i] for i, name in enumerate(variables)})
    if not np.all(np.isfinite(y)):
        raise ConfigError(f"symreg: target {target!r} is not finite on [{low}, {high})")
    if noise:
        y = y + rng.normal(0.0, noise * float(np.std(y) or 1.0), size=y.shape)
    n_test = max(1, int(round(samples * test_fraction)))
    return Dataset(
        variables=tuple(variables),
        x_train=x[n_test:],
        y_train=y[n_test:],
        x_test=x[:n_test],
        y_test=y[:n_test],
    )


def options_with_defaults(options: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict:
    """``options`` over ``defaults``; unknown keys are an error naming the known ones."""
    unknown = set(options) - set(defaults)
    if unknown:
        raise ConfigError(
            f"symreg: unknown domain options {sorted(unknown)}; known: {sorted(defaults)}"
        )
    return {**defaults, **options}
