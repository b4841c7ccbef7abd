"""MAP-Elites archive semantics: add statuses, replacement, sampling, merge, stats, JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dei_framework import (
    AddStatus,
    Candidate,
    ConfigError,
    DescriptorSpace,
    GridArchive,
    LogAxis,
    ThresholdAxis,
    UniformAxis,
)

SPACE = DescriptorSpace(
    [
        ThresholdAxis("tsp", (1, 10, 100, 1000, 10000)),
        ThresholdAxis("mc", (10, 100, 500, 1000, 4000)),
    ]
)


def elite(name: str, fitness: float, tsp: float, mc: float) -> Candidate:
    return Candidate(id=name, text=name, fitness=fitness, descriptor={"tsp": tsp, "mc": mc})


def test_threshold_bins_match_drq() -> None:
    axis = SPACE.axes[0]
    assert [axis.index(v) for v in (0, 0.99, 1, 9.9, 10, 999, 1000, 10000, 1e9)] == [
        0,
        0,
        1,
        1,
        2,
        3,
        4,
        5,
        5,
    ]
    assert SPACE.cells == 36 and SPACE.shape == (6, 6)


def test_uniform_and_log_axes_clamp_and_split_evenly() -> None:
    uniform = UniformAxis("u", 0.0, 10.0, 5)
    assert [uniform.index(v) for v in (-5, 0, 1.99, 2, 9.99, 10, 50)] == [0, 0, 0, 1, 4, 4, 4]
    log = LogAxis("l", 1.0, 10000.0, 4)
    assert [log.index(v) for v in (0.5, 1, 9.9, 10, 999, 1000, 1e6)] == [0, 0, 0, 1, 2, 3, 3]


def test_bad_axes_fail_early_with_a_message() -> None:
    with pytest.raises(ConfigError, match="strictly ascending"):
        ThresholdAxis("x", (10, 1))
    with pytest.raises(ConfigError, match="high > low > 0"):
        LogAxis("x", 0.0, 10.0, 3)
    with pytest.raises(ConfigError, match="repeat"):
        DescriptorSpace([UniformAxis("x", 0, 1, 2), UniformAxis("x", 0, 1, 2)])


def test_add_statuses_and_strictly_greater_replacement() -> None:
    archive = GridArchive(space=SPACE, seed=0)
    assert archive.add(elite("a", 1.0, 5, 50)) is AddStatus.NEW
    assert archive.add(elite("b", 1.0, 5, 50)) is AddStatus.NOT_ADDED  # equal: no replacement
    assert archive.add(elite("c", 0.5, 5, 50)) is AddStatus.NOT_ADDED
    assert archive.add(elite("d", 1.5, 6, 60)) is AddStatus.IMPROVE_EXISTING  # same cell
    assert archive.elite_at((1, 1)).id == "d"
    assert archive.add(elite("e", 0.1, 5000, 5000)) is AddStatus.NEW
    assert not AddStatus.NOT_ADDED and AddStatus.NEW > AddStatus.IMPROVE_EXISTING
    assert len(archive) == 2
    assert archive.add(elite("nan", float("nan"), 1, 1)) is AddStatus.NOT_ADDED


def test_cell_is_recomputed_from_the_descriptor() -> None:
    archive = GridArchive(space=SPACE)
    archive.add(Candidate(id="x", text="x", fitness=1, descriptor={"tsp": 0, "mc": 0}, cell=(5, 5)))
    assert archive.elite_at((0, 0)).id == "x" and (5, 5) not in archive


def test_stats_coverage_qd_score_and_offset() -> None:
    archive = GridArchive(space=SPACE, qd_offset=-1.0)
    for i, (f, t, m) in enumerate([(1.0, 0, 0), (2.0, 50, 50), (-0.5, 5000, 5000)]):
        archive.add(elite(str(i), f, t, m))
    stats = archive.stats()
    assert stats.num_elites == 3 and stats.cells == 36
    assert stats.coverage == pytest.approx(3 / 36)
    assert stats.qd_score == pytest.approx((1 + 1) + (2 + 1) + (-0.5 + 1))
    assert stats.obj_max == 2.0 and stats.obj_mean == pytest.approx(2.5 / 3)
    empty = GridArchive(space=SPACE).stats()
    assert empty.num_elites == 0 and empty.qd_score == 0 and empty.obj_max is None


def test_best_and_seeded_uniform_sampling() -> None:
    archive = GridArchive(space=SPACE, seed=42)
    with pytest.raises(IndexError):
        archive.sample()
    for i in range(6):
        archive.add(elite(str(i), float(i), 10**i * 0.5 + 0.1, 5 * 10 ** min(i, 3)))
    assert archive.best().id == "5"
    draws = [e.id for e in archive.sample(3000)]
    counts = np.array([draws.count(str(i)) for i in range(6)])
    assert counts.min() > 400  # uniform over occupied cells, not fitness-proportional
    again = GridArchive(space=SPACE, seed=42)
    for e in archive:
        again.add(e)
    assert [e.id for e in again.sample(20)] == draws[:20]


def test_merge_keeps_the_best_elite_per_cell() -> None:
    a, b = GridArchive(space=SPACE), GridArchive(space=SPACE)
    a.add(elite("a1", 1.0, 5, 50))
    a.add(elite("a2", 3.0, 500, 50))
    b.add(elite("b1", 2.0, 5, 50))
    b.add(elite("b2", 1.0, 500, 50))
    b.add(elite("b3", 0.2, 5000, 5000))
    merged = GridArchive.merge([a, b])
    assert {e.id for e in merged} == {"b1", "a2", "b3"}
    assert merged.stats().qd_score == pytest.approx(2.0 + 3.0 + 0.2)
    # Archives over other axes are projected into the first one's space ...
    other = GridArchive(space=DescriptorSpace([UniformAxis("tsp", 0, 1, 2)]))
    other.add(Candidate(id="o1", text="o1", fitness=9.0, descriptor={"tsp": 0.5, "mc": 5000}))
    assert GridArchive.merge([a, other]).elite_at((0, 5)).id == "o1"
    # ... which needs every elite to carry a value for each of its axes.
    lacking = GridArchive(space=DescriptorSpace([UniformAxis("tsp", 0, 1, 2)]))
    lacking.add(Candidate(id="o2", text="o2", fitness=1.0, descriptor={"tsp": 0.5}))
    with pytest.raises(ConfigError, match="no value for axis 'mc'"):
        GridArchive.merge([a, lacking])


def test_json_round_trip_is_lossless() -> None:
    archive = GridArchive(
        space=DescriptorSpace([*SPACE.axes, LogAxis("len", 1, 100, 3)]), qd_offset=0.25
    )
    archive.add(
        Candidate(
            id="p",
            text="MOV 0, 1\n",
            fitness=0.1 + 0.2,
            descriptor={"tsp": 1 / 3, "mc": 1e-17, "len": 7},
            cell=(),
            node="n",
            operator="gp",
            round=2,
            parent="q",
        )
    )
    data = json.loads(json.dumps(archive.to_json()))
    restored = GridArchive.from_json(data)
    assert restored.to_json() == archive.to_json()
    assert restored.space == archive.space
    assert list(restored)[0].fitness == 0.1 + 0.2


# --- the occupied index ---------------------------------------------------------------------------

BIG = DescriptorSpace([UniformAxis("x", 0.0, 1.0, 100), UniformAxis("y", 0.0, 1.0, 100)])


def filled(cells: int, seed: int = 0) -> GridArchive:
    """A 100 x 100 grid with ``cells`` distinct occupied cells, filled in a shuffled order."""
    archive = GridArchive(space=BIG, seed=seed)
    order = np.random.default_rng(seed).permutation(BIG.cells)[:cells]
    for n, flat in enumerate(order):
        row, col = divmod(int(flat), 100)
        archive.add(
            Candidate(
                id=f"e{n}",
                text=f"e{n}",
                fitness=float(n % 97),
                descriptor={"x": (row + 0.5) / 100, "y": (col + 0.5) / 100},
            )
        )
    return archive


def test_occupied_is_the_archive_in_cell_order_without_copying() -> None:
    archive = filled(500)
    occupied = archive.occupied
    assert len(occupied) == len(archive) == 500
    assert list(occupied) == list(archive)
    cells = [elite.cell for elite in occupied]
    assert cells == sorted(cells)
    assert occupied[3] is list(archive)[3] and occupied[-1] is list(archive)[-1]
    assert occupied[1:3] == list(archive)[1:3]
    archive.add(Candidate(id="new", text="new", fitness=1.0, descriptor={"x": 0.0, "y": 0.0}))
    assert len(occupied) == 501  # a live view, not a snapshot
    with pytest.raises(IndexError):
        occupied[501]


def test_stats_and_best_follow_every_insertion() -> None:
    archive = filled(2000, seed=3)
    for n in range(300):  # improvements change sums in place
        elite = archive.occupied[n * 5]
        archive.add(
            Candidate(
                id=f"i{n}",
                text="i",
                fitness=elite.fitness + 0.1 * n + 0.3,
                descriptor=elite.descriptor,
            )
        )
    values = np.array([elite.fitness for elite in archive])
    stats = archive.stats()
    assert stats.num_elites == 2000
    assert stats.qd_score == float(np.sum(values))  # the summation seeded runs always reported
    assert stats.obj_mean == float(values.mean())
    assert stats.obj_max == float(values.max())
    best = max(archive, key=lambda elite: elite.fitness)  # ties: the lowest cell
    assert archive.best() is best


class _CountingArchive:
    """Wraps an archive and counts every element access a third-party selector makes."""

    def __init__(self, archive: GridArchive) -> None:
        self._archive = archive
        self.accesses = 0

    @property
    def occupied(self) -> _CountingArchive:
        return self

    def __len__(self) -> int:
        return len(self._archive.occupied)

    def __getitem__(self, index: int) -> Candidate:
        self.accesses += 1
        return self._archive.occupied[index]

    def __iter__(self):
        raise AssertionError("the selector walked the whole archive")


class _TournamentSelector:
    """A third party's parent selector: binary tournaments through the public index."""

    def select(self, archive, rng, count):
        occupied = archive.occupied
        picks = rng.integers(len(occupied), size=(count, 2))
        return [max(occupied[int(a)], occupied[int(b)], key=lambda e: e.fitness) for a, b in picks]


