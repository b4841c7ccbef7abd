"""Tests of the MARS: pMARS 0.9.4 reference battles, determinism, threads, observables, settings."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
from pathlib import Path

import attrs
import pytest
from dei_coreware.mars import MarsError, MarsSettings, pmars_rng, round_placements, run_battle
from dei_coreware.redcode import MODES, MODIFIERS, OPCODES, Instruction, Warrior


def _reference(corewar_dir: Path) -> tuple[list[dict], dict]:
    ref = corewar_dir / "reference"
    battles = json.loads((ref / "koenigstuhl-94nop-battles.json").read_text())
    images = json.loads((ref / "koenigstuhl-94nop-assembled.json").read_text())
    return battles, images


@pytest.fixture(scope="module")
def reference(corewar_dir: Path) -> tuple[list[dict], dict]:
    """(battles, load images) of the pMARS reference data."""
    return _reference(corewar_dir)


def _warriors(battle: dict, images: dict) -> list[Warrior]:
    return [Warrior.from_json(images[name]) for name in battle["warriors"]]


def _w(*rows: tuple, start: int = 0, name: str = "Unknown") -> Warrior:
    """A load image from ``(OP, MOD, AMODE, A, BMODE, B)`` rows (negative fields allowed)."""
    ins = tuple(Instruction(op, mod, am, a % 8000, bm, b % 8000) for op, mod, am, a, bm, b in rows)
    return Warrior(instructions=ins, start=start, name=name)


IMP = _w(("MOV", "I", "$", 0, "$", 1), name="imp")
DAT = _w(("DAT", "F", "$", 0, "$", 0), name="dat")
LOOP = _w(("JMP", "B", "$", 0, "$", 0), name="loop")
SEED = 1000  # any -F value >= mindistance


# --- pMARS reference ------------------------------------------------------------------------


@pytest.mark.parametrize("index", range(72))
def test_reference_battle_matches_pmars(reference: tuple[list[dict], dict], index: int) -> None:
    battles, images = reference
    battle = battles[index]
    settings = MarsSettings.from_flags(battle["settings"])
    result = run_battle(
        _warriors(battle, images),
        settings,
        seed=battle["F"],
        rounds=battle["rounds"],
        observe=False,
    )
    assert result.scores == battle["scores"]
    assert result.results == battle["results"]


def test_reference_battles_with_observation_and_threads(reference: tuple[list[dict], dict]) -> None:
    battles, images = reference
    for battle in battles[::9]:
        settings = MarsSettings.from_flags(battle["settings"])
        warriors = _warriors(battle, images)
        one = run_battle(warriors, settings, seed=battle["F"], rounds=battle["rounds"])
        two = run_battle(warriors, settings, seed=battle["F"], rounds=battle["rounds"], workers=2)
        assert one.scores == battle["scores"] and one.results == battle["results"]
        assert one == two


def test_validate_ties_itself(corewar_dir: Path) -> None:
    assembler = pytest.importorskip("dei_coreware.assembler")
    source = (corewar_dir / "warriors" / "validate" / "validate.red").read_text(errors="replace")
    warrior = assembler.assemble(source)
    result = run_battle([warrior, warrior], MarsSettings(rounds=20), seed=SEED)
    assert result.results == [[0, 0, 20]]
    assert result.scores == [20, 20]


# --- determinism and threads -----------------------------------------------------------------


def test_deterministic_and_threads_agree(reference: tuple[list[dict], dict]) -> None:
    battles, images = reference
    battle = next(b for b in battles if len(b["warriors"]) == 2)
    warriors = _warriors(battle, images)
    settings = MarsSettings(rounds=20)
    first = run_battle(warriors, settings, seed=battle["F"])
    assert run_battle(warriors, settings, seed=battle["F"]) == first
    assert run_battle(warriors, settings, seed=battle["F"], workers=2) == first
    assert run_battle(warriors, settings, seed=battle["F"], workers=3) == first


def test_first_round_continues_the_sequence(reference: tuple[list[dict], dict]) -> None:
    battles, images = reference
    battle = next(b for b in battles if len(b["warriors"]) == 3)
    warriors = _warriors(battle, images)
    settings = MarsSettings(rounds=10)
    whole = run_battle(warriors, settings, seed=battle["F"])
    tail = run_battle(warriors, settings, seed=battle["F"], first_round=4, rounds=6)
    assert tail.rounds == whole.rounds[4:]


# --- placement -------------------------------------------------------------------------------


def test_rng_is_park_miller() -> None:
    assert pmars_rng(1) == 16807
    x = 1
    for _ in range(10000):
        x = pmars_rng(x)
    assert x == 1043618065  # the published check value of the minimal standard generator


def test_two_warrior_placement_formula() -> None:
    settings = MarsSettings()
    seed = 12345
    places = round_placements(2, settings, seed=seed, rounds=3)
    s = seed - 100
    for p in places:
        assert p == [0, 100 + s % (8000 + 1 - 200)]
        s = pmars_rng(s)


@pytest.mark.parametrize("n", [3, 4, 8, 20])
def test_multi_warrior_placement_keeps_distance(n: int) -> None:
    settings = MarsSettings(coresize=8000 if n < 20 else 2000, maxlength=100, mindistance=100)
    for p in round_placements(n, settings, seed=4242, rounds=50):
        assert p[0] == 0 and len(set(p)) == n
        ordered = sorted(p) + [settings.coresize]
        assert all(b - a >= 100 for a, b in zip(ordered, ordered[1:], strict=False))


# --- observables -----------------------------------------------------------------------------


def test_imp_versus_dat() -> None:
    result = run_battle([IMP, DAT], MarsSettings(rounds=2), seed=SEED)
    assert result.scores == [6, 0] and result.results == [[2, 0, 0]]
    for r in result.rounds:
        assert r.death_cycle == (None, 0)
        assert r.alive_cycles == (80000, 0)
        assert r.share_sum == (80000.0, 0.0)
        assert r.winners == (0,)
        assert r.cycles == 1
    # round 0: the imp moves first and executes once; round 1: the DAT dies first
    assert [r.first_mover for r in result.rounds] == [0, 1]
    assert [r.instructions_executed for r in result.rounds] == [(1, 1), (0, 1)]


def test_imp_versus_imp_share_half() -> None:
    result = run_battle([IMP, IMP], MarsSettings(rounds=1, cycles=5000), seed=SEED)
    (r,) = result.rounds
    assert result.results == [[0, 0, 1]]
    assert r.share_sum == (2500.0, 2500.0)
    assert r.death_cycle == (None, None)
    assert r.alive_cycles == (5000, 5000)
    assert r.cycles == 5000
    assert r.winners == (0, 1)
    assert r.instructions_executed == (5000, 5000)


def test_three_warriors_share_after_a_death() -> None:
    result = run_battle([LOOP, DAT, LOOP], MarsSettings(rounds=3, cycles=600), seed=SEED)
    for r in result.rounds:
        assert r.death_cycle == (None, 0, None)
        assert r.share_sum == (300.0, 0.0, 300.0)
        assert r.winners == (0, 2)
    assert result.scores == [3 * 4, 0, 3 * 4]  # (3*3-1)/2 per two-survivor round
    assert result.results == [[0, 3, 0, 0], [0, 0, 0, 3], [0, 3, 0, 0]]


def test_spl_spawner_counts_processes() -> None:
    spawner = _w(("SPL", "B", "$", 0, "$", 0), ("JMP", "B", "$", -1, "$", 0))
    settings = MarsSettings(rounds=1, cycles=1000, processes=64)
    (r,) = run_battle([spawner], settings, seed=SEED).rounds
    assert r.processes_spawned == (63,)  # 1 + 63 = the process limit, then SPL only continues
    assert r.instructions_executed == (1000,)
    assert r.memory_coverage == (2,)
    assert r.death_cycle == (None,)


@pytest.mark.parametrize(("cycles", "expected"), [(1, 1), (100, 100), (9000, 8000)])
def test_imp_memory_coverage(cycles: int, expected: int) -> None:
    (r,) = run_battle([IMP], MarsSettings(cycles=cycles), seed=SEED).rounds
    assert r.memory_coverage == (expected,)
    assert r.instructions_executed == (cycles,)


def test_observe_false_skips_coverage_only() -> None:
    on = run_battle([IMP, LOOP], MarsSettings(cycles=300), seed=SEED)
    off = run_battle([IMP, LOOP], MarsSettings(cycles=300), seed=SEED, observe=False)
    assert off.rounds[0].memory_coverage == (0, 0)
    assert on.rounds[0].memory_coverage == (300, 1)
    assert off.scores == on.scores and off.rounds[0].share_sum == on.rounds[0].share_sum


# --- instruction semantics -------------------------------------------------------------------


def test_div_by_zero_kills_only_the_failing_process() -> None:
    # DIV.F #2, $1 divides both fields of the next cell; with #2, #0 the B half divides by 0.
    warrior = _w(("DIV", "F", "#", 2, "$", 1), ("DAT", "F", "$", 8, "$", 8))
    (r,) = run_battle([warrior], MarsSettings(cycles=10), seed=SEED).rounds
    # divides 8/2 and 8/1 then falls into the DAT: dies on its second instruction
    assert r.death_cycle == (1,) and r.instructions_executed == (2,)
    killer = _w(("DIV", "F", "#", 2, "#", 0), ("JMP", "B", "$", 0, "$", 0))
    (r,) = run_battle([killer], MarsSettings(cycles=10), seed=SEED).rounds
    assert r.death_cycle == (0,)


def test_pspace_last_result_and_sequential_rounds() -> None:
    # LDP.AB #0 loads the previous round's result (coresize-1 before the first round) into a
    # data cell; JMN then kills a warrior whose last result was non-zero: it alternates.
    flip = _w(
        ("LDP", "AB", "#", 0, "$", 3),
        ("JMN", "B", "$", 3, "$", 2),
        ("JMP", "B", "$", 0, "$", 0),
        ("DAT", "F", "$", 0, "$", 0),
        ("DAT", "F", "$", 0, "$", 0),
    )
    settings = MarsSettings(rounds=4, cycles=50)
    one = run_battle([flip], settings, seed=SEED)
    assert [r.winners for r in one.rounds] == [(), (0,), (), (0,)]
    assert run_battle([flip], settings, seed=SEED, workers=2) == one


def test_pin_shares_pspace() -> None:
    writer = _w(("STP", "AB", "#", 5, "#", 1), ("JMP", "B", "$", 0, "$", 0))
    reader = _w(
        ("LDP", "AB", "#", 1, "$", 3),
        ("JMN", "B", "$", 3, "$", 2),
        ("JMP", "B", "$", 0, "$", 0),
        ("DAT", "F", "$", 0, "$", 0),
        ("DAT", "F", "$", 0, "$", 0),
    )
    settings = MarsSettings(rounds=2, cycles=100)
    # own p-spaces: the reader always reads 0 and survives
    assert run_battle([writer, reader], settings, seed=SEED).results == [[0, 0, 2]]
    # same PIN: the reader sees the 5 the writer stored (in round 0 and, kept, in round 1)
    shared = [attrs.evolve(writer, pin=7), attrs.evolve(reader, pin=7)]
    assert run_battle(shared, settings, seed=SEED).results == [[2, 0, 0]]
    assert run_battle(shared, settings, seed=SEED, workers=2).results == [[2, 0, 0]]


def test_read_and_write_limits_fold_addresses() -> None:
    loop_at_5 = [("DAT", "F", "$", 0, "$", 0)] * 5 + [("JMP", "B", "$", 0, "$", 0)]
    filler = [("DAT", "F", "$", 0, "$", 0)] * 39
    # start 45: JMP $60 lands on 105 (a DAT) normally, on 5 (a loop) with read limit 100
    jumper = _w(*loop_at_5, *filler, ("JMP", "B", "$", 60, "$", 0), start=45)
    plain = run_battle([jumper], MarsSettings(cycles=20), seed=SEED).rounds[0]
    folded = run_battle([jumper], MarsSettings(cycles=20, read_limit=100), seed=SEED).rounds[0]
    assert plain.death_cycle == (1,)
    assert folded.death_cycle == (None,)
    # start 45: MOV.I $2, $60 writes the loop at 47 to 105 normally, to 5 with write limit 100;
    # JMP $-40 then jumps to 5, which is a DAT unless the write was folded there.
    dats = [("DAT", "F", "$", 0, "$", 0)] * 45
    writer = _w(
        *dats,
        ("MOV", "I", "$", 2, "$", 60),
        ("JMP", "B", "$", -41, "$", 0),
        ("JMP", "B", "$", 0, "$", 0),
        start=45,
    )
    plain = run_battle([writer], MarsSettings(cycles=20), seed=SEED).rounds[0]
    folded = run_battle([writer], MarsSettings(cycles=20, write_limit=100), seed=SEED).rounds[0]
    assert plain.death_cycle == (2,)
    assert folded.death_cycle == (None,)


# --- settings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"coresize": 0}, "coresize must be between 1 and 65535"),
        ({"coresize": 70000}, "coresize must be between 1 and 65535"),
        ({"cycles": 0}, "cycles must be at least 1"),
        ({"processes": 0}, "processes must be between 1"),
        ({"maxlength": 200}, "mindistance (100) must be at least maxlength (200)"),
        ({"rounds": -1}, "rounds must not be negative"),
        ({"pspacesize": 9000}, "pspacesize must be between 0"),
        ({"read_limit": 3}, "read_limit must be a divisor of coresize (8000)"),
        ({"write_limit": 0}, "write_limit must be a divisor of coresize"),
        ({"coresize": "8000"}, "coresize must be an integer"),
    ],
)
def test_bad_settings_raise_mars_error(kwargs: dict, message: str) -> None:
    with pytest.raises(MarsError) as info:
        MarsSettings(**kwargs)
    assert message in str(info.value)


def test_bad_battles_raise_mars_error() -> None:
    with pytest.raises(MarsError, match=r"seed \(-F\) must be between mindistance"):
        run_battle([IMP, DAT], MarsSettings(), seed=5)
    with pytest.raises(MarsError, match="coresize .* too small for 3 warriors"):
        run_battle([IMP, DAT, IMP], MarsSettings(coresize=250), seed=SEED)
    with pytest.raises(MarsError, match="1 to 36 warriors"):
        run_battle([], MarsSettings(), seed=SEED)
    with pytest.raises(MarsError, match="maxlength"):
        run_battle([_w(*[("DAT", "F", "$", 0, "$", 0)] * 101), IMP], MarsSettings(), seed=SEED)
    with pytest.raises(MarsError, match="workers must be at least 1"):
        run_battle([IMP, DAT], MarsSettings(), seed=SEED, workers=0)


def test_flags() -> None:
    settings = MarsSettings.from_flags("-r 7 -s 800 -c 8000 -p 80 -l 20 -d 20 -S 50 -R 400")
    assert (settings.rounds, settings.coresize, settings.cycles, settings.processes) == (
        7,
        800,
        8000,
        80,
    )
    assert settings.effective_pspacesize == 50 and settings.effective_read_limit == 400
    assert settings.effective_write_limit == 800
    assert MarsSettings.from_flags(settings.to_flags()) == settings
    assert MarsSettings().effective_pspacesize == 500
    assert MarsSettings(coresize=8001).effective_pspacesize == 8001 // 9
    assert MarsSettings.from_flags("-l 50 -d 0").mindistance == 50
    with pytest.raises(MarsError, match="unknown MARS flag '-x'"):
        MarsSettings.from_flags("-x 1")
    with pytest.raises(MarsError, match="flag -s needs an integer"):
        MarsSettings.from_flags("-s big")


# --- differential test against a real pMARS (opt-in) ------------------------------------------


def test_against_pmars_binary(corewar_dir: Path, tmp_path: Path) -> None:
    """Random battles (read/write limits, p-space sizes, PINs, 1-4 warriors) vs a pMARS binary.

    Opt-in: set ``DEI_PMARS`` to a pMARS 0.9.4 binary built with ``-DEXT94 -DRWLIMIT``.
    """
    binary = os.environ.get("DEI_PMARS")
    if not binary or not Path(binary).is_file():
        pytest.skip("set DEI_PMARS to a pMARS binary to compare against it")
    rng = random.Random(20)
    opcodes = [op for op in OPCODES if op not in ("CMP", "DAT")]
    images = _reference(corewar_dir)[1]
    names = sorted(images)
    folder = corewar_dir / "warriors" / "koenigstuhl-94nop"
    for case in range(60):
        coresize = 8000
        if case % 2:  # Koenigstuhl warriors, hill settings plus limits and p-space size
            files = [str(folder / f) for f in rng.sample(names, rng.choice([2, 3, 4]))]
            warriors = [Warrior.from_json(images[Path(f).name]) for f in files]
            flags = {"-r": 3, "-c": 80000, "-p": 8000, "-l": 100, "-d": 100}
        else:  # small random warriors that loop, with LDP/STP and PINs
            coresize = rng.choice([800, 2400, 8000])
            warriors, files = [], []
            for k in range(rng.choice([1, 2, 3])):
                n = rng.randint(3, 20)
                rows = [
                    (
                        rng.choice(opcodes),
                        rng.choice(MODIFIERS),
                        rng.choice(MODES),
                        rng.randint(-n, n),
                        rng.choice(MODES),
                        rng.randint(-n, n),
                    )
                    for _ in range(n - 1)
                ] + [("JMP", "B", "$", 1 - n, "$", 0)]
                pin = rng.choice([None, 7])
                text = "".join(f" {o}.{m} {am}{a}, {bm}{b}\n" for o, m, am, a, bm, b in rows)
                start = rng.randrange(n)
                text += (f" PIN {pin}\n" if pin else "") + f" END {start}\n"
                (tmp_path / f"w{k}.red").write_text(f";redcode-94\n;name w{k}\n{text}")
                files.append(str(tmp_path / f"w{k}.red"))
                instructions = tuple(
                    Instruction(o, m, am, a % coresize, bm, b % coresize)
                    for o, m, am, a, bm, b in rows
                )
                warriors.append(
                    Warrior(instructions=instructions, start=start, name=f"w{k}", pin=pin)
                )
            flags = {"-r": 5, "-c": rng.choice([500, 5000]), "-p": 64, "-l": 20, "-d": 40}
        limits = [d for d in (200, 400, 800, 1200, 2000) if coresize % d == 0]
        flags |= {"-s": coresize, "-S": rng.choice([1, 3, 50]), "-F": rng.randint(100, 10**7)}
        flags |= {"-R": rng.choice([coresize, *limits]), "-W": rng.choice([coresize, *limits])}
        args = [str(x) for kv in flags.items() for x in kv]
        out = subprocess.run([binary, "-b", *args, *files], capture_output=True, text=True).stdout
        scores = [int(x) for x in re.findall(r"scores (-?\d+)", out)]
        results = [
            [int(v) for v in line.split(":")[1].split()]
            for line in out.splitlines()
            if "Results:" in line
        ]
        settings = MarsSettings.from_flags(
            [a for kv in flags.items() if kv[0] != "-F" for a in (kv[0], str(kv[1]))]
        )
        result = run_battle(warriors, settings, seed=flags["-F"], workers=2)
        assert (result.scores, result.results) == (scores, results), (case, args, files)
