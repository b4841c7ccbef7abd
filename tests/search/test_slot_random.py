"""The per-slot generators draw exactly what ``np.random.default_rng(seed)`` draws."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dei_framework.search.slot_random import SlotGenerator, initial_states

SEEDS = [0, 1, 2**31 - 1, 2**32 - 1, *random.Random(0).sample(range(2**31), 200)]


def test_initial_states_are_numpys_pcg64_seeding() -> None:
    for seed, (state, inc) in zip(SEEDS, initial_states(SEEDS), strict=True):
        expected = np.random.PCG64(seed).state["state"]
        assert (state, inc) == (expected["state"], expected["inc"]), seed


def test_initial_states_refuse_seeds_beyond_one_word() -> None:
    with pytest.raises(ValueError, match="seeds must be in"):
        initial_states([2**32])


def test_random_and_integers_match_default_rng() -> None:
    choose = random.Random(1)
    for seed, state in zip(SEEDS, initial_states(SEEDS), strict=True):
        fast, reference = SlotGenerator(*state), np.random.default_rng(seed)
        for _ in range(6):  # interleaved, so the buffered 32-bit half-word carries over
            assert fast.random() == reference.random()
            high = choose.choice([1, 2, 3, 7, 100, 5000, 2**31 + 5, 2**32 - 2])
            size = choose.choice([None, 0, 1, 2, 3, 5])
            drawn, expected = fast.integers(high, size=size), reference.integers(high, size=size)
            assert type(drawn) is type(expected)
            assert np.array_equal(drawn, expected), (seed, high, size)
            drawn, expected = (
                fast.integers(3, high + 3, size),
                reference.integers(3, high + 3, size),
            )
            assert np.array_equal(drawn, expected), (seed, high, size)


def test_other_draws_continue_on_a_real_generator_in_the_same_state() -> None:
    for seed, state in zip(SEEDS[:50], initial_states(SEEDS[:50]), strict=True):
        fast, reference = SlotGenerator(*state), np.random.default_rng(seed)
        assert fast.integers(9) == reference.integers(9)  # leaves a buffered half-word
        assert np.array_equal(fast.choice(10, 3), reference.choice(10, 3))
        assert np.array_equal(fast.integers(2**40, size=2), reference.integers(2**40, size=2))
        assert fast.random() == reference.random()
        assert fast.integers(5) == reference.integers(5)


def test_bounded_lists_what_integers_with_a_size_draws() -> None:
    choose = random.Random(2)
    for seed, state in zip(SEEDS, initial_states(SEEDS), strict=True):
        fast, reference = SlotGenerator(*state), np.random.default_rng(seed)
        for _ in range(6):  # interleaved with random(): the buffered half-word carries over
            assert fast.random() == reference.random()
            high = choose.choice([1, 2, 3, 7, 100, 5000, 2**31 + 5, 2**32 - 2])
            count = choose.choice([0, 1, 2, 3, 5])
            drawn = fast.bounded(high, count)
            assert all(type(value) is int for value in drawn)
            assert drawn == reference.integers(high, size=count).tolist(), (seed, high, count)
    handed_over = SlotGenerator(*initial_states([5])[0])
    handed_over.choice(4, 2)  # from now on a real generator draws
    reference = np.random.default_rng(5)
    reference.choice(4, 2)
    assert handed_over.bounded(1000, 4) == reference.integers(1000, size=4).tolist()
