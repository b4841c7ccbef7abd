"""The evaluation-backend contract: where an :class:`~dei_framework.evaluation.local.Evaluator`'s
jobs run.

The evaluator keeps everything that decides a result (batching, the outcome of a job, what a
crash means); a backend only decides the place. It runs a worker function of
:mod:`dei_framework.evaluation.local` with the run's domain as its first argument, ships a round's
opponent set to its workers once, and stops them. Built in: ``local`` (a process pool on this
machine) and ``dask`` (a Dask distributed cluster, :mod:`dei_framework.evaluation.dask_backend`); a
plugin offers another through ``dei_evaluation_backends``.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from dei_framework.contract.context import FactoryContext
from dei_framework.contract.errors import DEIError
from dei_framework.contract.registry import Kind

#: Lanes a backend runs jobs on: candidate evaluations and parses, and champion generality
#: (which must never hold up a candidate: a backend runs it at a lower priority).
LANES = ("candidates", "generality")


class EvaluatorLost(DEIError):
    """The place evaluations run is gone (e.g. the Dask scheduler died or cannot be reached).

    A run that meets it checkpoints as on Ctrl-C; ``--resume`` continues it once the place is
    back (or with another ``--evaluator-address`` / ``--evaluator``).
    """


class WorkerDied(Exception):
    """The worker running a job died and the backend will not try the job again; the job's
    candidates become invalid with a message, as a candidate that crashes the domain does."""


class EvaluationBackend(abc.ABC):
    """Runs evaluation jobs somewhere: the contract the :class:`Evaluator` relies on.

    Every method is called from the event loop's thread; the async ones must never block it.
    """

    @property
    @abc.abstractmethod
    def workers(self) -> int:
        """How many jobs run at once (``0``: in threads of this process). The evaluator splits
        a turn's evaluations into that many batches."""

    async def start(self) -> None:  # noqa: B027 - nothing to do for a backend without a remote
        """Connects (and checks the workers); called before the first job, may raise
        :class:`~dei_framework.contract.errors.DEIError` with a message for the user."""

    def install(self, set_id: str, data: bytes) -> str:
        """Keeps a pickled opponent set where this backend's workers can load it (called once
        per set, synchronously); returns the file it was written to, or ``""``."""
        return ""

    @abc.abstractmethod
    async def ship(self, set_id: str, programs: Sequence[Any]) -> Any:
        """What a job carries in place of the opponent set ``set_id``: its id, the programs
        themselves (threads), or a handle on a copy every worker received once."""

    @abc.abstractmethod
    async def run(self, function: Callable[..., Any], *args: Any, lane: str = "candidates") -> Any:
        """``function(domain, *args)`` on a worker, where ``domain`` is the run's domain (or
        ``None`` where the worker has it installed); returns its result.

        Raises:
            WorkerDied: the worker died and the job is not tried again.
            EvaluatorLost: the backend itself is gone.
            Exception: whatever ``function`` raised.
        """

    @abc.abstractmethod
    def close(self, *, wait: bool = True) -> None:
        """Stops the workers this backend started (``wait``: let running jobs finish) and lets
        go of remote ones; never raises."""

    def kill(self) -> None:  # noqa: B027 - a backend without processes has nothing to kill
        """Kills the worker processes this backend started, at once (safe in a signal handler
        just before the process exits)."""


@attrs.frozen(kw_only=True)
class EvaluatorOptions(FactoryContext):
    """The context a backend factory receives: ``factory(ctx)`` with ``ctx.domain`` the run's
    domain (see :class:`~dei_framework.contract.context.FactoryContext`).

    Attributes:
        workers: ``--eval-workers`` (``None``: the backend's default; for ``local`` one per
            core, ``0`` threads; for a cluster started for the run, its worker processes).
        address: ``--evaluator-address`` (``None``: the backend's own default, e.g. a cluster
            started for the run).
        options: The ``[evaluator_options]`` table, for a plugin's backend.
        domain: The domain whose jobs the backend runs.
    """

    workers: int | None = None
    address: str | None = None


#: ``factory(ctx)`` builds the backend of one evaluator (``ctx.domain``: its domain).
BackendFactory = Callable[[EvaluatorOptions], EvaluationBackend]


@attrs.frozen
class EvaluatorSpec:
    """An evaluation backend a plugin registers through ``dei_evaluation_backends``.

    Attributes:
        name: What users type after ``--evaluator``.
        factory: ``factory(ctx)`` returns an :class:`EvaluationBackend`; it must not
            connect yet (:meth:`EvaluationBackend.start` does), and raises
            :class:`~dei_framework.contract.errors.ConfigError` for options it cannot use.
        description: One line for ``dei plugins``.
    """

    name: str
    factory: BackendFactory
    description: str = ""


#: The evaluation backends: ``registry.lookup(EVALUATORS, name)`` is an :class:`EvaluatorSpec`.
EVALUATORS: Kind[EvaluatorSpec] = Kind("dei_evaluation_backends")
