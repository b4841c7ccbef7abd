"""Counts the code lines of a package: lines holding code, not blank, not only a comment and
not part of a docstring (a string standing alone as a statement). One JSON object per run::

    python scripts/code_lines.py [PACKAGE_DIR ...]     # default: dei_framework
    python scripts/code_lines.py --rev COMMIT           # the same, at a commit (git show)

Prints the total, per sub-package, and the module count, so a refactoring can say whether the
core went down.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import subprocess
import sys
import tokenize
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def code_lines(source: str) -> int:
    """The lines of ``source`` that hold code (see the module docstring)."""
    docstring_lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                end = node.end_lineno or node.lineno
                docstring_lines.update(range(node.lineno, end + 1))
    lines: set[int] = set()
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT}
    skipped |= {tokenize.DEDENT, tokenize.ENDMARKER}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skipped:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstring_lines)


def _sources(package: str, rev: str | None) -> dict[str, str]:
    """``path -> source`` of every module under ``package``, now or at ``rev``."""
    if rev is None:
        return {str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / package).rglob("*.py")}
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, package],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return {
        name: subprocess.run(
            ["git", "show", f"{rev}:{name}"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        for name in names
        if name.endswith(".py")
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", default=["dei_framework"])
    parser.add_argument("--rev", help="count at this commit instead of the work tree")
    args = parser.parse_args(argv)
    result = {}
    for package in args.packages:
        per_part: Counter[str] = Counter()
        sources = _sources(package.rstrip("/"), args.rev)
        for path, source in sources.items():
            parts = Path(path).relative_to(package).parts
            per_part[parts[0] if len(parts) > 1 else "(top level)"] += code_lines(source)
        result[package] = {
            "code_lines": sum(per_part.values()),
            "modules": len(sources),
            "by_part": dict(sorted(per_part.items())),
        }
    print(json.dumps({"rev": args.rev or "work tree", **result}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
