"""The outcome of evaluating one program (and of parsing one), and the checks a domain's
answer must pass.

Shared by every place a program is evaluated: the local workers
(:mod:`~dei_framework.evaluation.local`), the sandbox's forked children
(:mod:`~dei_framework.evaluation.sandbox.zygote`) and Dask workers. Nothing here starts a
process or holds worker state.

Internal: not public API (the public names are :mod:`dei_framework`'s; an
:class:`Outcome` is what :func:`dei_framework.evaluate` returns); anything here may change in
any release.
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import attrs

from dei_framework.contract.domain import Domain, Evaluation, Program
from dei_framework.contract.errors import InvalidProgram
from dei_framework.search.scheduler import Result, WorkItem

__all__ = [
    "Outcome",
    "Parsed",
    "check_evaluation",
    "evaluate_parsed",
    "finite_number",
    "reference_matches",
]


@attrs.frozen
class Parsed:
    """What parsing one text gave: the program, or why the text is not one.

    Attributes:
        program: The parsed program (``None`` when the text did not parse).
        error: Why it did not parse: the domain's message, or ``parse failed: ...`` for a
            parser that broke (``None`` when it parsed).
    """

    program: Program | None = None
    error: str | None = None

    @property
    def valid(self) -> bool:
        """Whether the text parsed (:attr:`program` is set)."""
        return self.program is not None


@attrs.frozen(kw_only=True)
class Outcome:
    """What evaluating one piece of operator output gave.

    Attributes:
        program: The parsed program (``None`` when it did not parse).
        evaluation: Fitness and descriptor (``None`` when invalid).
        error: Why it is invalid (parse error with line number, or evaluation failure).
        seconds: Time spent parsing and evaluating.
        matches: Reference programs the program is (:meth:`Domain.reference_matches`).
        output: What a sandboxed program wrote to its standard output and error (up to the
            sandbox's output limit; logged under ``output`` when not empty).
        output_truncated: Whether it wrote more (logged as ``output_truncated: true``).
    """

    program: Program | None = None
    evaluation: Evaluation | None = None
    error: str | None = None
    seconds: float = 0.0
    matches: tuple[str, ...] = ()
    output: str = ""
    output_truncated: bool = False

    def result(self, item: WorkItem, *, operator: str = "", **info: Any) -> Result:
        """The scheduler :class:`~dei_framework.search.scheduler.Result` of ``item`` (for
        ``tell``)."""
        text = self.program.text if self.program is not None else None
        data = self.program.data if self.program is not None else None
        if self.matches:  # logged, and left out of the node's generality reference
            info = {**info, "generality_matches": list(self.matches)}
        if self.output:
            info = {**info, "output": self.output}
        if self.output_truncated:
            info = {**info, "output_truncated": True}
        if self.evaluation is None:
            return Result(item=item, text=text, error=self.error, operator=operator, info=info)
        if self.evaluation.info:  # the domain's extra figures, logged under their own key
            info = {**info, "info": dict(self.evaluation.info)}
        return Result(
            item=item,
            text=text,
            fitness=float(self.evaluation.fitness),
            descriptor=dict(self.evaluation.descriptor),
            operator=operator,
            info=info,
            data=data,
        )


def finite_number(value: object) -> bool:
    """Whether ``value`` is an int or float (not a bool) and finite."""
    if type(value) is float:  # nearly always (checked once per value of every evaluation)
        return math.isfinite(value)
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def check_evaluation(
    evaluation: object, required: Collection[str], known: Collection[str] | None
) -> str | None:
    """Why a domain's answer breaks the contract, or ``None`` when it is usable.

    Args:
        evaluation: What ``Domain.evaluate`` returned.
        required: Descriptor keys the node's archive needs.
        known: Every key the domain may report (``None``: any key).
    """
    if not isinstance(evaluation, Evaluation):
        return f"domain returned {type(evaluation).__name__}, not an Evaluation"
    fitness = evaluation.fitness
    if not finite_number(fitness):
        return f"domain returned fitness {fitness!r}, not a finite number"
    descriptor = evaluation.descriptor
    if type(descriptor) is not dict and not isinstance(descriptor, Mapping):
        return f"domain returned a descriptor of type {type(descriptor).__name__}, not a mapping"
    # The sets below only when a key is missing or unknown (they cost more than the checks).
    if not all(key in descriptor for key in required):
        missing = sorted(set(required) - set(descriptor))
        if missing:
            return f"domain returned no descriptor value for axis {', '.join(map(repr, missing))}"
    if known is not None and not all(key in known or key in required for key in descriptor):
        extra = sorted(set(map(str, descriptor)) - set(known) - set(required))
        if extra:
            return f"domain returned unknown descriptor key {', '.join(map(repr, extra))}"
    for key, value in descriptor.items():
        if not finite_number(value):
            return f"domain returned descriptor {key!r} = {value!r}, not a finite number"
    return None


def evaluate_parsed(
    domain: Domain,
    program: Program,
    opponents: Sequence[Program],
    seed: int,
    required: Collection[str],
    known: Collection[str] | None,
    *,
    started: float,
) -> Outcome:
    """Evaluates a parsed program; never raises for a bad program or a domain answer that
    breaks the contract (see :func:`check_evaluation`). ``started`` is when its parse began
    (:func:`time.perf_counter`): the outcome's seconds count from there."""
    matches = reference_matches(domain, program)
    try:
        evaluation = domain.evaluate(program, opponents, seed=seed)
    except InvalidProgram as exc:
        return Outcome(
            program=program, error=str(exc), seconds=time.perf_counter() - started, matches=matches
        )
    except Exception as exc:  # a domain bug on hostile input must not stop the search
        return Outcome(
            program=program,
            error=f"evaluation failed: {type(exc).__name__}: {exc}",
            seconds=time.perf_counter() - started,
            matches=matches,
        )
    problem = check_evaluation(evaluation, required, known)
    if problem is not None:
        return Outcome(
            program=program,
            error=f"evaluation failed: {problem}",
            seconds=time.perf_counter() - started,
            matches=matches,
        )
    return Outcome(
        program=program,
        evaluation=evaluation,
        seconds=time.perf_counter() - started,
        matches=matches,
    )


def reference_matches(domain: Domain, program: Program) -> tuple[str, ...]:
    """The generality reference programs ``program`` is (none if the domain cannot tell)."""
    try:
        return tuple(sorted(str(name) for name in domain.reference_matches(program)))
    except Exception:  # a domain bug here must not lose the evaluation
        return ()
