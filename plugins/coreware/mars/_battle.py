"""Running battles: load images to C cells, rounds in the C simulator, pMARS scoring."""

from __future__ import annotations

import itertools
import struct
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import attrs
import numpy as np
from dei_coreware import _cmars
from dei_coreware.mars._placement import round_placements
from dei_coreware.mars._settings import MarsError, MarsSettings
from dei_coreware.redcode import MODE_CODE, MODIFIER_CODE, OPCODE_CODE, Warrior

_CELL = struct.Struct("<HHBBBx")
_PSPACE_OPCODES = frozenset({"LDP", "STP"})
# Column order of the C extension's per-warrior output (see _cmars.c).
_DEATH_CYCLE, _ALIVE, _SPAWNED, _COVERAGE, _EXECUTED, _DEATH_LEFT, _SURVIVED = range(7)
_ROUND_CYCLES, _ROUND_SURVIVORS = range(2)


@attrs.frozen(kw_only=True)
class RoundObservables:
    """What happened in one round, per warrior (tuples indexed like the battle's warriors).

    The round clock counts *cycles*: one cycle is one pass in which every living warrior
    executes one instruction. pMARS counts single steps instead (``cycles * warriors`` of
    them at the start, and when a warrior dies it removes that warrior's share of the steps
    left, so the number of passes left is unchanged). The cycle of a step is therefore
    ``cycles - ceil(steps_left / living_warriors)`` with ``steps_left`` pMARS's counter
    before the step: 0 for the first pass, ``cycles - 1`` for the last.

    Attributes:
        round: Index of the round in the battle's sequence (0-based; includes
            ``first_round``).
        first_mover: Index of the warrior that moved first.
        positions: Load address of each warrior.
        cycles: Cycles the round lasted: the cycle limit for a tie, else the cycle in which
            the decisive death happened plus one.
        alive_cycles: Cycles ``t`` in ``[0, cycle limit)`` at which the warrior had a live
            process (its death cycle, or the full limit for a survivor, who is counted alive
            until the limit even when the round ended early).
        death_cycle: Cycle in which the warrior's last process died, ``None`` if it survived.
        share_sum: Sum over cycles ``t`` below the limit of ``alive_i(t) / number_alive(t)``.
        processes_spawned: Successful ``SPL`` executions (processes created).
        memory_coverage: Distinct core addresses the warrior executed, i.e. that entered its
            process queue and got their turn (an imp covers one address per cycle, up to
            coresize); 0 when ``observe=False``.
        instructions_executed: Instructions the warrior executed.
        winners: Indices of the survivors (one winner, several for a tie, empty if all died).
    """

    round: int
    first_mover: int
    positions: tuple[int, ...]
    cycles: int
    alive_cycles: tuple[int, ...]
    death_cycle: tuple[int | None, ...]
    share_sum: tuple[float, ...]
    processes_spawned: tuple[int, ...]
    memory_coverage: tuple[int, ...]
    instructions_executed: tuple[int, ...]
    winners: tuple[int, ...]


@attrs.frozen(kw_only=True)
class BattleResult:
    """The outcome of a battle, as pMARS reports it plus per-round observables.

    Attributes:
        scores: pMARS's score per warrior: each survivor of a round gets
            ``(N*N - 1) // S`` points (N warriors, S survivors), i.e. 3 per win and 1 per tie
            in one-on-one.
        results: pMARS's ``Results:`` lines. Two warriors: one line ``[wins, losses, ties]``
            of the first warrior. Three or more: one line per warrior,
            ``[rounds it survived with 1 survivor, ... with N survivors, deaths]``. One
            warrior: no line.
        rounds: One :class:`RoundObservables` per round, in order.
    """

    scores: list[int]
    results: list[list[int]]
    rounds: list[RoundObservables]

    @property
    def instructions_executed(self) -> int:
        """Instructions executed by all warriors in all rounds."""
        return sum(sum(r.instructions_executed) for r in self.rounds)


_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _pool(size: int) -> ThreadPoolExecutor:
    """A shared pool of ``size`` threads (kept: starting threads per battle costs too much)."""
    with _POOLS_LOCK:
        if size not in _POOLS:
            _POOLS[size] = ThreadPoolExecutor(max_workers=size, thread_name_prefix="mars")
        return _POOLS[size]


