"""The ``numeric`` domain: a real vector, a benchmark objective and a linear-projection descriptor.

The problem is the one pyribs' documentation uses to introduce MAP-Elites (facts read from its
tutorials; no code copied):

* **objective** — the negative *shifted sphere* ``-sum((x - 0.4 * 5.12)^2)`` (or the shifted
  *Rastrigin* ``-(10 d + sum(z^2 - 10 cos(2 pi z)))``, ``z = x - 0.4 * 5.12``), normalised to
  ``[0, 100]``: 100 at the optimum, 0 at the worst point of the bounds (for Rastrigin, at
  ``sum((low - shift)^2 + 20)``, a bound on its worst value there);
* **descriptor** — the linear projection: the sum of the first half and the sum of the second
  half of the *clipped* genome, where a coordinate outside ``[low, high]`` is replaced by
  ``high / x`` (so every component stays within the bounds and keeps its sign);
* **grid** — 100 x 100 bins over ``[-d/2 * high, d/2 * high]`` on each axis.

A program is the genome written as space-separated numbers (``repr`` of each float, so a text
round-trips exactly). There are no opponents: :meth:`NumericDomain.initial_opponents` is empty
and evaluation ignores the opponent pool and the seed (the objective is static).

:meth:`NumericDomain.evaluate_batch` evaluates many genomes in one vectorised numpy pass;
:meth:`NumericDomain.evaluate` is that batch of one, so both give the same numbers bit for bit.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dei_framework.contract.descriptors import AxisSpec, UniformAxis
from dei_framework.contract.domain import Domain, Evaluation, GenomeEvaluations, Program
from dei_framework.contract.errors import ConfigError, InvalidProgram
from dei_framework.contract.records import Candidate, Message

#: Every domain option and its default (``[domain_options]`` or ``--domain-option KEY=VALUE``).
DEFAULT_OPTIONS: Mapping[str, Any] = {
    "dim": 20,
    "function": "sphere",
    "low": -5.12,
    "high": 5.12,
    "bins": 100,
}
#: The objectives on offer.
FUNCTIONS = ("sphere", "rastrigin")
#: The optimum sits at this fraction of ``high`` on every coordinate (pyribs' shift).
SHIFT_FRACTION = 0.4
#: Descriptor axis names: the sums of the first and of the second half of the clipped genome.
AXIS_NAMES = ("sum_first_half", "sum_second_half")
#: Longest program text accepted (a genome of a few thousand numbers).
MAX_CHARS = 200_000

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)", re.IGNORECASE)


#: How many of the texts :func:`written_genome` wrote are remembered (a few turns' replies).
WRITTEN_KEPT = 1024

# Texts this module's operators wrote lately, with their values: canonical by construction,
# so parse takes them as they are instead of reading and writing every number again (what
# an operator's reply costs twice otherwise). Bounded, oldest first out; an OrderedDict, whose
# get, set and popitem are single steps under the GIL (evaluation may run in a thread).
_WRITTEN: OrderedDict[str, list[float]] = OrderedDict()


def format_genome(values: Sequence[float]) -> str:
    """The canonical program text of a genome: each value's shortest exact ``repr``."""
    return " ".join(map(repr, map(float, values)))


def written_genome(values: list[float]) -> str:
    """:func:`format_genome` of a list of floats, remembered so that
    :meth:`NumericDomain.parse` of that text (in this process) need not read it again.

    The text is what :func:`format_genome` writes, whether or not it is remembered, so a
    parse in another process (evaluation workers) gives the same program.
    """
    text = format_genome(values)
    _WRITTEN[text] = values
    if len(_WRITTEN) > WRITTEN_KEPT:
        _WRITTEN.popitem(last=False)
    return text


class GenomeTexts(Sequence[str]):
    """The canonical texts of the rows of a genome array, each written when first read.

    What :meth:`dei_framework.search.scheduler.Scheduler.tell_batch` takes as ``texts``: it reads
    only the texts of the candidates an archive takes, so the rest are never formatted.

    Args:
        genomes: One genome per row.
    """

    __slots__ = ("_genomes",)

    def __init__(self, genomes: np.ndarray) -> None:
        self._genomes = genomes

    def __len__(self) -> int:
        return len(self._genomes)

    def __getitem__(self, index):  # type: ignore[override]  # int or slice, as a list's
        if isinstance(index, slice):
            return [format_genome(row) for row in self._genomes[index].tolist()]
        return format_genome(self._genomes[index].tolist())


