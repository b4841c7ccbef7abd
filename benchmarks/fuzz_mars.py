"""Fuzzes the MARS with random load images under random settings; prints JSON.

Random opcodes, modifiers, modes and fields, 1-5 warriors, random core sizes, read/write
limits, p-space sizes, process limits and PINs, run on 1 or 2 threads. Every battle must end
with a result or a ``MarsError`` (bad settings); a crash of the C extension kills the process,
which is why the test suite runs this script in a subprocess. Usage::

    python benchmarks/fuzz_mars.py --battles 400 --seed 1
"""

from __future__ import annotations

import argparse
import json
import random

from dei_coreware.mars import MarsError, MarsSettings, run_battle
from dei_coreware.redcode import MODES, MODIFIERS, OPCODES, Instruction, Warrior


def random_battle(rng: random.Random) -> tuple[list[Warrior], MarsSettings]:
    core = rng.choice([200, 800, 1000, 8000, 8192, 55440])
    maxlength = rng.choice([5, 20, 100])
    divisors = [d for d in range(1, core + 1) if core % d == 0]
    limits = [None, *divisors[:5], *divisors[-3:]]
    warriors = []
    for _ in range(rng.randint(1, 5)):
        instructions = tuple(
            Instruction(
                rng.choice(OPCODES),
                rng.choice(MODIFIERS),
                rng.choice(MODES),
                rng.randrange(core),
                rng.choice(MODES),
                rng.randrange(core),
            )
            for _ in range(rng.randint(1, maxlength))
        )
        warriors.append(
            Warrior(
                instructions=instructions,
                start=rng.randrange(len(instructions)),
                pin=rng.choice([None, None, 1, 2]),
            )
        )
    settings = MarsSettings(
        coresize=core,
        maxlength=maxlength,
        mindistance=maxlength,
        rounds=3,
        cycles=rng.choice([50, 5000]),
        processes=rng.choice([1, 3, 64]),
        pspacesize=rng.choice([0, 1, 7, 16]),
        read_limit=rng.choice(limits),
        write_limit=rng.choice(limits),
    )
    return warriors, settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    counts = {"battles": 0, "mars_errors": 0, "instructions": 0}
    for _ in range(args.battles):
        try:
            warriors, settings = random_battle(rng)
            result = run_battle(
                warriors,
                settings,
                seed=rng.randrange(1 << 30),
                rounds=3,
                workers=rng.choice([1, 2]),
            )
            counts["instructions"] += result.instructions_executed
        except MarsError:
            counts["mars_errors"] += 1
        counts["battles"] += 1
    print(json.dumps({**counts, "seed": args.seed}))


if __name__ == "__main__":
    main()
