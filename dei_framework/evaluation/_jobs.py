"""The jobs an evaluation backend runs: parsing and evaluating candidates, and generality.

Every job is a function whose first argument is the run's domain, or ``None`` on a worker of
the local pool, which has the domain installed (:mod:`~dei_framework.evaluation._pool_worker`);
an opponent set arrives as its programs or, on such a worker, as its id. What a job computes
does not depend on where it runs, so every backend gives the same outcomes.
"""

from __future__ import annotations

import hashlib
import pickle
import time
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from dei_framework.contract.domain import Domain, Evaluation, GenomeEvaluations, Program
from dei_framework.contract.errors import InvalidProgram

# The module, not its _WORKER_DOMAIN: a worker installs the domain after importing this one.
from dei_framework.evaluation import _pool_worker
from dei_framework.evaluation.outcome import (
    Outcome,
    Parsed,
    check_evaluation,
    evaluate_parsed,
    reference_matches,
)
from dei_framework.evaluation.sandbox.policy import SandboxPolicy

if TYPE_CHECKING:
    from dei_framework.evaluation.sandbox.client import SandboxReply


def _parse_and_evaluate(
    domain: Domain | None,
    text: str,
    opponents: Sequence[Program] | str,
    seed: int,
    required: Collection[str] = (),
    known: Collection[str] | None = None,
) -> Outcome:
    domain = domain or _pool_worker._WORKER_DOMAIN
    started = time.perf_counter()
    if isinstance(opponents, str):  # an installed set's id
        opponents = _pool_worker._worker_opponents(opponents)
    try:
        program = domain.parse(text)
    except InvalidProgram as exc:
        return Outcome(error=str(exc), seconds=time.perf_counter() - started)
    return evaluate_parsed(domain, program, opponents, seed, required, known, started=started)


def _parse_and_evaluate_batch(
    domain: Domain | None,
    jobs: Sequence[tuple[str, int]],
    opponents: Sequence[Program] | str,
    required: Collection[str] = (),
    known: Collection[str] | None = None,
) -> list[Outcome | Exception]:
    """The worker-side batch job: parses every ``(text, seed)`` job, evaluates the programs
    that parsed with one :meth:`Domain.evaluate_batch` call, and checks every answer.

    Gives exactly the outcomes :func:`_parse_and_evaluate` gives job by job (bar the timings;
    a parser that crashes yields its exception in the job's place). When the batch call raises
    or answers with the wrong number of evaluations, the programs are evaluated one by one, so
    that each error lands on its own program.
    """
    domain = domain or _pool_worker._WORKER_DOMAIN
    if isinstance(opponents, str):  # an installed set's id
        opponents = _pool_worker._worker_opponents(opponents)
    outcomes: list[Outcome | Exception | None] = [None] * len(jobs)
    parsed: list[tuple[int, Program, int, float]] = []  # job index, program, seed, parse time
    for index, (text, seed) in enumerate(jobs):
        started = time.perf_counter()
        try:
            program = domain.parse(text)
        except InvalidProgram as exc:
            outcomes[index] = Outcome(error=str(exc), seconds=time.perf_counter() - started)
            continue
        except Exception as exc:  # raised to this job's caller alone, as a lone job's would be
            outcomes[index] = exc
            continue
        parsed.append((index, program, seed, time.perf_counter() - started))
    if parsed:
        started = time.perf_counter()
        try:
            evaluations = list(
                domain.evaluate_batch(
                    [p for _, p, _, _ in parsed], opponents, seeds=[s for _, _, s, _ in parsed]
                )
            )
        except Exception:  # noqa: BLE001 - found again, program by program, below
            evaluations = []
        share = (time.perf_counter() - started) / len(parsed)
        if len(evaluations) != len(parsed):
            for index, program, seed, _ in parsed:
                outcomes[index] = evaluate_parsed(
                    domain, program, opponents, seed, required, known, started=time.perf_counter()
                )
        else:
            for (index, program, _, parse_s), evaluation in zip(parsed, evaluations, strict=True):
                problem = check_evaluation(evaluation, required, known)
                seconds = parse_s + share
                matches = reference_matches(domain, program)
                outcomes[index] = (
                    Outcome(
                        program=program, evaluation=evaluation, seconds=seconds, matches=matches
                    )
                    if problem is None
                    else Outcome(
                        program=program,
                        error=f"evaluation failed: {problem}",
                        seconds=seconds,
                        matches=matches,
                    )
                )
    return outcomes  # type: ignore[return-value]  # every job has its outcome now


