"""Common-ground measures: every elite and champion re-evaluated against one fixed reference set.

A node's fitness is measured against its own opponent pool, and pools differ between nodes and
conditions (size and content: an ensemble node also fights its peers' champions). Raw fitness,
and so raw QD-score, therefore mixes search quality with the pool a node happened to fight.
Common ground removes that: after a run, every elite of every node's final archive and every
round champion is re-evaluated against the **reference set** (the domain's
:meth:`~dei_framework.contract.domain.Domain.reference_opponents`, by default its initial
opponents). A static domain without opponents has an empty reference set: its programs are
evaluated against no one, with seeds derived from the empty set.

It does so in two steps, so that the reported figures carry no winner's curse:

1. **Selection**: every elite is evaluated once with its **selection seed**. That measurement
   places it in the cell of its common-ground descriptor, and per cell the best one is kept —
   the best of several noisy measurements, biased upward the more candidates a cell had.
2. **Scoring**: each kept elite (and each round champion) is evaluated again with ``K``
   (:attr:`~dei_framework.runtime.config.run_config.RunConfig.common_seeds`) **scoring seeds**. Its
   common-ground fitness is the mean of those ``K`` fresh measurements, its spread their standard
   deviation; they are independent of the choice, so their mean is an unbiased measure of the
   chosen elite. A :attr:`~dei_framework.contract.domain.Domain.deterministic` domain skips this
   step: every seed would give the selection value again, so that one evaluation is the score
   (:func:`scores_from_outcomes`; ``K`` is then 1).

The seeds are a program's own. The reference set has a *selection base* and ``K`` *scoring
bases*, derived from its digest and distinct from each other (:func:`scoring_seeds`); a
program's selection seed is a hash of the selection base and its canonical text, its ``j``-th
scoring seed a hash of scoring base ``j`` and its text (:func:`text_seeds`), none equal to
another of its seeds. So:

* the same text gets the same seeds, and so the same common-ground fitness, in every run,
  condition and repeat that uses the same domain options and ``K`` — what makes merged
  archives of different conditions comparable;
* different texts get unrelated seeds. A seed can be easy or hard for everyone (in Core War it
  fixes the placements of a battle); had every elite been measured on the same seeds, such a
  seed would move every elite, every run and every condition together, an error that does not
  average out over elites (and, on the selection seed, would pass for or hide a winner's
  curse in ``selection_qd_gap``). With seeds of its own, each elite's error is independent
  of the others', and the QD-score's error shrinks relative to it as elites are summed
  (:func:`scoring_spread` derives its standard error).

The common-ground merged archive holds the kept elites at their selection cells with their
scored fitness; it is what ``merged_archive.json`` holds and what ``merged.common`` in
``summary.json`` describes.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.domain import Domain, Program
from dei_framework.contract.errors import ConfigError, InvalidProgram
from dei_framework.contract.records import Candidate
from dei_framework.evaluation.local import Evaluator, Outcome
from dei_framework.search.archives import GridArchive


def reference_record(texts: Iterable[str]) -> dict[str, Any]:
    """``{"count", "sha256"}`` of a set of canonical program texts.

    The digest is over the sorted texts, each followed by a NUL byte, so it identifies the set
    whatever its order and cannot confuse two texts with one.
    """
    ordered = sorted(set(texts))
    digest = hashlib.sha256()
    for text in ordered:
        digest.update(text.encode("utf-8"))
        digest.update(b"\0")
    return {"count": len(ordered), "sha256": digest.hexdigest()}


@attrs.frozen(kw_only=True)
class Reference:
    """The reference set of a run's common-ground measures.

    Attributes:
        programs: The parsed reference programs, sorted by canonical text.
        seed: The selection base, derived from the set's digest (the same for every run). A
            program's selection seed is derived from it and its text: :meth:`selection_seed`.
        scoring_seeds: The ``K`` scoring bases, derived from the digest too and distinct from
            ``seed`` (the same for every run with the same number of them). A program's
            scoring seeds are derived from them and its text: :meth:`seeds_for`.
        fitness_scale: The domain's fitness scale of a battle against this set (see
            :meth:`~dei_framework.contract.domain.Domain.fitness_scale`).
        record: ``{"count", "sha256"}`` of the canonical texts.
    """

    programs: tuple[Program, ...] = attrs.field(converter=tuple)
    seed: int
    scoring_seeds: tuple[int, ...] = attrs.field(converter=tuple)
    fitness_scale: float
    record: Mapping[str, Any]

    def selection_seed(self, text: str) -> int:
        """The selection seed of the program ``text`` (canonical): its own, the same in every
        run with this set (see the module doc)."""
        return text_seeds((self.seed,), text)[0]

    def seeds_for(self, text: str) -> tuple[int, ...]:
        """The ``K`` scoring seeds of the program ``text`` (canonical): its own, none equal to
        its selection seed, the same in every run with this set and ``K``."""
        return text_seeds(self.scoring_seeds, text, exclude=(self.selection_seed(text),))


def _derived_seed(digest: str, purpose: str) -> int:
    return int(hashlib.sha256(f"{digest}:{purpose}".encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


def scoring_seeds(
    digest: str, count: int, selection: int, *, purpose: str = "score"
) -> tuple[int, ...]:
    """``count`` distinct bases derived from a reference digest, none equal to ``selection``.

    More bases extend the list, they do not reshuffle it (base ``j`` does not depend on
    ``count``). Another ``purpose`` gives an unrelated list (``benchmarks/common_remeasure.py``
    draws its fresh seeds that way).
    """
    seeds: list[int] = []
    index = 0
    while len(seeds) < count:
        seed = _derived_seed(digest, f"{purpose}-{index}")
        if seed != selection and seed not in seeds:
            seeds.append(seed)
        index += 1
    return tuple(seeds)


def _text_seed(base: int, text: str, attempt: int) -> int:
    key = f"{base}:{attempt}\0{text}".encode()
    return int(hashlib.sha256(key).hexdigest()[:8], 16) & 0x7FFFFFFF


def text_seeds(bases: Sequence[int], text: str, *, exclude: Iterable[int] = ()) -> tuple[int, ...]:
    """A program's own seeds: one per base, a hash of the base and the program's text.

    The ``j``-th seed depends on base ``j``, the text and the seeds before it only, so more
    bases extend the list. A seed equal to an excluded one or to an earlier one (a hash
    collision, about one in 2**31) is hashed again with the next attempt number.

    Args:
        bases: The bases (:attr:`Reference.scoring_seeds`, or a fresh list).
        text: The program's canonical text.
        exclude: Seeds the result must not contain (e.g. the selection seed).
    """
    taken = set(exclude)
    seeds = []
    for base in bases:
        attempt = 0
        seed = _text_seed(base, text, attempt)
        while seed in taken:
            attempt += 1
            seed = _text_seed(base, text, attempt)
        taken.add(seed)
        seeds.append(seed)
    return tuple(seeds)


def build_reference(domain: Domain, *, scoring: int = 5) -> Reference:
    """Parses the domain's reference set.

    Args:
        domain: The run's domain.
        scoring: How many scoring seeds (``K``, at least 1).

    Raises:
        ConfigError: a reference program does not parse, or the set is empty for a domain that
            has initial opponents (an empty set is a static domain's: see the module doc).
    """
    programs = {}
    for text in domain.reference_opponents():
        try:
            program = domain.parse(text)
        except InvalidProgram as exc:
            raise ConfigError(f"common-ground reference program does not parse: {exc}") from None
        programs[program.text] = program
    if not programs and domain.initial_opponents():
        raise ConfigError(f"domain {domain.name!r} has no reference programs for common ground")
    if scoring < 1:
        raise ConfigError(f"--common-seeds must be at least 1, got {scoring}")
    record = reference_record(programs)
    seed = int(record["sha256"][:8], 16) & 0x7FFFFFFF
    return Reference(
        programs=[programs[text] for text in sorted(programs)],
        seed=seed,
        scoring_seeds=scoring_seeds(record["sha256"], scoring, seed),
        fitness_scale=float(domain.fitness_scale(len(programs))),
        record=record,
    )


async def evaluate_texts(
    evaluator: Evaluator, texts: Iterable[str], reference: Reference
) -> dict[str, Outcome]:
    """Each distinct text evaluated once against the reference set with its selection seed
    (:meth:`Reference.selection_seed`)."""
    unique = list(dict.fromkeys(texts))
    opponents = evaluator.install(reference.programs)  # sent to each worker once
    outcomes = await asyncio.gather(
        *(
            evaluator.evaluate(text, opponents, seed=reference.selection_seed(text))
            for text in unique
        )
    )
    return dict(zip(unique, outcomes, strict=True))


@attrs.frozen
class Score:
    """A text's common-ground fitness: ``K`` fresh measurements against the reference set.

    Attributes:
        values: The fitness with each scoring seed whose evaluation succeeded, in seed order.
        failed: Scoring evaluations that failed (the domain's error; not in ``values``).
    """

    values: tuple[float, ...] = attrs.field(converter=tuple)
    failed: int = 0

    @property
    def complete(self) -> bool:
        """Whether every scoring seed gave a value (``values[j]`` is then seed ``j``'s)."""
        return self.failed == 0

    @property
    def mean(self) -> float | None:
        """The common-ground fitness (``None`` if every scoring evaluation failed)."""
        return statistics.fmean(self.values) if self.values else None

    @property
    def std(self) -> float | None:
        """Sample standard deviation over the seeds (``None`` below two values)."""
        return statistics.stdev(self.values) if len(self.values) > 1 else None


def scores_from_outcomes(outcomes: Mapping[str, Outcome], texts: Iterable[str]) -> dict[str, Score]:
    """Each distinct text's :class:`Score` taken from its selection outcome: one value, or one
    failure. For a deterministic domain
    (:attr:`~dei_framework.contract.domain.Domain.deterministic`)
    a fresh seed would measure the same value again, so the selection measurement is the
    score and there is no winner's curse to remove.

    Raises:
        KeyError: a text without an outcome (every scored text was selected first).
    """
    scores = {}
    for text in dict.fromkeys(texts):
        evaluation = outcomes[text].evaluation
        scores[text] = (
            Score(values=(float(evaluation.fitness),))
            if evaluation is not None
            else Score(values=(), failed=1)
        )
    return scores


async def score_texts(
    evaluator: Evaluator, texts: Iterable[str], reference: Reference
) -> dict[str, Score]:
    """Each distinct text evaluated with each of its scoring seeds (:meth:`Reference.seeds_for`)."""
    unique = list(dict.fromkeys(texts))
    return await score_with_seeds(
        evaluator, {text: reference.seeds_for(text) for text in unique}, reference
    )


async def score_with_seeds(
    evaluator: Evaluator, seeds: Mapping[str, Sequence[int]], reference: Reference
) -> dict[str, Score]:
    """Each text of ``seeds`` evaluated against the reference set with each of its seeds.

    Returns:
        Per text, a :class:`Score` whose values are in the order of its seeds.
    """
    opponents = evaluator.install(reference.programs)  # sent to each worker once
    jobs = [(text, seed) for text, own in seeds.items() for seed in own]
    outcomes = await asyncio.gather(
        *(evaluator.evaluate(text, opponents, seed=seed) for text, seed in jobs)
    )
    found: dict[str, list[Outcome]] = {text: [] for text in seeds}
    for (text, _), outcome in zip(jobs, outcomes, strict=True):
        found[text].append(outcome)
    scores = {}
    for text, mine in found.items():
        values = [float(o.evaluation.fitness) for o in mine if o.evaluation is not None]
        scores[text] = Score(values=values, failed=len(mine) - len(values))
    return scores


def winners(
    archives: Sequence[GridArchive], outcomes: Mapping[str, Outcome], space: DescriptorSpace
) -> list[str]:
    """The texts :func:`merge_common` keeps (one per cell), chosen on the selection outcomes:
    the ones to score."""
    return [entry["text"] for entry in merge_common(archives, outcomes, space, qd_offset=0.0)[1]]


def _placed(
    archives: Sequence[GridArchive], outcomes: Mapping[str, Outcome], space: DescriptorSpace
) -> Iterable[tuple[Candidate, Candidate]]:
    """Each elite with a selection outcome, as ``(placed on common ground, as the node had it)``."""
    for archive in archives:
        for elite in archive:
            outcome = outcomes.get(elite.text)
            if outcome is None or outcome.evaluation is None:
                continue
            yield (
                Candidate(
                    id=elite.id,
                    text=elite.text,
                    fitness=float(outcome.evaluation.fitness),
                    descriptor=dict(outcome.evaluation.descriptor),
                    cell=space.cell(outcome.evaluation.descriptor),
                    node=elite.node,
                    operator=elite.operator,
                    round=elite.round,
                    parent=elite.parent,
                ),
                elite,
            )


def merge_common(
    archives: Sequence[GridArchive],
    outcomes: Mapping[str, Outcome],
    space: DescriptorSpace,
    *,
    qd_offset: float,
    scores: Mapping[str, Score] | None = None,
) -> tuple[GridArchive, list[dict[str, Any]]]:
    """The common-ground merge of nodes' archives, and its ``merged_archive.json`` entries.

    Learned axes (:class:`~dei_framework.contract.descriptors.LearnedAxis`) are first fixed at
    the union of the bounds every archive learned (:meth:`DescriptorSpace.joined`, then
    :meth:`DescriptorSpace.fixed`), so every elite is placed on one grid that placing does
    not move. Every elite enters at the cell of its selection descriptor with its selection fitness
    (``outcomes``); per cell the best one stays (ties: the earlier archive, then the lower raw
    cell). An elite whose selection evaluation failed is left out (the domain's message is in
    ``outcomes``). The kept elites then take their scored fitness (``scores``: the mean of
    fresh measurements, see :class:`Score`); one whose scoring failed on every seed is left
    out too. Without ``scores`` the selection fitness stays (a single measurement).

    Returns:
        The merged archive (fitness = common-ground fitness) and one entry per elite in it:
        ``{"text", "cell", "fitness", "common_fitness", "common_fitness_std",
        "common_fitness_n", "selection_fitness", "node", "raw_cell", ...}`` where ``fitness``
        is the raw fitness the node measured and ``raw_cell`` the cell it had there.
    """
    if space.learned:  # one grid for every elite: the bounds all archives saw, fixed
        space = space.joined(archive.space for archive in archives).fixed()
    selected = GridArchive(space=space, qd_offset=qd_offset)
    found: dict[str, Candidate] = {}
    for common, elite in _placed(archives, outcomes, space):
        if selected.add(common):
            found[elite.id] = elite
    merged = GridArchive(space=space, qd_offset=qd_offset)
    entries = []
    for elite in selected:
        score = scores.get(elite.text) if scores is not None else None
        fitness = elite.fitness if scores is None else (score.mean if score else None)
        if fitness is None:
            continue
        merged.add(attrs.evolve(elite, fitness=fitness))
        entries.append(
            {
                "text": elite.text,
                "cell": list(elite.cell),
                "fitness": found[elite.id].fitness,
                "common_fitness": fitness,
                "common_fitness_std": score.std if score else None,
                "common_fitness_n": len(score.values) if score else 1,
                "common_fitness_values": list(score.values) if score and score.complete else None,
                "selection_fitness": elite.fitness,
                "node": elite.node,
                "raw_cell": list(found[elite.id].cell),
                "operator": elite.operator,
                "round": elite.round,
                "id": elite.id,
            }
        )
    return merged, entries


def scoring_spread(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How precisely the K scoring seeds measure a merge's QD-score (``merged.common``).

    The standard error, derived: the common QD-score is ``sum_i (m_i - offset)`` over the kept
    elites ``i``, where ``m_i`` is the mean of elite ``i``'s ``n_i`` scoring measurements.
    Given the kept elites, each ``m_i`` has variance ``sigma_i**2 / n_i`` (``sigma_i``: the
    spread of one measurement of that program over seeds), and the ``m_i`` are independent of
    each other because every program is scored on seeds of its own (see the module doc): no
    seed is shared, so no seed effect is common to two elites. The covariances vanish and

        Var(QD) = sum_i sigma_i**2 / n_i,

    estimated with each elite's sample variance ``s_i**2`` (``common_fitness_std`` squared).
    An elite with a single measurement (``n_i = 1``, K = 1 or every other seed failed) has no
    ``s_i`` and adds nothing, so with K = 1 there is no standard error. It is the error of the
    measurement of these elites, over scoring seeds — not the spread over repeats, which also
    holds the search's own variation.

    Returns:
        ``qd_score_sem``: that standard error, ``sqrt(sum_i s_i**2 / n_i)`` (``None`` without
        any ``s_i``); ``elite_std_mean`` / ``elite_std_max``: mean and largest per-elite
        standard deviation over its seeds; ``selection_qd_gap``: the sum of selection fitness
        minus scored fitness over the kept elites (the winner's curse the scoring removed).
    """
    measured = [e for e in entries if e.get("common_fitness_std") is not None]
    stds = [e["common_fitness_std"] for e in measured]
    sem = (
        math.sqrt(sum(e["common_fitness_std"] ** 2 / e["common_fitness_n"] for e in measured))
        if measured
        else None
    )
    return {
        "qd_score_sem": sem,
        "elite_std_mean": statistics.fmean(stds) if stds else None,
        "elite_std_max": max(stds) if stds else None,
        "selection_qd_gap": sum(e["selection_fitness"] - e["common_fitness"] for e in entries),
    }


def raw_entries(archive: GridArchive) -> list[dict[str, Any]]:
    """``merged_archive.json`` entries of a raw merge (no common ground measured)."""
    return [
        {
            "text": elite.text,
            "cell": list(elite.cell),
            "fitness": elite.fitness,
            "common_fitness": None,
            "common_fitness_std": None,
            "common_fitness_n": 0,
            "selection_fitness": None,
            "node": elite.node,
            "raw_cell": list(elite.cell),
            "operator": elite.operator,
            "round": elite.round,
            "id": elite.id,
        }
        for elite in archive
    ]


def common_fitness(scores: Mapping[str, Score], text: str | None) -> float | None:
    """The common-ground fitness of ``text``: the mean over its scoring seeds (``None`` if not
    measured or invalid)."""
    score = scores.get(text) if text is not None else None
    return score.mean if score is not None else None
