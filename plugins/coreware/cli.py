"""``dei coreware``: the simulator and assembler on the command line, with pMARS's flags and output.

The lead registers :data:`coreware_group` through the plugin hook (``dei_cli_commands``).
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path

import click
from dei_coreware.assembler import AssemblerSettings, AssemblyError, assemble
from dei_coreware.mars import MarsError, MarsSettings, run_battle
from dei_coreware.redcode import Warrior


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise MarsError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _assembler_settings(settings: MarsSettings, warriors: int) -> AssemblerSettings:
    # The predefined constants (CORESIZE, WARRIORS, ...) must be those of the battle.
    return AssemblerSettings(
        coresize=settings.coresize,
        maxprocesses=settings.processes,
        maxcycles=settings.cycles,
        maxlength=settings.maxlength,
        mindistance=settings.mindistance,
        warriors=warriors,
        rounds=settings.rounds,
        pspacesize=settings.pspacesize,
    )


def _core_options(command: Callable) -> Callable:
    """The pMARS core flags shared by ``battle`` and ``assemble`` (they also set CORESIZE...)."""
    options = [
        click.option(
            "-s",
            "coresize",
            type=int,
            default=8000,
            show_default=True,
            help="Core size (CORESIZE).",
        ),
        click.option(
            "-c",
            "cycles",
            type=int,
            default=80000,
            show_default=True,
            help="Cycles until a tie (MAXCYCLES).",
        ),
        click.option(
            "-p",
            "processes",
            type=int,
            default=8000,
            show_default=True,
            help="Maximum processes per warrior (MAXPROCESSES).",
        ),
        click.option(
            "-l",
            "maxlength",
            type=int,
            default=100,
            show_default=True,
            help="Maximum warrior length (MAXLENGTH).",
        ),
        click.option(
            "-d",
            "mindistance",
            type=int,
            default=0,
            help="Minimum distance between warriors (MINDISTANCE) [default: the -l value].",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.group("coreware")
def coreware_group() -> None:
    """Core War: run battles exactly as pMARS 0.9.4 and assemble Redcode."""


@coreware_group.command("battle", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-r", "rounds", type=int, default=1, show_default=True, help="Rounds to play.")
@_core_options
@click.option(
    "-F",
    "seed",
    type=int,
    default=None,
    help="Fixed position seed (pMARS -F); random when omitted.",
)
@click.option("-S", "pspacesize", type=int, default=0, help="P-space size [default: coresize/16].")
@click.option("-R", "read_limit", type=int, default=0, help="Read limit [default: none].")
@click.option("-W", "write_limit", type=int, default=0, help="Write limit [default: none].")
@click.option(
    "-b",
    "brief",
    is_flag=True,
    help="Brief output (for pMARS compatibility; output is always brief).",
)
@click.option(
    "--workers",
    type=int,
    default=None,
    help="Threads running rounds in parallel (same result for any value) [default: one per core].",
)
@click.argument("files", nargs=-1, required=True)
def battle(
    rounds: int,
    coresize: int,
    cycles: int,
    processes: int,
    maxlength: int,
    mindistance: int,
    seed: int | None,
    pspacesize: int,
    read_limit: int,
    write_limit: int,
    brief: bool,
    workers: int | None,
    files: tuple[str, ...],
) -> None:
    """Runs a battle of the Redcode FILES and prints what 'pmars -b' prints."""
    del brief  # pMARS's -b only suppresses the listing, which this command never prints
    try:
        settings = MarsSettings(
            rounds=rounds,
            coresize=coresize,
            cycles=cycles,
            processes=processes,
            maxlength=maxlength,
            mindistance=mindistance or maxlength,
            pspacesize=pspacesize,
            read_limit=read_limit or None,
            write_limit=write_limit or None,
        )
        settings.check_warriors(len(files))
        asm_settings = _assembler_settings(settings, len(files))
        warriors: list[Warrior] = []
        for path in files:
            source = _read(path)
            try:
                warriors.append(assemble(source, settings=asm_settings))
            except AssemblyError as exc:
                _fail(f"{path}: {exc}")
        if seed is None:
            # pMARS seeds from the clock without -F; any valid -F value is as good.
            seed = random.randint(settings.mindistance, 2**31 - 1)
        result = run_battle(
            warriors,
            settings,
            seed=seed,
            observe=False,
            workers=workers if workers is not None else os.cpu_count() or 1,
        )
    except MarsError as exc:
        _fail(str(exc))
        return
    lines = []
    for i, warrior in enumerate(warriors):
        lines.append(f"{warrior.name} by {warrior.author} scores {result.scores[i]}")
        if len(warriors) > 2:
            lines.append("  Results: " + " ".join(str(v) for v in result.results[i]))
    if len(warriors) == 2:
        lines.append("Results: " + " ".join(str(v) for v in result.results[0]))
    click.echo("\n".join(lines))


@coreware_group.command("assemble")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    required=True,
    help="Print one JSON object keyed by file (the only output format).",
)
@_core_options
@click.argument("files", nargs=-1, required=True)
def assemble_command(
    as_json: bool,
    coresize: int,
    cycles: int,
    processes: int,
    maxlength: int,
    mindistance: int,
    files: tuple[str, ...],
) -> None:
    """Assembles Redcode FILES and prints one JSON object keyed by file.

    Each value is the load image, or {"error": "line N: ..."} for a file that does not
    assemble (the exit status is then 1).
    """
    del as_json
    try:
        mars = MarsSettings(
            coresize=coresize,
            cycles=cycles,
            processes=processes,
            maxlength=maxlength,
            mindistance=mindistance or maxlength,
        )
    except MarsError as exc:
        _fail(str(exc))
    settings = _assembler_settings(mars, warriors=2)
    out: dict[str, dict] = {}
    failed = False
    for path in files:
        try:
            out[path] = assemble(_read(path), settings=settings).to_json()
        except (AssemblyError, MarsError) as exc:
            out[path] = {"error": str(exc)}
            failed = True
    click.echo(json.dumps(out, indent=1))
    if failed:
        sys.exit(1)
