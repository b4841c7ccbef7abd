"""A test hook that perturbs timing, to check that what should not depend on it does not.

Setting the environment variable ``DEI_CHAOS_STALL`` to a number of seconds makes every operator
call and every evaluation of a ``dei-run`` first sleep a random time between 0 and that many
seconds, drawn from the operating system's randomness (so two runs get different timings).
Seeded runs with virtual-time delivery must give identical results with or without it
(``tests/system/test_determinism.py``). It is meant for tests and experiments on reproducibility
only: it slows runs down and changes nothing else.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import functools
import os
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from dei_framework.contract.errors import ConfigError
from dei_framework.contract.operators import Operator
from dei_framework.evaluation.local import Evaluator

#: The environment variable holding the longest stall in seconds.
STALL_ENV = "DEI_CHAOS_STALL"


def stall_seconds(environ: Mapping[str, str] = os.environ) -> float:
    """The configured longest stall (0 when the hook is off)."""
    value = environ.get(STALL_ENV, "").strip()
    if not value:
        return 0.0
    try:
        seconds = float(value)
    except ValueError:
        raise ConfigError(f"{STALL_ENV} must be a number of seconds, got {value!r}") from None
    if not 0.0 <= seconds <= 60.0:
        raise ConfigError(f"{STALL_ENV} must be within [0, 60] seconds, got {value!r}")
    return seconds


def _stalled(function: Callable[..., Awaitable[Any]], longest: float) -> Callable[..., Any]:
    chance = random.SystemRandom()

    @functools.wraps(function)
    async def stalled(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(chance.uniform(0.0, longest))
        return await function(*args, **kwargs)

    return stalled


def install(evaluator: Evaluator, operators: Mapping[str, Operator]) -> None:
    """Makes the evaluator's evaluations and the operators' calls stall at random, when
    ``DEI_CHAOS_STALL`` asks for it."""
    longest = stall_seconds()
    if longest <= 0:
        return
    # Every way in is stalled: the driver sends a loop turn's evaluations through
    # ``evaluate_many``, a batching operator's calls through ``propose_batch``, and an
    # array-path step's genomes through ``evaluate_genomes``.
    evaluator.evaluate = _stalled(evaluator.evaluate, longest)  # type: ignore[method-assign]
    evaluator.evaluate_many = _stalled(evaluator.evaluate_many, longest)  # type: ignore[method-assign]
    evaluator.evaluate_genomes = _stalled(  # type: ignore[method-assign]
        evaluator.evaluate_genomes, longest
    )
    for operator in operators.values():
        operator.propose = _stalled(operator.propose, longest)  # type: ignore[method-assign]
        operator.propose_batch = _stalled(operator.propose_batch, longest)  # type: ignore[method-assign]
