"""The domain contract: what a search problem must provide (parsing, evaluation, prompts).

A domain turns operator text into programs, evaluates a program against the node's opponents,
reports raw descriptor values, and writes the prompts LLM operators receive. Evaluation runs in
worker processes, so a domain and its programs must be picklable.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from dei_framework.descriptors import AxisSpec
from dei_framework.records import Candidate, Message


@attrs.frozen
class Program:
    """A parsed program.

    Attributes:
        text: Canonical source text (what is archived, shared with peers and shown to operators).
        data: The domain's own parsed form (e.g. a Redcode load image); must be picklable.
    """

    text: str
    data: Any = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen(kw_only=True)
class Evaluation:
    """The outcome of evaluating one program.

    Attributes:
        fitness: Higher is better.
        descriptor: Raw descriptor values by axis name (every axis the domain offers).
        info: Anything else worth logging (JSON-serialisable).
    """

    fitness: float
    descriptor: Mapping[str, float]
    info: Mapping[str, Any] = attrs.field(factory=dict)


class Domain(abc.ABC):
    """A search problem.

    Subclasses set :attr:`name` and :attr:`default_axes` and implement the abstract methods.
    Everything a user can get wrong (a program that does not parse, a bad option) raises a
    :class:`~dei_framework.errors.DEIError` subclass with a message the user can act on.
    """

    #: The name users type after ``--domain``.
    name: str = ""
    #: Axes of the default grid, in order (names of :meth:`descriptor_axes` entries).
    default_axes: tuple[str, ...] = ()
    #: Lowest fitness a program can get; the QD-score offset (so QD-score is never negative).
    fitness_floor: float = 0.0

    @abc.abstractmethod
    def parse(self, reply: str) -> Program:
        """Extracts and parses a program from operator output (fences, prose and all).

        Raises:
            InvalidProgram: nothing usable; the message (with a line number where it applies)
                is logged and shown to the next mutation of the same lineage.
        """

    @abc.abstractmethod
    def evaluate(self, program: Program, opponents: Sequence[Program], *, seed: int) -> Evaluation:
        """Evaluates ``program`` against ``opponents`` (possibly empty), deterministic in ``seed``.

        Runs in a worker process; must not touch shared state.
        """

    def evaluate_batch(
        self, programs: Sequence[Program], opponents: Sequence[Program], *, seeds: Sequence[int]
    ) -> Sequence[Evaluation]:
        """Evaluates several programs against the same opponents: ``seeds[i]`` is the seed of
        ``programs[i]``; returns one :class:`Evaluation` per program, in order.

        Optional: the evaluation workers hand a domain its work in batches (one batch crosses
        the process boundary once) and call this; the default evaluates the programs one by
        one. Override it with a vectorised version when one pass over many programs is cheaper
        (a numeric objective over a matrix); it must give what :meth:`evaluate` gives for each
        program, so a run's results do not depend on the batching. When it raises, the workers
        evaluate that batch's programs one by one, so an error is attributed to its program.
        """
        return [self.evaluate(program, opponents, seed=seed)
                for program, seed in zip(programs, seeds, strict=True)]  # fmt: skip

    @abc.abstractmethod
    def descriptor_axes(self) -> Sequence[AxisSpec]:
        """Every axis this domain reports values for, with its default binning."""

    @abc.abstractmethod
    def initial_opponents(self) -> Sequence[str]:
        """Source texts of the initial opponent pool (also the first round's warm start)."""

    @abc.abstractmethod
    def messages(
        self,
        kind: str,
        *,
        parent: Candidate | None = None,
        others: Sequence[Candidate] = (),
        feedback: str | None = None,
    ) -> list[Message]:
        """Chat messages for an LLM operator (system prompt first).

        Args:
            kind: ``"new"`` or ``"mutate"``.
            parent: The elite to mutate.
            others: More elites, for inspiration or crossover.
            feedback: The last parse error in the parent's lineage.
        """

    def generality(self, program: Program) -> float | None:
        """Share of a fixed reference set the program beats or ties (``None`` if undefined).

        Called for round champions, in a worker process.
        """
        return None

    def generality_reference(self) -> Sequence[str] | None:
        """Canonical texts of the reference set :meth:`generality` measures against.

        Recorded as ``generality.reference = {"count", "sha256"}`` in ``summary.json``, so two
        runs can tell whether their generality figures are comparable. ``None``: no set.
        """
        return None

    def reference_opponents(self) -> Sequence[str]:
        """Source texts of the common-ground reference set (default: the initial opponents).

        After a run with common ground (every experiment; ``dei-run --common-ground``), every
        merged-archive elite and every round champion is re-evaluated against this set with
        one seed derived from the set, so that fitness is comparable across nodes, conditions
        and runs (see :mod:`dei_framework.common`).
        """
        return self.initial_opponents()

    def fitness_scale(self, opponents: int) -> float:
        """How fitness scales with battle size: the factor to divide by to compare battles.

        A domain whose fitness range grows with the number of programs in a battle (Core War:
        ``[0, N]`` for ``N`` warriors) returns that size for ``opponents`` opponents; then
        ``fitness / fitness_scale(k)`` is comparable between battles of different sizes.
        Reports say when the raw figures of two conditions come from battles of different
        scales. Default ``1.0``: fitness does not depend on battle size.
        """
        return 1.0

    def options(self) -> dict[str, Any]:
        """The resolved domain options, recorded in the run's config."""
        return {}


#: ``factory(options)`` builds the domain from its options (``[domain]`` table + flags).
DomainFactory = Callable[[Mapping[str, Any]], Domain]


@attrs.frozen(kw_only=True)
class DomainSpec:
    """A domain a plugin registers through ``dei_domains``.

    Attributes:
        name: What users type after ``--domain``.
        factory: Builds the domain from its options, a
            :class:`~dei_framework.context.FactoryContext` (the mapping of the domain options,
            with the run's plugins and seed).
        description: One line for ``dei plugins``.
    """

    name: str
    factory: DomainFactory
    description: str = ""