def _pack(warrior: Warrior, coresize: int, index: int) -> bytes:
    cells = bytearray()
    for line, ins in enumerate(warrior.instructions):
        try:
            op = OPCODE_CODE[ins.opcode] * 8 + MODIFIER_CODE[ins.modifier]
            am, bm = MODE_CODE[ins.a_mode], MODE_CODE[ins.b_mode]
        except KeyError as exc:
            raise MarsError(
                f"warrior {index} ({warrior.name}) instruction {line}: unknown {exc.args[0]!r}"
            ) from None
        cells += _CELL.pack(ins.a % coresize, ins.b % coresize, op, am, bm)
    return bytes(cells)


def _pspace_indices(warriors: Sequence[Warrior]) -> list[int]:
    # pMARS's pspace_init(): warriors with the same PIN share one p-space, the others get
    # their own; indices are handed out in warrior order.
    indices: list[int] = []
    by_pin: dict[int, int] = {}
    count = 0
    for w in warriors:
        if w.pin is None:
            indices.append(count)
            count += 1
        elif w.pin in by_pin:
            indices.append(by_pin[w.pin])
        else:
            by_pin[w.pin] = count
            indices.append(count)
            count += 1
    return indices


def run_battle(
    warriors: Sequence[Warrior],
    settings: MarsSettings,
    *,
    seed: int,
    rounds: int | None = None,
    workers: int = 1,
    first_round: int = 0,
    observe: bool = True,
) -> BattleResult:
    """Runs a battle exactly as ``pmars -r ROUNDS -F SEED`` would.

    Placements and first movers of all rounds are computed up front, so rounds are
    independent except through p-space (pMARS keeps p-space, and the previous round's
    result in its location 0, across rounds). Rounds therefore run in parallel only when no
    warrior uses ``LDP`` or ``STP``; otherwise ``workers`` is ignored and they run in order.

    One deliberate difference from pMARS: when a warrior dies on the very last step of a round
    with three or more warriors alive, pMARS's step counter goes below zero and the round goes
    on until one warrior is left (possibly forever); here such a round stops after one more
    full cycle budget and counts as a tie of the survivors.

    Args:
        warriors: Load images (fields are reduced modulo coresize).
        settings: Simulator settings.
        seed: pMARS's ``-F`` value, at least ``settings.mindistance``.
        rounds: Rounds to run; ``settings.rounds`` when ``None``.
        workers: Threads running rounds (the C simulator releases the GIL); the result is
            identical for any value.
        first_round: Skip this many rounds of pMARS's sequence (placements and first mover
            continue from there; p-space starts fresh).
        observe: Record ``memory_coverage`` (costs a little speed); the other observables
            are always recorded.

    Returns:
        Scores, ``Results:`` lines and per-round observables.

    Raises:
        MarsError: Invalid warriors, seed or counts.
    """
    n = len(warriors)
    settings.check_warriors(n)
    rounds = settings.rounds if rounds is None else rounds
    if rounds < 0 or first_round < 0:
        raise MarsError(f"rounds and first_round must not be negative, got {rounds}, {first_round}")
    if workers < 1:
        raise MarsError(f"workers must be at least 1, got {workers}")
    coresize = settings.coresize
    for i, w in enumerate(warriors):
        if not 1 <= len(w) <= settings.maxlength:
            raise MarsError(
                f"warrior {i} ({w.name}) has {len(w)} instructions; "
                f"it needs 1 to maxlength ({settings.maxlength})"
            )
        if not 0 <= w.start < len(w):
            raise MarsError(f"warrior {i} ({w.name}) starts outside its code at {w.start}")

    placements = round_placements(n, settings, seed=seed, rounds=first_round + rounds)
    placements = placements[first_round:]
    code = b"".join(_pack(w, coresize, i) for i, w in enumerate(warriors))
    lengths = [len(w) for w in warriors]
    starts = [w.start for w in warriors]
    psp = _pspace_indices(warriors)
    psize = settings.effective_pspacesize
    positions = np.array(placements, dtype=np.int32).reshape(rounds, n)
    starters = np.array([(first_round + r) % n for r in range(rounds)], dtype=np.int32)
    out_w = np.zeros((rounds, n, 7), dtype=np.int64)
    out_share = np.zeros((rounds, n), dtype=np.float64)
    out_r = np.zeros((rounds, 2), dtype=np.int64)
    args = (
        coresize,
        settings.cycles,
        settings.processes,
        settings.effective_read_limit,
        settings.effective_write_limit,
        psize,
        code,
        lengths,
        starts,
        psp,
    )

    def fresh_pspace() -> tuple[np.ndarray, np.ndarray]:
        # pMARS starts p-space zeroed and location 0 at coresize - 1 ("unlikely number").
        return (
            np.zeros((max(psp) + 1) * psize, dtype=np.uint16),
            np.full(n, coresize - 1, dtype=np.uint16),
        )

    def run(chunk: slice | np.ndarray) -> None:
        # One C call per chunk: the GIL is released for all of its rounds.
        w, sh, r = out_w[chunk], out_share[chunk], out_r[chunk]
        _cmars.run_rounds(
            *args, positions[chunk], starters[chunk], observe, *fresh_pspace(), w, sh, r
        )
        if not isinstance(chunk, slice):  # fancy indexing copied: scatter the results back
            out_w[chunk], out_share[chunk], out_r[chunk] = w, sh, r

    uses_pspace = any(ins.opcode in _PSPACE_OPCODES for w in warriors for ins in w.instructions)
    workers = min(workers, rounds)
    if workers <= 1 or uses_pspace:
        if rounds:
            run(slice(0, rounds))
    else:
        # Rounds are handed out one at a time from a shared counter, so a thread that drew
        # short rounds takes more of them; the calling thread works too.
        counter = itertools.count()

        def drain() -> None:
            for index in iter(counter.__next__, None):
                if index >= rounds:
                    return
                run(slice(index, index + 1))

        futures = [_pool(workers - 1).submit(drain) for _ in range(workers - 1)]
        drain()
        for f in futures:
            f.result()
    return _summarise(n, rounds, first_round, placements, starters, out_w, out_share, out_r)


