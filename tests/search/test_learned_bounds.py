"""Learned feature bounds: a :class:`LearnedAxis` takes its range from the values seen (by
powers of two), a grid archive over it widens and re-bins its elites (the best kept), the
re-binnings are logarithmic in the range, checkpoints restore the bounds exactly, merges and
common ground place every elite on the union of the bounds, and the scheduler's batch path
admits what its one-by-one path admits."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dei_framework import (
    Candidate,
    CVTArchive,
    DescriptorSpace,
    GridArchive,
    Result,
    Scheduler,
    UniformAxis,
)
from dei_framework.analysis.common_ground import merge_common
from dei_framework.contract.descriptors import (
    LEARNED_UNITS,
    LearnedAxis,
    axis_from_json,
    learned_bounds,
)
from dei_framework.contract.errors import ConfigError

LEARNED = DescriptorSpace([LearnedAxis("x", 10), UniformAxis("y", 0.0, 1.0, 4)])


def elite(i: int, x: float, fitness: float, y: float = 0.5) -> Candidate:
    return Candidate(id=f"e{i}", text=f"p{i}", fitness=fitness, descriptor={"x": x, "y": y})


def filled(values: list[tuple[float, float]], space: DescriptorSpace = LEARNED) -> GridArchive:
    archive = GridArchive(space=space, seed=0)
    for i, (x, fitness) in enumerate(values):
        archive.add(elite(i, x, fitness))
    return archive


def draws(n: int, seed: int = 1) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    return [(rng.uniform(-40.0, 900.0), rng.random()) for _ in range(n)]


def test_bounds_cover_the_values_seen_tightly_and_exactly() -> None:
    for low, high in [(100.0, 400.0), (0.99, 1.01), (5.0, 5.0), (0.0, 0.0), (-3.0, 250.0)]:
        a, b = learned_bounds(low, high)
        assert a <= low <= high < b
        if high > low:  # a range no wider than the values' span allows
            assert (b - a) <= 3 * (high - low)
    assert learned_bounds(100.0, 400.0) == (64.0, 448.0)
    assert learned_bounds(0.99, 1.01) == (0.98828125, 1.01171875)  # not [0, 2): no straddle loss


def test_a_learned_archive_widens_to_values_far_outside_zero_one() -> None:
    archive = filled([(150.0, 1.0), (210.0, 2.0), (180.0, 3.0)])
    axis = archive.space.axes[0]
    assert axis.seen == (150.0, 210.0) and axis.low <= 150.0 and axis.high > 210.0
    assert len(archive) == 3  # three cells, not all clamped into an end bin
    stats = archive.stats()
    assert stats.cells == 40 and stats.coverage == 3 / 40  # coverage over the bins count


def test_a_re_bin_keeps_the_best_elite_of_cells_that_merge() -> None:
    archive = filled([(0.1, 5.0), (0.3, 9.0), (0.2, 1.0)])
    assert len(archive) == 3
    before = archive.rebins
    archive.add(elite(9, 1000.0, 0.5))  # the range grows 1000-fold: the three share one bin
    assert archive.rebins > before
    kept = [e for e in archive if e.descriptor["x"] < 1]
    assert [e.id for e in kept] == ["e1"]  # the best of them
    assert kept[0].cell == archive.cell_of(kept[0].descriptor)  # its cell is the new grid's
    assert archive.best().id == "e1"
    assert archive.stats().num_elites == 2


def test_learned_bounds_and_archives_are_deterministic_and_order_free() -> None:
    values = draws(300)
    one, two = filled(values), filled(values)
    assert one.to_json() == two.to_json()
    shuffled = list(values)
    random.Random(3).shuffle(shuffled)
    assert filled(shuffled).space == one.space  # the bounds depend on the values, not the order


def test_re_binnings_grow_with_the_log_of_the_range_not_with_insertions() -> None:
    # Values ever rising: every insertion is a new maximum.
    counts = {}
    for n in (1_000, 2_000, 4_000, 8_000):
        counts[n] = filled([(float(i), 1.0) for i in range(1, n + 1)]).rebins
    # Each doubling of the range adds at most one power of two's worth of re-binnings.
    for n in (2_000, 4_000, 8_000):
        assert counts[n] - counts[n // 2] <= LEARNED_UNITS
    assert counts[8_000] < 8_000 / 50


def test_a_fixed_space_never_re_bins() -> None:
    space = DescriptorSpace([UniformAxis("x", 0.0, 1.0, 10), UniformAxis("y", 0.0, 1.0, 4)])
    archive = filled([(5.0, 1.0), (-3.0, 2.0), (0.5, 3.0)], space)
    assert archive.rebins == 0 and not archive.learns_bounds
    assert sorted(e.cell[0] for e in archive) == [0, 5, 9]  # out-of-range values clamp


def test_a_checkpoint_restores_the_learned_bounds_exactly() -> None:
    archive = filled(draws(200))
    archive.add(elite(999, 5000.0, -1.0))  # kept (a new cell) ...
    archive.add(elite(998, 4999.0, -2.0))  # ... this one not: its value still widened `seen`
    assert archive.space.axes[0].seen[1] == 5000.0
    data = archive.to_json()
    for restored in (
        GridArchive.from_json(data),
        GridArchive(space=LEARNED, seed=0).fill_from_json(data),  # how a scheduler resumes
    ):
        assert restored.space == archive.space
        assert restored.to_json() == data
    assert axis_from_json(data["space"][0]) == archive.space.axes[0]


def test_a_merge_of_archives_that_learned_apart_uses_the_union_of_their_bounds() -> None:
    values = draws(200)
    low = filled([(x / 10, f) for x, f in values[:100]])
    high = filled([(x * 10, f) for x, f in values[100:]])
    assert low.space != high.space
    merged = GridArchive.merge([low, high])
    together = filled(
        [(x / 10, f) for x, f in values[:100]] + [(x * 10, f) for x, f in values[100:]]
    )
    assert merged.space == together.space  # as one archive seeing every value
    assert merged.to_json()["space"] == together.to_json()["space"]
    assert {e.id for e in merged} <= {e.id for e in low} | {e.id for e in high}
    assert merged.stats().num_elites == together.stats().num_elites


def test_common_ground_places_every_elite_on_one_fixed_grid() -> None:
    class Evaluation:
        def __init__(self, candidate: Candidate) -> None:
            self.fitness, self.descriptor = candidate.fitness, candidate.descriptor

    class Outcome:
        def __init__(self, candidate: Candidate) -> None:
            self.evaluation = Evaluation(candidate)

    low = filled([(1.0, 1.0), (2.0, 2.0)])
    high = filled([(300.0, 3.0), (600.0, 4.0)])
    outcomes = {e.text: Outcome(e) for archive in (low, high) for e in archive}
    archive, entries = merge_common([low, high], outcomes, LEARNED, qd_offset=0.0)
    grid = archive.space.axes[0]
    assert isinstance(grid, UniformAxis)  # fixed: placing does not move it
    assert (grid.low, grid.high) == learned_bounds(1.0, 600.0)
    assert [entry["cell"] for entry in entries] == [list(e.cell) for e in archive]


def test_a_cvt_archive_refuses_learned_axes() -> None:
    with pytest.raises(ConfigError, match="fixed bounds"):
        CVTArchive(space=LEARNED, cells=4, samples=40)


def _outcome(item) -> tuple[str, float | None, list[float]]:
    draw = random.Random(item.seed)
    if item.seed % 11 == 0:
        return "", None, [0.0, 0.0]
    return f"p{item.seed}", draw.uniform(0, 10), [draw.uniform(-50, 5000), draw.random()]


def _scheduler() -> Scheduler:
    return Scheduler(
        name="n", space=LEARNED, initial_opponents=[], calls=200, rounds=2, seed=4, lag=16,
        lifecycle="continual",
    )  # fmt: skip


def test_tell_batch_admits_what_tell_admits_while_the_bounds_move() -> None:
    single = _scheduler()
    while not single.finished:
        items = single.ask(16)
        rows = [(item, *_outcome(item)) for item in reversed(items)]
        single.tell(
            [
                Result(
                    item=item,
                    text=text or None,
                    fitness=fitness,
                    descriptor=None
                    if fitness is None
                    else dict(zip(LEARNED.names, values, strict=True)),
                    error=None if fitness is not None else "bad",
                    operator="op",
                )
                for item, text, fitness, values in rows
            ]
        )
    batched = _scheduler()
    while not batched.finished:
        items = batched.ask(16)
        for part in (items[len(items) // 2 :], items[: len(items) // 2]):  # later slots first
            rows = [_outcome(item) for item in part]
            batched.tell_batch(
                part,
                texts=[text for text, _, _ in rows],
                fitness=[fitness for _, fitness, _ in rows],
                descriptors=np.array([values for *_, values in rows]).reshape(-1, 2),
                errors=[None if fitness is not None else "bad" for _, fitness, _ in rows],
                operator="op",
            )
    assert batched.archive.rebins > 0
    assert batched.archive.to_json() == single.archive.to_json()
    assert batched.history == single.history
    assert len(single.archive) > 10
