"""Writes each command's summary in docs/cli.md from the command's own help text.

One source: the first paragraph of a command's ``--help`` (its docstring) is what
``docs/cli.md`` says first under the command's heading, between the markers
``<!-- help: PATH -->`` and ``<!-- /help -->``. Plugin commands are included (``dei coreware
battle``, ``dei symreg score``), as the installed CLI offers them.

Usage: ``python scripts/cli_help.py`` rewrites the summaries (and adds the markers under a
heading that has none); ``--check`` only tells (exit status 1) whether they are current.
``tests/docs/test_docs_cli.py`` runs the check, so the page cannot drift from ``--help``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from dei_framework.app import cli

DOCUMENT = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def commands() -> Iterator[tuple[str, click.Command]]:
    """Every command with its full invocation (``dei-run``, ``dei plugins``, ...)."""
    yield "dei-run", cli.dei_run

    def walk(path: str, command: click.Command) -> Iterator[tuple[str, click.Command]]:
        yield path, command
        if isinstance(command, click.Group):
            context = click.Context(command, info_name=path.split()[-1])
            for name in command.list_commands(context):
                yield from walk(f"{path} {name}", command.get_command(context, name))

    yield from walk("dei", cli.dei)


def summary(command: click.Command) -> str:
    """The first paragraph of the command's help, on one line, as ``--help`` shows it."""
    text = click.unstyle(command.help or command.short_help or "").split("\b")[0]
    first = text.strip().split("\n\n")[0]
    return " ".join(first.split())


def rendered(document: str, summaries: dict[str, str]) -> str:
    """``document`` with every command's summary block current.

    Raises:
        SystemExit: A command has no heading (``## `PATH``` or deeper) on the page.
    """
    for path, text in summaries.items():
        heading = re.search(rf"^#+ `{re.escape(path)}`[^\n]*\n", document, re.MULTILINE)
        if heading is None:
            raise SystemExit(f"{DOCUMENT}: no heading for `{path}`; add one (## `{path}`)")
        block = f"<!-- help: {path} -->\n{text}\n<!-- /help -->\n"
        existing = re.compile(rf"<!-- help: {re.escape(path)} -->\n.*?<!-- /help -->\n", re.S)
        if existing.search(document):
            document = existing.sub(lambda _, block=block: block, document, count=1)
        else:
            at = heading.end()
            document = f"{document[:at]}\n{block}{document[at:]}"
    return document


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only tell whether it is current")
    args = parser.parse_args(argv)
    current = DOCUMENT.read_text()
    wanted = rendered(current, {path: summary(command) for path, command in commands()})
    if args.check:
        if wanted != current:
            print(
                f"{DOCUMENT}: command summaries differ from --help; run scripts/cli_help.py",
                file=sys.stderr,
            )
            return 1
        return 0
    if wanted != current:
        DOCUMENT.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