def _summarise(
    n: int,
    rounds: int,
    first_round: int,
    placements: list[list[int]],
    starters: np.ndarray,
    out_w: np.ndarray,
    out_share: np.ndarray,
    out_r: np.ndarray,
) -> BattleResult:
    # counts[i][k]: pMARS's warrior[i].score[k]. k < N: rounds survived with k+1 survivors;
    # k >= N: deaths while k-N+2 warriors were alive.
    counts = [[0] * (2 * n - 1) for _ in range(n)]
    observed: list[RoundObservables] = []
    w_rows = out_w.tolist()
    share_rows = out_share.tolist()
    r_rows = out_r.tolist()
    for r in range(rounds):
        rows = w_rows[r]
        survivors = r_rows[r][_ROUND_SURVIVORS]
        for i, row in enumerate(rows):
            if row[_SURVIVED]:
                counts[i][survivors - 1] += 1
            else:
                counts[i][row[_DEATH_LEFT] + n - 2] += 1
        observed.append(
            RoundObservables(
                round=first_round + r,
                first_mover=int(starters[r]),
                positions=tuple(placements[r]),
                cycles=r_rows[r][_ROUND_CYCLES],
                alive_cycles=tuple(row[_ALIVE] for row in rows),
                death_cycle=tuple(None if row[_SURVIVED] else row[_DEATH_CYCLE] for row in rows),
                share_sum=tuple(share_rows[r]),
                processes_spawned=tuple(row[_SPAWNED] for row in rows),
                memory_coverage=tuple(row[_COVERAGE] for row in rows),
                instructions_executed=tuple(row[_EXECUTED] for row in rows),
                winners=tuple(i for i, row in enumerate(rows) if row[_SURVIVED]),
            )
        )
    scores = [sum(c[s - 1] * ((n * n - 1) // s) for s in range(1, n + 1)) for c in counts]
    if n == 2:
        results = [[counts[0][0], counts[0][2], counts[0][1]]]
    elif n > 2:
        results = [c[:n] + [sum(c[n:])] for c in counts]
    else:
        results = []
    return BattleResult(scores=scores, results=results, rounds=observed)