def test_selection_cost_is_flat_in_archive_size() -> None:
    from dei_framework import UniformSelector

    accesses = {}
    for cells in (10, 100, 10_000):
        archive = filled(cells)
        assert len(archive) == cells
        for selector in (_TournamentSelector(), UniformSelector()):
            counting = _CountingArchive(archive)
            picks = selector.select(counting, np.random.default_rng(1), 3)
            assert len(picks) == 3 and all(pick in list(archive.occupied[:]) for pick in picks[:1])
            accesses[type(selector).__name__, cells] = counting.accesses
    # Two reads per tournament pick, one per uniform pick, whatever the archive holds.
    assert {accesses["_TournamentSelector", n] for n in (10, 100, 10_000)} == {6}
    assert {accesses["UniformSelector", n] for n in (10, 100, 10_000)} == {3}


def test_flat_index_is_the_key_of_a_cell_and_refuses_foreign_cells() -> None:
    from dei_framework import CVTArchive

    grid = GridArchive(space=SPACE)
    descriptor = {"tsp": 50.0, "mc": 700.0}
    cell = grid.cell_of(descriptor)
    assert grid.flat_index(cell) == grid.index_of(descriptor)
    assert grid.add_at(elite("a", 1.0, **descriptor), grid.flat_index(cell)) is AddStatus.NEW
    assert grid.elite_at(cell).id == "a"
    cvt = CVTArchive(space=SPACE, cells=8, seed=0)
    assert cvt.flat_index(cvt.cell_of(descriptor)) == cvt.index_of(descriptor)
    for archive, foreign in ((grid, (9, 0)), (grid, (0,)), (cvt, (8,)), (cvt, (1, 2))):
        with pytest.raises(ValueError, match="cell"):
            archive.flat_index(foreign)
