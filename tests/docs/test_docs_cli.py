"""docs/cli.md documents every command and option the installed CLI offers.

The commands are walked from click itself, plugin contributions included (``dei coreware ...``,
``dei symreg ...``), so a new option without documentation fails here. A plugin's commands may
instead be documented on the plugin's own page (``dei coreware battle`` in docs/coreware.md),
under a heading naming the command, as in docs/cli.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from dei_framework.app import cli

DOCS = Path(__file__).resolve().parents[2] / "docs"
CLI_MD = DOCS / "cli.md"


def _cli_help_script():
    """``scripts/cli_help.py``, which walks the commands and writes their summaries."""
    import importlib.util

    script = Path(__file__).resolve().parents[2] / "scripts" / "cli_help.py"
    spec = importlib.util.spec_from_file_location("cli_help", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: Every command with its full invocation (``dei-run``, ``dei plugins``, ...), plugins' included.
commands = _cli_help_script().commands


def long_options(command: click.Command) -> list[str]:
    """Every long option, those plugins add (``dei_run_options``) included."""
    names = []
    for param in command.get_params(click.Context(command)):
        if isinstance(param, click.Option):
            names.extend(o for o in (*param.opts, *param.secondary_opts) if o.startswith("--"))
    return [name for name in names if name not in ("--help", "--version")]


def test_plugin_run_options_are_walked():
    assert {"--human-set", "--axl-api"} <= set(long_options(cli.dei_run))
    experiment = cli.dei.get_command(click.Context(cli.dei), "experiment")
    assert {"--human-set", "--axl-api"} <= set(long_options(experiment))


ALL = list(commands())


def test_the_walk_finds_the_plugin_commands():
    paths = [path for path, _ in ALL]
    assert {"dei-run", "dei plugins", "dei report", "dei experiment"} <= set(paths)
    assert "dei symreg score" in paths  # a third-party plugin's command


@pytest.mark.parametrize(("path", "command"), ALL, ids=[path for path, _ in ALL])
def test_command_and_options_are_documented(path, command):
    text = _page_for(path).read_text()
    section = _section(text, path)
    missing = [
        name
        for name in long_options(command)
        if not re.search(rf"`{re.escape(name)}[ `=\[]", section)
    ]
    assert not missing, f"docs/cli.md, `{path}`: undocumented options {missing}"
    for argument in (p for p in command.params if isinstance(p, click.Argument)):
        assert argument.human_readable_name.upper() in section, (
            f"docs/cli.md, `{path}`: argument {argument.human_readable_name} not described"
        )


def _page_for(path: str) -> Path:
    """docs/cli.md, or the plugin's page when it has a heading for this command."""
    parts = path.split()
    if len(parts) > 2 and parts[0] == "dei":
        page = DOCS / f"{parts[1]}.md"
        if page.exists() and re.search(rf"^#+ `{re.escape(path)}`", page.read_text(), re.M):
            return page
    return CLI_MD


def _section(text: str, path: str) -> str:
    """The text from the heading that names ``path`` to the next heading of the same level."""
    match = re.search(rf"^(#+) `{re.escape(path)}`.*$", text, re.MULTILINE)
    assert match, f"docs/cli.md (or the plugin's page) needs a heading like: ## `{path}`"
    level = len(match.group(1))
    rest = text[match.end() :]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def test_every_commands_summary_on_the_page_is_its_help_text() -> None:
    # One source: the summary under each heading is the first paragraph of --help.
    script = _cli_help_script()
    text = CLI_MD.read_text()
    for path, command in ALL:
        block = re.search(rf"<!-- help: {re.escape(path)} -->\n(.*?)\n<!-- /help -->", text, re.S)
        assert block, f"docs/cli.md, `{path}`: no summary block; run scripts/cli_help.py"
        assert block.group(1) == script.summary(command) != "", path
        help_text = " ".join(
            click.unstyle(
                command.get_help(click.Context(command, info_name=path.split()[-1]))
            ).split()
        )
        assert block.group(1) in help_text, path  # what `--help` prints, word for word
    assert script.main(["--check"]) == 0


def test_a_changed_help_text_makes_the_page_stale() -> None:
    script = _cli_help_script()
    text = CLI_MD.read_text()
    summaries = {path: script.summary(command) for path, command in ALL}
    assert script.rendered(text, summaries) == text
    changed = script.rendered(text, {**summaries, "dei report": "Something else."})
    assert changed != text and "<!-- help: dei report -->\nSomething else.\n" in changed
