"""Fuzzes the Redcode assembler with mutated real warriors and random junk; prints JSON.

Every input must end in the documented error type (``AssemblyError``) or a load image, within
a time bound. Usage::

    python benchmarks/fuzz_assembler.py --seconds 60 --seed 1 [--corpus ../shared/corewar/warriors]

The test suite runs a few seconds of this; the figures in docs/reliability.md come from longer
runs.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from dei_coreware.assembler import AssemblyError, assemble

TOKENS = [
    "MOV",
    "SPL",
    "DAT",
    "JMP",
    "EQU",
    "FOR",
    "ROF",
    "END",
    "ORG",
    ";assert",
    "&",
    "(",
    ")",
    "*",
    "/",
    "%",
    "#",
    "@",
    "<",
    ">",
    "{",
    "}",
    ",",
    ".I",
    ".AB",
    "CORESIZE",
    "\n",
    " ",
    "0",
    "-1",
    "99999999999",
    "x",
    "x equ x+x",
    "1 FOR 1000000",
]


def mutate(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 8)):
        choice = rng.random()
        position = rng.randrange(len(chars) + 1)
        if choice < 0.4:
            chars[position:position] = rng.choice(TOKENS)
        elif choice < 0.7 and chars:
            del chars[position : position + rng.randint(1, 20)]
        elif choice < 0.85:
            chars[position:position] = chr(rng.randrange(0, 0x250))
        else:
            chars[position:position] = chars[position : position + rng.randint(1, 200)]
    return "".join(chars)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--corpus",
        type=Path,
        default=Path(__file__).resolve().parents[2] / "shared" / "corewar" / "warriors",
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    bundled = Path(__file__).resolve().parents[1] / "plugins" / "coreware" / "warriors"
    corpus = [p.read_text(encoding="latin-1") for p in sorted(bundled.rglob("*.red"))]
    if args.corpus.exists():
        corpus += [p.read_text(encoding="latin-1") for p in sorted(args.corpus.rglob("*.red"))]
    counts = {"inputs": 0, "assembled": 0, "assembly_errors": 0, "other_exceptions": 0}
    slowest, failures = 0.0, []
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        source = (
            mutate(rng.choice(corpus), rng)
            if rng.random() < 0.9
            else "".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 400)))
        )
        started = time.perf_counter()
        try:
            assemble(source)
            counts["assembled"] += 1
        except AssemblyError:
            counts["assembly_errors"] += 1
        except Exception as exc:  # the finding this script exists to report
            counts["other_exceptions"] += 1
            failures.append(f"{type(exc).__name__}: {exc}"[:200])
        slowest = max(slowest, time.perf_counter() - started)
        counts["inputs"] += 1
    print(
        json.dumps(
            {
                **counts,
                "corpus": len(corpus),
                "slowest_seconds": round(slowest, 4),
                "seed": args.seed,
                "failures": failures[:10],
            }
        )
    )


if __name__ == "__main__":
    main()
