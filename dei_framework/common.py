"""Common-ground measures: every elite and champion re-evaluated against one fixed reference set.

A node's fitness is measured against its own opponent pool, and pools differ between nodes and
conditions (size and content: an ensemble node also fights its peers' champions). Raw fitness,
and so raw QD-score, therefore mixes search quality with the pool a node happened to fight.
Common ground removes that: after a run, every elite of every node's final archive and every
round champion is re-evaluated against the **reference set** (the domain's
:meth:`~dei_framework.domain.Domain.reference_opponents`, by default its initial opponents) with
**one seed derived from the reference set itself**. The same program text therefore gets the
same common-ground fitness and descriptor in every run, condition and repeat that uses the same
domain options — which is what makes merged archives of different conditions comparable.
A static domain without opponents has an empty reference set: its programs are evaluated
against no one, with the seed of the empty set, which for a static objective reproduces the
fitness each node measured.

The common-ground merged archive places each elite in the cell of its common-ground descriptor
and keeps the best common-ground fitness per cell; it is what ``merged_archive.json`` holds and
what ``merged.common`` in ``summary.json`` describes.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from dei_framework.archives import GridArchive
from dei_framework.descriptors import DescriptorSpace
from dei_framework.domain import Domain, Program
from dei_framework.errors import ConfigError, InvalidProgram
from dei_framework.evaluation import Evaluator, Outcome
from dei_framework.records import Elite


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
        seed: The evaluation seed, derived from the set's digest (the same for every run).
        fitness_scale: The domain's fitness scale of a battle against this set (see
            :meth:`~dei_framework.domain.Domain.fitness_scale`).
        record: ``{"count", "sha256"}`` of the canonical texts.
    """

    programs: tuple[Program, ...] = attrs.field(converter=tuple)
    seed: int
    fitness_scale: float
    record: Mapping[str, Any]


def build_reference(domain: Domain) -> Reference:
    """Parses the domain's reference set.

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
    record = reference_record(programs)
    return Reference(
        programs=[programs[text] for text in sorted(programs)],
        seed=int(record["sha256"][:8], 16) & 0x7FFFFFFF,
        fitness_scale=float(domain.fitness_scale(len(programs))),
        record=record,
    )


async def evaluate_texts(
    evaluator: Evaluator, texts: Iterable[str], reference: Reference
) -> dict[str, Outcome]:
    """Each distinct text evaluated once against the reference set with its seed."""
    unique = list(dict.fromkeys(texts))
    opponents = evaluator.install(reference.programs)  # sent to each worker once
    outcomes = await asyncio.gather(
        *(evaluator.evaluate(text, opponents, seed=reference.seed) for text in unique)
    )
    return dict(zip(unique, outcomes, strict=True))


def merge_common(
    archives: Sequence[GridArchive],
    outcomes: Mapping[str, Outcome],
    space: DescriptorSpace,
    *,
    qd_offset: float,
) -> tuple[GridArchive, list[dict[str, Any]]]:
    """The common-ground merge of nodes' archives, and its ``merged_archive.json`` entries.

    Every elite enters at the cell of its common-ground descriptor with its common-ground
    fitness; per cell the best one stays (ties: the earlier archive, then the lower raw cell).
    An elite whose common-ground evaluation failed is left out (the domain's message is in
    ``outcomes``).

    Returns:
        The merged archive (fitness = common-ground fitness) and one entry per elite in it:
        ``{"text", "cell", "fitness", "common_fitness", "node", ...}`` where ``fitness`` is the
        raw fitness the node measured and ``raw_cell`` the cell it had there.
    """
    merged = GridArchive(space=space, qd_offset=qd_offset)
    found: dict[str, Elite] = {}
    for archive in archives:
        for elite in archive:
            outcome = outcomes.get(elite.text)
            if outcome is None or outcome.evaluation is None:
                continue
            common = Elite(
                id=elite.id, text=elite.text, fitness=float(outcome.evaluation.fitness),
                descriptor=dict(outcome.evaluation.descriptor),
                cell=space.cell(outcome.evaluation.descriptor), node=elite.node,
                operator=elite.operator, round=elite.round, parent=elite.parent,
            )  # fmt: skip
            if merged.add(common):
                found[elite.id] = elite
    entries = [
        {"text": elite.text, "cell": list(elite.cell), "fitness": found[elite.id].fitness,
         "common_fitness": elite.fitness, "node": elite.node,
         "raw_cell": list(found[elite.id].cell), "operator": elite.operator,
         "round": elite.round, "id": elite.id}
        for elite in merged
    ]  # fmt: skip
    return merged, entries


def raw_entries(archive: GridArchive) -> list[dict[str, Any]]:
    """``merged_archive.json`` entries of a raw merge (no common ground measured)."""
    return [
        {"text": elite.text, "cell": list(elite.cell), "fitness": elite.fitness,
         "common_fitness": None, "node": elite.node, "raw_cell": list(elite.cell),
         "operator": elite.operator, "round": elite.round, "id": elite.id}
        for elite in archive
    ]  # fmt: skip


def common_fitness(outcomes: Mapping[str, Outcome], text: str | None) -> float | None:
    """The common-ground fitness of ``text`` (``None`` if not measured or invalid)."""
    outcome = outcomes.get(text) if text is not None else None
    if outcome is None or outcome.evaluation is None:
        return None
    return float(outcome.evaluation.fitness)
