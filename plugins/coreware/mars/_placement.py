"""pMARS's random generator and warrior placement (``rng()``, ``posit()``, ``npos()`` in pos.c)."""

from __future__ import annotations

from dei_coreware.mars._settings import MarsError, MarsSettings

_RETRIES1 = 20  # tries per position before backtracking
_RETRIES2 = 4  # backtracks before giving up and using npos()


def pmars_rng(seed: int) -> int:
    """One step of the Park–Miller "minimal standard" generator as pMARS computes it."""
    # C integer division truncates toward zero; seeds stay non-negative so // is the same.
    x = 16807 * (seed % 127773) - 2836 * (seed // 127773)
    if x < 0:
        x += 2147483647
    return x


def _posit(seed: int, n: int, coresize: int, sep: int) -> tuple[bool, int, list[int]]:
    """pMARS's retrying placement; returns (failed, seed, positions)."""
    positions = [0] * n
    pos, retries1, retries2 = 1, _RETRIES1, _RETRIES2
    while True:
        seed = pmars_rng(seed)
        positions[pos] = seed % (coresize - 2 * sep + 1) + sep
        i = 1
        while i < pos:
            if abs(positions[pos] - positions[i]) < sep:
                break
            i += 1
        if i == pos:
            pos += 1
        else:
            if not retries2:
                return True, seed, positions
            if not retries1:
                pos = i  # backtrack to the last conflict
                retries2 -= 1
                retries1 = _RETRIES1
            else:
                retries1 -= 1
        if pos >= n:
            return False, seed, positions


def _npos(seed: int, n: int, coresize: int, sep: int) -> tuple[int, list[int]]:
    """pMARS's fallback placement: sorted random gaps, then a shuffle."""
    positions = [0] * n
    room = coresize - sep * n + 1
    for i in range(1, n):
        seed = pmars_rng(seed)
        temp = seed % room
        j = i - 1
        while j > 0:
            if temp > positions[j]:
                break
            positions[j + 1] = positions[j]
            j -= 1
        positions[j + 1] = temp
    for i in range(1, n):
        positions[i] += sep * i
    for i in range(1, n):
        seed = pmars_rng(seed)
        j = seed % (n - i) + i
        positions[i], positions[j] = positions[j], positions[i]
    return seed, positions


def round_placements(n: int, settings: MarsSettings, *, seed: int, rounds: int) -> list[list[int]]:
    """Load addresses of ``n`` warriors for ``rounds`` consecutive rounds, as pMARS places them.

    Warrior 0 always loads at 0. With two warriors the second one loads at
    ``mindistance + s % (coresize + 1 - 2 * mindistance)`` and the generator steps once per
    round; with three or more pMARS's ``posit()`` runs and falls back to ``npos()``.

    Args:
        n: Number of warriors.
        settings: Core size and minimum distance.
        seed: pMARS's ``-F`` value (the generator starts at ``seed - mindistance``).
        rounds: How many rounds to place, from the first.

    Raises:
        MarsError: ``seed`` is smaller than ``mindistance`` or does not fit pMARS's 32 bits.
    """
    sep, coresize = settings.mindistance, settings.coresize
    if not sep <= seed <= 2**31 - 1:
        raise MarsError(
            f"seed (-F) must be between mindistance ({sep}) and {2**31 - 1}, got {seed}"
        )
    state = seed - sep
    out: list[list[int]] = []
    for _ in range(rounds):
        if n == 1:
            out.append([0])
        elif n == 2:
            out.append([0, sep + state % (coresize + 1 - 2 * sep)])
            state = pmars_rng(state)
        else:
            failed, state, positions = _posit(state, n, coresize, sep)
            if failed:
                state, positions = _npos(state, n, coresize, sep)
            out.append(positions)
    return out
