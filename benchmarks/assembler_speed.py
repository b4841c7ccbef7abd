"""Benchmark: Redcode assembler throughput on the Koenigstuhl warriors; prints JSON.

Usage::

    python benchmarks/assembler_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from dei_coreware.assembler import AssemblyError, assemble

FOLDER = (
    Path(__file__).resolve().parents[2] / "shared" / "corewar" / "warriors" / "koenigstuhl-94nop"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=FOLDER)
    args = parser.parse_args()
    sources = [p.read_text(encoding="latin-1") for p in sorted(args.folder.glob("*.red"))]
    if not sources:
        raise SystemExit(f"no .red files in {args.folder} (the reference data lives in ../shared)")
    best = float("inf")
    for _ in range(args.repeats):
        started = time.perf_counter()
        for source in sources:
            try:
                assemble(source)
            except AssemblyError:
                pass
        best = min(best, time.perf_counter() - started)
    lines = sum(source.count("\n") + 1 for source in sources)
    print(
        json.dumps(
            {
                "files": len(sources),
                "lines": lines,
                "seconds": round(best, 3),
                "files_per_second": round(len(sources) / best, 1),
                "ms_per_file": round(1000 * best / len(sources), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
