"""A node's replies evaluated: each operator reply resolved against its parent into the text its
domain parses (a reply that does not resolve is refused as invalid), then every text scored in
one batch of the shared evaluation pool.

Used by :class:`~dei_framework.runtime.driver.SearchDriver` for the replies that came in
together and for the scheduler's items that need no call.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dei_framework.contract.domain import Domain
from dei_framework.contract.errors import InvalidProgram
from dei_framework.evaluation.local import Evaluator, OpponentSet
from dei_framework.search.scheduler import Result, WorkItem


async def evaluate_replies(
    batch: Sequence[tuple[WorkItem, str, str, Mapping[str, Any]]],
    *,
    domain: Domain,
    evaluator: Evaluator,
    opponents: OpponentSet | None,
    axes: Sequence[str],
) -> list[Result]:
    """Evaluates ``(item, program text, operator, timings)`` entries in the shared pool,
    in one batch (an operator's reply first made the text its domain parses, knowing the
    parent: :meth:`~dei_framework.contract.domain.Domain.resolve_reply`).

    Args:
        batch: The entries; an item that needed no call carries its program's text as is.
        domain: The node's domain (resolves the replies).
        evaluator: The shared evaluation pool.
        opponents: The round's opponents, installed in the pool.
        axes: Descriptor keys every evaluation must report.

    Returns:
        The refused replies' results first, then the evaluated entries' in batch order.
    """
    refused: list[Result] = []
    entries = []
    for item, text, operator, info in batch:
        if item.needs_call:
            try:
                text = domain.resolve_reply(text, parent=item.parent)
            except InvalidProgram as exc:  # a diff that does not apply, say: invalid
                refused.append(
                    Result(
                        item=item,
                        error=str(exc),
                        operator=operator,
                        info={"timings": {"eval_s": 0.0, **info}},
                    )
                )
                continue
            except Exception as exc:  # noqa: BLE001 - a domain bug on hostile input
                refused.append(
                    Result(
                        item=item,
                        operator=operator,
                        info={"timings": {"eval_s": 0.0, **info}},
                        error=f"resolving the reply failed: {type(exc).__name__}: {exc}",
                    )
                )
                continue
        entries.append((item, text, operator, info))
    if not entries:
        return refused
    outcomes = await evaluator.evaluate_many(
        [(text, item.eval_seed) for item, text, _, _ in entries], opponents, axes=axes
    )
    return refused + [
        outcome.result(
            item, operator=operator, timings={"eval_s": round(outcome.seconds, 6), **info}
        )
        for (item, _, operator, info), outcome in zip(entries, outcomes, strict=True)
    ]
