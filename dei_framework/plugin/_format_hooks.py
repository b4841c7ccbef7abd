"""The format hooks: a domain's own file format for what the core writes out (firstresult).

Collected by :mod:`dei_framework.plugin.hookspecs`, the module the plugin manager registers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dei_framework.plugin._markers import hookspec

if TYPE_CHECKING:
    from dei_framework.contract.records import ExportedProgram


@hookspec(firstresult=True)
def dei_export_program(domain: str, program: ExportedProgram) -> tuple[str, str] | None:
    r"""Writes one program of a finished run as a file in its domain's own format (``dei export``).

    When no plugin answers, the core writes the program's text unchanged to a ``.txt`` file
    (the run, node, operator, round, fitness and cell are in the JSON Lines file written beside
    it either way).

    Example (Core War writes ``.red`` files with ``;name``, ``;author`` and ``;strategy``
    comments naming the program's origin)::

        @hookimpl
        def dei_export_program(domain, program):
            if domain != "mydomain":
                return None
            return ".prog", f"# {program.title}\n{program.text}"

    Fires:
        Once per exported champion or elite, in ``dei export`` (or
        :func:`~dei_framework.report.export.export_programs`); once for the run's best program with
        ``dei export --best`` (:func:`~dei_framework.report.export.export_best`).

    Args:
        domain: The run's domain name (``summary.json``'s ``domain``).
        program: The program and where it comes from
            (:class:`~dei_framework.report.export.ExportedProgram`).

    Returns:
        The first answer that is not ``None`` (firstresult: the plugins after it are not
        asked). Answer ``(suffix, text)``: the file name's suffix with its dot (``".red"``) and
        the file's content; or ``None`` for a domain that is not yours.
    """