def _sandboxed_batch(
    domain: Domain | None,
    jobs: Sequence[tuple[str, int]],
    opponents: Sequence[Program] | str,
    required: Collection[str],
    known: Collection[str] | None,
    policy: SandboxPolicy,
) -> list[Outcome]:
    """The worker-side job of a sandboxed run: each ``(text, seed)`` evaluated in a child of
    this worker's warm process (:func:`~dei_framework.evaluation.sandbox.client.sandbox_for`), one
    at a time, so that whatever a program does lands on its own outcome.

    What comes back is plain data; the program is parsed again here (parsing is the
    domain's own code on the text and, by the domain contract, runs nothing of it) and the
    answer checked again (:func:`check_evaluation`), since a program can forge its reply.
    """
    from dei_framework.evaluation.sandbox.client import sandbox_for

    domain = domain or _pool_worker._WORKER_DOMAIN
    pickled: bytes | None = None  # the set as the warm process receives it, made once
    if isinstance(opponents, str):  # an installed set's id
        set_id, programs = opponents, _pool_worker._worker_opponents(opponents)
    else:
        programs = list(opponents)
        pickled = pickle.dumps(programs, protocol=pickle.HIGHEST_PROTOCOL)
        set_id = hashlib.blake2b(pickled, digest_size=16).hexdigest()
    sandbox = sandbox_for(domain, policy)
    required = tuple(required)
    known = None if known is None else frozenset(known)

    def set_data() -> bytes:
        return (
            pickled
            if pickled is not None
            else pickle.dumps(programs, protocol=pickle.HIGHEST_PROTOCOL)
        )

    outcomes = []
    for text, seed in jobs:
        reply = sandbox.evaluate(text, seed, set_id, set_data, required, known)
        outcomes.append(_sandboxed_outcome(domain, text, reply, required, known))
    return outcomes


def _sandboxed_outcome(
    domain: Domain,
    text: str,
    reply: SandboxReply,
    required: Collection[str],
    known: Collection[str] | None,
) -> Outcome:
    """The outcome of a sandbox's ``reply`` to ``text``: the program parsed again here, a valid
    answer checked again, and what the program printed."""
    program = None
    if reply.parsed:
        try:
            program = domain.parse(text)
        except Exception:  # noqa: BLE001 - parsed in the sandbox; no program is no loss
            program = None
    common = {
        "program": program,
        "seconds": reply.seconds,
        "matches": reply.matches,
        "output": reply.output,
        "output_truncated": reply.output_truncated,
    }
    if reply.status != "valid":
        return Outcome(error=reply.error, **common)
    evaluation = Evaluation(fitness=reply.fitness, descriptor=reply.descriptor, info=reply.info)
    problem = check_evaluation(evaluation, required, known)
    if problem is not None or program is None:
        problem = problem or "the text did not parse again outside the sandbox"
        return Outcome(error=f"evaluation failed: {problem}", **common)
    return Outcome(evaluation=evaluation, **common)


def _timed_batch(
    domain: Domain | None,
    jobs: Sequence[tuple[str, int]],
    opponents: Sequence[Program],
    required: Collection[str] = (),
    known: Collection[str] | None = None,
) -> tuple[list[Outcome | Exception], float]:
    """:func:`_parse_and_evaluate_batch` in this process, with the CPU seconds it took (of this
    thread: what other threads and processes do on a busy machine does not count)."""
    started = time.thread_time()
    outcomes = _parse_and_evaluate_batch(domain, jobs, opponents, required, known)
    return outcomes, time.thread_time() - started


def _timed_genomes(
    domain: Domain, genomes: Any, seeds: Sequence[int]
) -> tuple[GenomeEvaluations, float]:
    """``domain.evaluate_genomes`` with the CPU seconds it took (of this thread)."""
    started = time.thread_time()
    evaluations = domain.evaluate_genomes(genomes, seeds=seeds)
    return evaluations, time.thread_time() - started


def _parse(domain: Domain | None, text: str) -> Parsed:
    domain = domain or _pool_worker._WORKER_DOMAIN
    try:
        return Parsed(program=domain.parse(text))
    except InvalidProgram as exc:
        return Parsed(error=str(exc))
    except Exception as exc:  # a parser bug on hostile input is the input's problem here
        return Parsed(error=f"parse failed: {type(exc).__name__}: {exc}")


def _generality(domain: Domain | None, program: Program) -> float | None:
    domain = domain or _pool_worker._WORKER_DOMAIN
    return domain.generality(program)


def _generality_outcomes(domain: Domain | None, program: Program) -> dict[str, bool] | float | None:
    domain = domain or _pool_worker._WORKER_DOMAIN
    outcomes = domain.generality_outcomes(program)
    if outcomes is None:
        return domain.generality(program)
    return {str(name): bool(beaten) for name, beaten in outcomes.items()}