def _plain_numbers(text: str, dim: int) -> list[float] | None:
    """The values of a text of exactly ``dim`` finite numbers separated by white space (what
    operators write), or ``None`` for anything else (the general parser handles it)."""
    tokens = text.split()
    if len(tokens) != dim:
        return None
    try:
        values = list(map(float, tokens))
    except ValueError:
        return None
    return values if all(map(math.isfinite, values)) else None


class NumericDomain(Domain):
    """A static continuous benchmark (see the module docstring).

    Args:
        options: Domain options (see :data:`DEFAULT_OPTIONS`); missing ones take defaults.

    Raises:
        ConfigError: an unknown option or a value out of range.
    """

    name = "numeric"
    default_axes = AXIS_NAMES
    capabilities = frozenset({"array"})
    fitness_floor = 0.0

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        options = dict(options or {})
        unknown = sorted(set(options) - set(DEFAULT_OPTIONS))
        if unknown:
            raise ConfigError(
                f"numeric domain: unknown options {unknown} (known: {', '.join(DEFAULT_OPTIONS)})"
            )
        merged = {**DEFAULT_OPTIONS, **options}
        try:
            self.dim = int(merged["dim"])
            self.low, self.high = float(merged["low"]), float(merged["high"])
            self.bins = int(merged["bins"])
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"numeric domain: bad option value: {exc}") from None
        self.function = str(merged["function"])
        if self.dim < 2:
            raise ConfigError(f"numeric domain: dim must be at least 2, got {self.dim}")
        if not (
            math.isfinite(self.low)
            and math.isfinite(self.high)
            and 0 < self.high
            and self.low == -self.high
        ):
            raise ConfigError(
                "numeric domain: bounds must be symmetric and finite (low = -high "
                f"< 0), got low={self.low}, high={self.high}"
            )
        if self.function not in FUNCTIONS:
            raise ConfigError(
                f"numeric domain: function must be one of {FUNCTIONS}, got {self.function!r}"
            )
        if self.bins < 1:
            raise ConfigError(f"numeric domain: bins must be at least 1, got {self.bins}")
        self._options = {
            "dim": self.dim,
            "function": self.function,
            "low": self.low,
            "high": self.high,
            "bins": self.bins,
        }
        self.shift = SHIFT_FRACTION * self.high
        # The system prompt (the same for every request: written once).
        self._task = (
            f"Propose a vector of {self.dim} real numbers in [{self.low}, {self.high}] "
            f"that maximises a {self.function} benchmark objective. Answer with the "
            "numbers only, separated by spaces."
        )
        # The worst value of the raw objective over the bounds: 0 on the normalised scale.
        displacement = (self.low - self.shift) ** 2
        per_coordinate = displacement if self.function == "sphere" else displacement + 20.0
        self.worst = self.dim * per_coordinate
        self.half = self.dim // 2
        limit = self.half * self.high
        self._axes = tuple(
            AxisSpec(
                name=name,
                axis=UniformAxis(name, -limit, limit, self.bins),
                domain="numeric",
                description=f"sum of the {which} half of the clipped genome",
            )
            for name, which in zip(AXIS_NAMES, ("first", "second"), strict=True)
        )

    # --- programs -------------------------------------------------------------------------------

    def genome(self, text: str) -> np.ndarray:
        """The genome written in ``text`` (numbers separated by spaces, commas or brackets).

        Raises:
            InvalidProgram: not exactly ``dim`` finite numbers.
        """
        if len(text) > MAX_CHARS:
            raise InvalidProgram(f"program is {len(text)} characters long (limit {MAX_CHARS})")
        fast = _plain_numbers(text, self.dim)
        if fast is not None:
            return np.array(fast)
        tokens = _NUMBER.findall(text)
        if len(tokens) != self.dim:
            raise InvalidProgram(f"expected {self.dim} numbers, found {len(tokens)}")
        values = np.array([float(token) for token in tokens])
        if not np.all(np.isfinite(values)):
            raise InvalidProgram("every coordinate must be a finite number")
        return values

    def genome_texts(self, genomes: np.ndarray) -> GenomeTexts:
        """The canonical texts of ``genomes``' rows, written lazily (see :class:`GenomeTexts`)."""
        return GenomeTexts(genomes)

    def parse(self, reply: str) -> Program:
        values = _WRITTEN.get(reply)
        if values is not None and len(values) == self.dim and all(map(math.isfinite, values)):
            # Written by format_genome from these floats: the text is canonical already.
            return Program(text=reply, data=np.array(values))
        values = self.genome(reply)
        return Program(text=format_genome(values.tolist()), data=values)

    # --- evaluation -----------------------------------------------------------------------------

    def objective(self, genomes: np.ndarray) -> np.ndarray:
        """The normalised objective of each row of ``genomes`` (100 at the optimum)."""
        shifted = genomes - self.shift
        if self.function == "sphere":
            raw = np.sum(shifted * shifted, axis=1)
        else:
            raw = 10.0 * self.dim + np.sum(
                shifted * shifted - 10.0 * np.cos(2 * np.pi * shifted), axis=1
            )
        return (self.worst - raw) / self.worst * 100.0

    def descriptors(self, genomes: np.ndarray) -> np.ndarray:
        """The linear projection of each row: sums of the halves of the clipped genome."""
        outside = (genomes < self.low) | (genomes > self.high)
        clipped = np.where(outside, self.high / np.where(outside, genomes, 1.0), genomes)
        return np.stack(
            [clipped[:, : self.half].sum(axis=1), clipped[:, self.half :].sum(axis=1)], axis=1
        )

    def evaluate_batch(
        self, programs: Sequence[Program], opponents: Sequence[Program], *, seeds: Sequence[int]
    ) -> list[Evaluation]:
        """Every program in one vectorised pass (opponents and seeds play no part)."""
        if not programs:
            return []
        genomes = np.stack([self._genome_of(program) for program in programs])
        fitness = self.objective(genomes).tolist()
        measures = self.descriptors(genomes).tolist()
        first, second = AXIS_NAMES
        return [
            Evaluation(fitness=value, descriptor={first: m[0], second: m[1]})
            for value, m in zip(fitness, measures, strict=True)
        ]

    def evaluate_genomes(self, genomes: np.ndarray, *, seeds: Sequence[int]) -> GenomeEvaluations:
        """:meth:`evaluate_batch` on the rows themselves (the array path): what a genome's
        text would give, NaN fitness for a row with a number that is not finite (its text
        would not parse)."""
        fitness = self.objective(genomes)
        finite = np.isfinite(genomes).all(axis=1)
        if not finite.all():
            fitness = np.where(finite, fitness, np.nan)
        return GenomeEvaluations(fitness=fitness, descriptors=self.descriptors(genomes))

    def evaluate(self, program: Program, opponents: Sequence[Program], *, seed: int) -> Evaluation:
        return self.evaluate_batch([program], opponents, seeds=[seed])[0]

    def _genome_of(self, program: Program) -> np.ndarray:
        data = program.data
        if isinstance(data, np.ndarray) and data.shape == (self.dim,):
            return data
        return self.genome(program.text)

    def descriptor_axes(self) -> Sequence[AxisSpec]:
        return self._axes

    def initial_opponents(self) -> list[str]:
        """None: the objective is static (no adversary, no warm start)."""
        return []

    # --- prompts --------------------------------------------------------------------------------

    def messages(
        self,
        kind: str,
        *,
        parent: Candidate | None = None,
        others: Sequence[Candidate] = (),
        feedback: str | None = None,
    ) -> list[Message]:
        """Plain prompts, for LLM operators (the built-in operators ignore them)."""
        task = self._task
        if kind == "new" or parent is None:
            user = "Write a new vector."
        else:
            user = f"Vary this vector (fitness {parent.fitness}):\n{parent.text}"
            for other in others:
                user += f"\nAnother good vector (fitness {other.fitness}):\n{other.text}"
        if feedback:
            user += f"\nThe last attempt was invalid: {feedback}"
        return [{"role": "system", "content": task}, {"role": "user", "content": user}]

    def options(self) -> dict[str, Any]:
        return dict(self._options)
