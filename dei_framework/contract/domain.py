"""The domain contract: what a search problem must provide (parsing, evaluation, prompts).

A domain turns operator text into programs, evaluates a program (against the node's opponents,
for an adversarial domain), reports raw descriptor values, and writes the prompts LLM operators
receive. Evaluation runs in worker processes, so a domain and its programs must be picklable.

Two kinds of domain fit the contract:

- **adversarial** (Core War): fitness depends on the opponents a program meets; the domain gives
  initial opponents, and runs use the ``reset`` archive lifecycle (a fresh archive each round,
  against an opponent pool that grows with the round champions: the Red Queen);
- **static** (symbolic regression, a numeric benchmark): fitness depends on the program alone;
  the domain gives no opponents (or only seed programs), ignores the ``opponents`` argument, and
  runs use the ``continual`` lifecycle (the archive persists; a round is a migration interval).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from dei_framework.contract.capabilities import settle
from dei_framework.contract.descriptors import AxisSpec
from dei_framework.contract.records import Candidate, Message
from dei_framework.contract.registry import Kind

#: Archive lifecycles (``Domain.lifecycle``, ``--lifecycle``, config key ``lifecycle``):
#: ``reset`` starts a fresh archive every round (Red Queen rounds: DRQ, DEI); ``continual`` keeps
#: one archive for the whole run (classic MAP-Elites, island models: a round is a migration
#: interval).
LIFECYCLES = ("reset", "continual")


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


@attrs.frozen(kw_only=True)
class GenomeEvaluations:
    """The outcome of :meth:`Domain.evaluate_genomes`: one row per genome.

    Attributes:
        fitness: Shape ``(n,)``; NaN marks a genome that has no valid evaluation.
        descriptors: Shape ``(n, len(descriptor_axes()))``, columns in the order of
            :meth:`Domain.descriptor_axes`.
    """

    fitness: Any
    descriptors: Any


@attrs.frozen(kw_only=True)
class PromptNeeds:
    """What a domain's prompts show besides the parent and the selector's other elites, so
    that the scheduler hands it over (:attr:`Domain.prompt_needs`). The default asks for
    nothing, and a domain that asks for nothing is planned exactly as before.

    Attributes:
        top: Best elites by fitness (not the parent) handed to :meth:`Domain.messages` as
            ``inspirations``, best first, with every mutation.
        diverse: Elites of other cells (not the parent, nor those above, nor the selector's
            others) drawn uniformly with the slot's generator, handed after them.
        info: Whether candidates keep their evaluation's ``info`` (``Candidate.info``).
        history: Ancestors each candidate keeps (``Candidate.lineage``), nearest first.
    """

    top: int = 0
    diverse: int = 0
    info: bool = False
    history: int = 0

    @property
    def inspirations(self) -> bool:
        """Whether requests carry inspirations at all."""
        return self.top > 0 or self.diverse > 0


class Domain(abc.ABC):
    """A search problem, adversarial (fitness against opponents) or static (fitness alone).

    Subclasses set :attr:`name` and :attr:`default_axes` and implement the abstract methods;
    an adversarial domain also overrides :meth:`initial_opponents`. Everything a user can get
    wrong (a program that does not parse, a bad option) raises a
    :class:`~dei_framework.contract.errors.DEIError` subclass with a message the user can act on.
    """

    #: The name users type after ``--domain``.
    name: str = ""
    #: Axes of the default grid, in order (names of :meth:`descriptor_axes` entries).
    default_axes: tuple[str, ...] = ()
    #: Lowest fitness a program can get; the QD-score offset (so QD-score is never negative).
    fitness_floor: float = 0.0
    #: The archive lifecycle of this domain's runs unless ``--lifecycle`` says otherwise (one of
    #: :data:`LIFECYCLES`). Empty: ``"reset"`` when :meth:`initial_opponents` gives any program,
    #: ``"continual"`` when it gives none (see :meth:`default_lifecycle`).
    lifecycle: str = ""
    #: Whether evaluating a program runs code the program brings (a Python heuristic, a
    #: kernel): such a domain's candidates are evaluated in a sandbox, ``process`` level, unless
    #: ``--sandbox`` says otherwise (see :mod:`dei_framework.evaluation.sandbox`). Programs that
    #: are data (warriors in a VM, vectors, expressions) leave it ``False`` and keep the direct
    #: path.
    executes_code: bool = False
    #: What the core may use besides the required methods, declared: ``"array"``
    #: (:meth:`evaluate_genomes` and :meth:`genome_texts`: the array path). A declared
    #: capability whose methods are not overridden is refused when the class is defined.
    capabilities: frozenset[str] = frozenset()
    #: Whether a program's evaluation is the same whatever the seed (and against the same
    #: opponents): an objective with no randomness, or one that brings its own fixed seed.
    #: Common ground then scores each elite and champion once, reusing its selection
    #: evaluation, instead of on ``common_seeds`` fresh seeds that would all give the same
    #: value. Leave it ``False`` when any evaluation draws on the seed (Core War's placements).
    deterministic: bool = False
    #: Default wall-clock seconds per candidate (``--eval-timeout`` overrides; ``None``: none).
    eval_timeout: float | None = None
    #: Default memory per candidate in MB (``--eval-memory`` overrides; ``None``: none).
    eval_memory: int | None = None
    #: What the prompts show besides the parent (:class:`PromptNeeds`): a domain asking for
    #: top or diverse programs gets them in :meth:`messages` as ``inspirations``.
    prompt_needs: PromptNeeds = PromptNeeds()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        settle(cls, Domain, {"array": ("evaluate_genomes", "genome_texts")})

    @abc.abstractmethod
    def parse(self, reply: str) -> Program:
        """Extracts and parses a program from operator output (fences, prose and all).

        Raises:
            InvalidProgram: nothing usable; the message (with a line number where it applies)
                is logged and shown to the next mutation of the same lineage.
        """

    def resolve_reply(self, reply: str, *, parent: Candidate | None) -> str:
        """The text :meth:`parse` receives for an operator's reply, knowing the parent.

        Optional: a code domain whose operators answer with edits (SEARCH/REPLACE diffs)
        applies them to ``parent``'s text here and returns the whole program; the default
        returns ``reply`` as it is. Called in the node's process for every operator reply
        (``parent`` is ``None`` for a ``new`` request), never for received champions or seed
        programs, so it must not run the program; ``calls.jsonl`` keeps the raw reply, and
        resume and replay resolve it again, so it must depend on its arguments alone.

        Raises:
            InvalidProgram: The reply cannot apply (a SEARCH text the parent does not hold):
                the candidate is invalid with this reason, fed back to the lineage.
        """
        return reply

    @abc.abstractmethod
    def evaluate(self, program: Program, opponents: Sequence[Program], *, seed: int) -> Evaluation:
        """Evaluates ``program``, deterministic in ``seed``.

        ``opponents`` are the round's opponent pool (possibly empty): an adversarial domain
        scores the program against them; a static domain ignores them (and ``seed``, if its
        objective has no noise). Runs in a worker process; must not touch shared state.
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
        return [
            self.evaluate(program, opponents, seed=seed)
            for program, seed in zip(programs, seeds, strict=True)
        ]

    def evaluate_genomes(self, genomes: Any, *, seeds: Sequence[int]) -> GenomeEvaluations:
        """Optional array form of :meth:`evaluate_batch` for a static domain whose programs are
        genomes (rows of an array): every row evaluated in one vectorised pass.

        Row ``i`` must give exactly what :meth:`evaluate` gives for the program parsed from
        ``genome_texts(genomes)[i]`` (``seeds[i]`` is its seed), so that a run's results do
        not depend on the path. With an offline operator that has
        :meth:`~dei_framework.contract.operators.Operator.propose_genomes`, ``dei-run`` then
        evaluates in the node's process without writing or parsing texts (docs/performance.md, "The
        array path"). The default raises :class:`NotImplementedError` (no array form).
        """
        raise NotImplementedError

    def genome_texts(self, genomes: Any) -> Sequence[str]:
        """The canonical program texts of ``genomes``' rows (what :meth:`parse` gives back
        unchanged), for the array path; a lazy sequence may write each text when it is first
        read (only the archive's elites are). Needed with :meth:`evaluate_genomes`."""
        raise NotImplementedError

    @abc.abstractmethod
    def descriptor_axes(self) -> Sequence[AxisSpec]:
        """Every axis this domain reports values for, with its default binning."""

    def initial_opponents(self) -> Sequence[str]:
        """Source texts of the initial programs: the opponent pool of an adversarial domain,
        optional seed programs of a static one. Default: none.

        They are the first round's warm start (evaluated before any operator call and offered
        to the archive); with the ``reset`` lifecycle they stay in the opponent pool and warm
        every round's fresh archive.
        """
        return ()

    def seed_programs(self) -> Sequence[str]:
        """Source texts of seed programs: where the search starts, without being opponents.
        Default: none.

        They are evaluated in the warm start of every fresh archive (round 0's with the
        ``continual`` lifecycle, every round's with ``reset``) and offered to it, like initial
        opponents, but they never join the opponent pool, do not make the default lifecycle
        ``reset`` (:meth:`default_lifecycle` reads :meth:`initial_opponents` only) and are
        not in the common-ground reference set. A static domain's starting programs belong
        here; an adversarial domain may add seeds beside its opponents.
        """
        return ()

    def default_lifecycle(self) -> str:
        """The archive lifecycle of this domain's runs: :attr:`lifecycle` if set, else
        ``"reset"`` for a domain with initial opponents and ``"continual"`` for one without."""
        if self.lifecycle:
            return self.lifecycle
        return "reset" if self.initial_opponents() else "continual"

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

        A domain whose :attr:`prompt_needs` asks for top or diverse programs also gets
        ``inspirations=`` (a tuple of candidates: the top ones, best first, then the diverse
        ones) for every mutation whose archive holds other elites (a new program's request
        gets none: it is one nothing in the round decides, which may be made early); other
        domains never get the argument.
        """

    def generality(self, program: Program) -> float | None:
        """Share of a fixed reference set the program beats or ties (``None`` if undefined).

        Called for round champions, in a worker process.
        """
        return None

    def generality_outcomes(self, program: Program) -> Mapping[str, bool] | None:
        """Per reference program (by name), whether ``program`` beats or ties it.

        A domain that gives these lets a node leave out of its generality the reference
        programs it fought or produced (see :meth:`reference_matches`); its generality is then
        the share of ``True`` among the rest. ``None`` (the default): only :meth:`generality`,
        with nothing left out. Called for round champions, in a worker process.
        """
        return None

    def reference_matches(self, program: Program) -> Sequence[str]:
        """Names (as in :meth:`generality_outcomes`) of the reference programs that ``program``
        is the same program as, by the domain's own notion of sameness (Core War: the same load
        image, whatever the comments and labels).

        Called in the worker for every program a node evaluates (its candidates, and its
        opponents, which every round's warm start re-evaluates); a node's generality leaves the
        matched reference programs out. Must be cheap. Default: no matches.
        """
        return ()

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
        and runs (see :mod:`dei_framework.analysis.common_ground`).
        """
        return self.initial_opponents()

    def fitness_scale(self, opponents: int) -> float:
        """How fitness scales with the number of opponents: the factor to divide by to compare
        evaluations against pools of different sizes.

        A domain whose fitness range grows with the number of programs in a battle (Core War:
        ``[0, N]`` for ``N`` warriors) returns that size for ``opponents`` opponents; then
        ``fitness / fitness_scale(k)`` is comparable between pools of different sizes.
        Reports say when the raw figures of two conditions come from different scales.
        Default ``1.0``: fitness does not depend on the pool (always so for a static domain).
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
            :class:`~dei_framework.contract.context.FactoryContext` (the mapping of the domain
            options, with the run's plugins and seed).
        description: One line for ``dei plugins``.
    """

    name: str
    factory: DomainFactory
    description: str = ""


#: The domains: ``registry.lookup(DOMAINS, name)`` is a :class:`DomainSpec`.
DOMAINS: Kind[DomainSpec] = Kind("dei_domains")
