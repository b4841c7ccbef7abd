"""Per-slot random generators that draw exactly what ``np.random.default_rng(seed)`` draws.

Every mutation slot draws from a generator seeded by its own seed, so that a slot's draws do
not depend on timing. ``np.random.default_rng(seed)`` costs tens of microseconds (most of it
the ``SeedSequence`` hashing and array handling), and ``Generator.integers`` another ten for a
handful of values: on a cheap objective that was a large share of a step.

:func:`initial_states` computes the PCG64 starting states of many seeds at once, vectorised
(numpy's ``SeedSequence`` hashing and PCG64 seeding, re-derived from their published
algorithm), and :class:`SlotGenerator` steps PCG64 in plain Python integers for the two draws
the scheduler and the built-in parent selectors make — ``random()`` and bounded ``integers`` — with
numpy's own algorithms (53-bit doubles; Lemire's 32-bit bounded integers with the bit
generator's buffered half-word). Anything else a selector asks for (``choice``, ``normal``,
``dtype=``...) is served by a real ``numpy.random.Generator`` set to the same state, from then
on for every draw of that slot. So the draws are bit-for-bit those of ``default_rng(seed)``;
``tests/search/test_slot_random.py`` checks them against numpy.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
_MASK128 = (1 << 128) - 1
# numpy's SeedSequence constants (pool of four 32-bit words).
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715
_POOL = 4
# PCG64's (XSL-RR 128/64) default multiplier.
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_DOUBLE_UNIT = 1.0 / 9007199254740992.0  # 2 ** -53


def initial_states(seeds: Sequence[int]) -> list[tuple[int, int]]:
    """PCG64 ``(state, inc)`` of ``np.random.default_rng(seed)`` for each 32-bit ``seed``.

    Raises:
        ValueError: a seed outside ``[0, 2**32)`` (its entropy would span several words).
    """
    entropy = np.asarray(seeds, dtype=np.int64)
    if entropy.size and (entropy.min() < 0 or entropy.max() > _MASK32):
        raise ValueError("initial_states: seeds must be in [0, 2**32)")
    with np.errstate(over="ignore"):
        words = entropy.astype(np.uint32)
        hash_const = np.uint32(_INIT_A)
        mult_a = np.uint32(_MULT_A)

        def hashmix(value: np.ndarray) -> np.ndarray:
            nonlocal hash_const
            value = value ^ hash_const
            hash_const = np.uint32(hash_const * mult_a)
            value = value * hash_const
            return value ^ (value >> np.uint32(16))

        zero = np.zeros_like(words)
        mixer = [hashmix(words)] + [hashmix(zero) for _ in range(_POOL - 1)]
        left, right = np.uint32(_MIX_MULT_L), np.uint32(_MIX_MULT_R)
        for source in range(_POOL):
            for target in range(_POOL):
                if source != target:
                    mixed = left * mixer[target] - right * hashmix(mixer[source])
                    mixer[target] = mixed ^ (mixed >> np.uint32(16))
        # generate_state(4, uint64): eight 32-bit words, cycling over the pool.
        hash_b, mult_b = np.uint32(_INIT_B), np.uint32(_MULT_B)
        out = []
        for index in range(8):
            value = mixer[index % _POOL] ^ hash_b
            hash_b = np.uint32(hash_b * mult_b)
            value = value * hash_b
            out.append((value ^ (value >> np.uint32(16))).astype(np.uint64))
        # Little-endian pairs of 32-bit words make the four 64-bit words.
        wide = [(out[2 * i + 1] << np.uint64(32)) | out[2 * i] for i in range(4)]
    states = []
    for w0, w1, w2, w3 in zip(*(w.tolist() for w in wide), strict=True):
        initstate, initseq = (w0 << 64) | w1, (w2 << 64) | w3
        inc = ((initseq << 1) | 1) & _MASK128
        # From state 0: a step (state becomes inc), add initstate, another step.
        state = ((inc + initstate) * _PCG_MULT + inc) & _MASK128
        states.append((state, inc))
    return states


class SlotGenerator:
    """A ``numpy.random.Generator`` stand-in for one slot, in the state ``(state, inc)``.

    ``random()`` and ``integers`` with integer bounds in 32 bits are computed here; any other
    attribute hands the slot over to a real generator in the same state.
    """

    __slots__ = ("_state", "_inc", "_has32", "_half", "_real")

    def __init__(self, state: int, inc: int) -> None:
        self._state, self._inc = state, inc
        self._has32, self._half = False, 0
        self._real: np.random.Generator | None = None

    def _next64(self) -> int:
        state = (self._state * _PCG_MULT + self._inc) & _MASK128
        self._state = state
        value = ((state >> 64) ^ state) & _MASK64
        rotation = state >> 122
        return ((value >> rotation) | (value << (64 - rotation))) & _MASK64

    def _next32(self) -> int:
        if self._has32:
            self._has32 = False
            return self._half
        value = self._next64()
        self._has32, self._half = True, value >> 32
        return value & _MASK32

    def _bounded(self, span: int) -> int:
        """Lemire's method for ``[0, span]`` (``0 < span < 2**32 - 1``), as numpy draws it."""
        excl = span + 1
        product = self._next32() * excl
        leftover = product & _MASK32
        if leftover < excl:
            threshold = (_MASK32 - span) % excl
            while leftover < threshold:
                product = self._next32() * excl
                leftover = product & _MASK32
        return product >> 32

    def random(self, size: Any = None, **options: Any) -> Any:
        """A double in ``[0, 1)`` (other forms go to numpy)."""
        if self._real is not None or size is not None or options:
            return self.real().random(size, **options)
        # _next64 inlined: every slot draws this first.
        state = self._state = (self._state * _PCG_MULT + self._inc) & _MASK128
        value = ((state >> 64) ^ state) & _MASK64
        rotation = state >> 122
        value = ((value >> rotation) | (value << (64 - rotation))) & _MASK64
        return (value >> 11) * _DOUBLE_UNIT

    def integers(self, low: Any, high: Any = None, size: Any = None, **options: Any) -> Any:
        """Integers in ``[low, high)`` (or ``[0, low)``), as ``Generator.integers`` draws them."""
        if high is None:
            low, high = 0, low
        plain = (
            self._real is None
            and not options
            and type(low) is int
            and type(high) is int
            and (size is None or type(size) is int)
            and 0 < high - low < _MASK32
        )
        if not plain:
            return self.real().integers(low, high, size, **options)
        span = high - low - 1
        if size is None:
            return np.int64(low + (self._bounded(span) if span else 0))
        if size < 0:
            return self.real().integers(low, high, size)
        if span == 0:
            return np.full(size, low, dtype=np.int64)
        return np.array([low + self._bounded(span) for _ in range(size)], dtype=np.int64)

    def bounded(self, high: int, count: int) -> list[int]:
        """The values ``integers(high, size=count)`` gives, as a list of Python ints (without
        building an array: what the built-in parent selectors need per slot)."""
        if self._real is not None or type(high) is not int or not 0 < high < _MASK32:
            return self.integers(high, size=count).tolist()
        span = high - 1
        if span == 0:
            return [0] * count
        # _bounded, _next32 and _next64 inlined (this runs for every mutation slot).
        state, inc, has32, half = self._state, self._inc, self._has32, self._half
        threshold = (_MASK32 - span) % high
        values = []
        for _ in range(count):
            while True:
                if has32:
                    has32, word = False, half
                else:
                    state = (state * _PCG_MULT + inc) & _MASK128
                    value = ((state >> 64) ^ state) & _MASK64
                    rotation = state >> 122
                    value = ((value >> rotation) | (value << (64 - rotation))) & _MASK64
                    has32, half, word = True, value >> 32, value & _MASK32
                product = word * high
                if product & _MASK32 >= threshold:  # Lemire: accept (leftover >= threshold)
                    break
            values.append(product >> 32)
        self._state, self._has32, self._half = state, has32, half
        return values

    def real(self) -> np.random.Generator:
        """The real numpy generator, in this slot's current state (used from then on)."""
        if self._real is None:
            bit_generator = np.random.PCG64()
            bit_generator.state = {
                "bit_generator": "PCG64",
                "state": {"state": self._state, "inc": self._inc},
                "has_uint32": int(self._has32),
                "uinteger": self._half,
            }
            self._real = np.random.Generator(bit_generator)
        return self._real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)


def draw_indices(rng: np.random.Generator | SlotGenerator, high: int, count: int) -> list[int]:
    """``count`` values uniform over ``[0, high)``, as ``rng.integers(high, size=count)`` gives
    them, as Python ints: the scheduler's :class:`SlotGenerator` without building an array (a
    parent selector's or a prompt's draws, once per slot)."""
    if type(rng) is SlotGenerator:
        return rng.bounded(high, count)
    return [int(i) for i in rng.integers(high, size=count)]
