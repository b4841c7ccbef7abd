"""The array path (docs/performance.md): genomes from an offline operator straight to the
domain's vectorised evaluation and to ``Scheduler.tell_batch``, with no text written or parsed
(only the elites' texts, when read) and no ``calls.jsonl`` line.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from dei_framework.contract.domain import Domain, GenomeEvaluations
from dei_framework.contract.errors import BudgetExhausted, OperatorError
from dei_framework.contract.operators import Operator
from dei_framework.evaluation.local import Evaluator
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.search.archives import ArchiveBase
from dei_framework.search.scheduler import Scheduler, TellReport, WorkItem

#: Most call items one array-path step takes (the lag rule usually allows fewer).
ARRAY_BATCH = 1024


@attrs.frozen(kw_only=True)
class ArrayOutcome:
    """An array-path step's genomes and their evaluation, not yet counted or told.

    Attributes:
        items: The call items, in order.
        genomes: The operator's genome per item.
        fitness: Per item, its fitness (``None``: invalid).
        descriptors: Per item, its descriptors (or one value broadcast to all).
        errors: Per item, why it is invalid (``None``: valid).
        call_seconds: The operator's time for all the genomes.
        eval_seconds: The evaluation's time per genome.
    """

    items: Sequence[WorkItem]
    genomes: Sequence[Any]
    fitness: list[float | None]
    descriptors: np.ndarray | float
    errors: list[str | None]
    call_seconds: float
    eval_seconds: float


def array_path_columns(
    *,
    operator: Operator,
    domain: Domain,
    scheduler: Scheduler,
    evaluator: Evaluator,
    recorded: bool,
    capped: bool,
    axes: Sequence[str],
) -> list[int] | None:
    """The domain's descriptor columns of a node's axes when the array path applies, else
    ``None``: an offline operator and a domain that both have the array form, the built-in
    local evaluator, nothing ``recorded`` to serve, no cap but the call quota (not
    ``capped``), the scheduler's own ``axes`` and an archive without its own ``add`` (the
    conditions under which it gives what the text path gives)."""
    axis_names = [axis.name for axis in domain.descriptor_axes()]
    if not (
        operator.offline
        and "array" in operator.capabilities
        and "array" in domain.capabilities
        and evaluator.local
        and not recorded
        and not capped
        and set(axes) == set(scheduler.space.names) <= set(axis_names)
        and type(scheduler.archive).add is ArchiveBase.add
    ):
        return None
    return [axis_names.index(name) for name in scheduler.space.names]


async def array_step(
    items: Sequence[WorkItem],
    *,
    operator: Operator,
    evaluator: Evaluator,
    columns: Sequence[int],
    operator_bug: Callable[[Exception], OperatorError],
) -> ArrayOutcome:
    """Call items through the array path: the operator's genomes for all of them and the
    domain's vectorised evaluation, for the driver to count and tell.

    Raises:
        OperatorError: The operator failed (``operator_bug`` makes one of a plugin's bug).
    """
    started = time.perf_counter()
    try:
        genomes = operator.propose_genomes(items)
        if len(genomes) != len(items):
            raise ValueError(f"{len(genomes)} genomes for {len(items)} requests")
    except OperatorError:
        raise
    except Exception as exc:  # an operator plugin's bug stops its node, not the run
        raise operator_bug(exc) from exc
    call_seconds = time.perf_counter() - started
    started = time.perf_counter()
    try:
        scores = await evaluator.evaluate_genomes(genomes, [i.eval_seed for i in items])
        fitness, descriptors, errors = told_columns(scores, len(items), columns)
    except Exception as exc:  # noqa: BLE001 - a domain's bug: the batch is invalid, with why
        reason = f"domain's evaluate_genomes failed: {type(exc).__name__}: {exc}"
        fitness, descriptors, errors = [None] * len(items), 0.0, [reason] * len(items)
    return ArrayOutcome(
        items=items,
        genomes=genomes,
        fitness=fitness,
        descriptors=descriptors,
        errors=errors,
        call_seconds=call_seconds,
        eval_seconds=(time.perf_counter() - started) / len(items),
    )


def tell_arrays(
    outcome: ArrayOutcome,
    *,
    scheduler: Scheduler,
    ledger: BudgetLedger,
    domain: Domain,
    operator: str,
    columns: Sequence[int],
) -> TellReport | None:
    """Counts an array step's calls and tells its results (one
    :meth:`~dei_framework.search.scheduler.Scheduler.tell_batch`); ``None`` when a quota the
    scheduler's plan did not foresee stopped it instead.

    The driver calls this in its loop, and not in the step's own task: a checkpoint taken after
    the scheduler ended a round but before the driver wrote the round's file would send a
    resume looking for a file that is not there, and calls counted before their results were
    told would be counted again when a resume asks for them anew.
    """
    items = outcome.items
    try:
        ledger.count_free_calls(scheduler.name, len(items), seconds=outcome.call_seconds)
    except BudgetExhausted as exc:
        scheduler.stop(str(exc))
        return None
    timings = {"eval_s": round(outcome.eval_seconds, 6), "call_s": round(outcome.call_seconds, 6)}
    return scheduler.tell_batch(
        items,
        texts=domain.genome_texts(outcome.genomes),
        fitness=outcome.fitness,
        descriptors=np.broadcast_to(outcome.descriptors, (len(items), len(columns))),
        data=list(outcome.genomes),
        errors=outcome.errors,
        operator=operator,
        info={"timings": timings},
    )


def told_columns(
    scores: GenomeEvaluations, count: int, columns: Sequence[int]
) -> tuple[list[float | None], np.ndarray, list[str | None]]:
    """``tell_batch``'s fitness, descriptor and error columns from the domain's array
    evaluation (a row with a value that is not a finite number is invalid, with why).

    Raises:
        ValueError: the arrays do not have one row per genome.
    """
    fitness = np.asarray(scores.fitness, dtype=float)
    descriptors = np.asarray(scores.descriptors, dtype=float)
    if fitness.shape != (count,) or descriptors.ndim != 2 or len(descriptors) != count:
        raise ValueError(
            f"fitness of shape {fitness.shape} and descriptors of shape "
            f"{descriptors.shape} for {count} genomes"
        )
    descriptors = descriptors[:, columns]
    valid = np.isfinite(fitness) & np.isfinite(descriptors).all(axis=1)
    if valid.all():
        return fitness.tolist(), descriptors, [None] * count
    errors = [
        None if ok else "the domain's evaluation is not a finite number" for ok in valid.tolist()
    ]
    scores = [
        value if ok else None for value, ok in zip(fitness.tolist(), valid.tolist(), strict=True)
    ]
    return scores, np.where(valid[:, None], descriptors, 0.0), errors
