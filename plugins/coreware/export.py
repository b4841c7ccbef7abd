"""Core War's ``dei export`` format: a warrior as a ``.red`` file that says where it comes from.

The program keeps its code and its own ``;strategy`` lines; its ``;name`` and ``;author`` are
replaced (pMARS and the project's assembler show one name per warrior) by ones naming the run,
node, round and operator, and a ``;strategy`` line gives the rest: fitness and cell. The
comments go after ``;redcode`` when the program has that line, because pMARS ignores
everything above it.
"""

from __future__ import annotations

import re

from dei_framework.contract.records import ExportedProgram

_REPLACED = re.compile(r"^\s*;\s*(name|author)\b", re.IGNORECASE)
_REDCODE = re.compile(r"^\s*;\s*redcode", re.IGNORECASE)


def export_text(program: ExportedProgram) -> str:
    """The ``.red`` text of an exported warrior (see the module docstring)."""
    lines = [line for line in program.text.splitlines() if not _REPLACED.match(line)]
    header = [
        f";name {program.title}",
        f";author DEI {program.node} ({program.operator or 'unknown operator'})",
        f";strategy exported by dei export: {program.origin}",
    ]
    at = next((i + 1 for i, line in enumerate(lines) if _REDCODE.match(line)), 0)
    return "\n".join([*lines[:at], *header, *lines[at:]]) + "\n"
