"""What a newcomer meets on the command line: help text, listings, failed runs, progress."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import click
import pytest
from midway import kill_midway

from dei_framework.app.cli import dei, dei_run
from dei_framework.contract.descriptors import DescriptorSpace, ThresholdAxis
from dei_framework.contract.errors import ConfigError, PluginError
from dei_framework.runtime.config.resolve import chosen_out


def _all_commands(command: click.Command, path: tuple[str, ...] = ()):
    yield path, command
    if isinstance(command, click.Group):
        context = click.Context(command)
        for name in command.list_commands(context):
            yield from _all_commands(command.get_command(context, name), (*path, name))


def test_no_help_text_shows_raw_markup() -> None:
    commands = [(("dei-run",), dei_run), *_all_commands(dei, ("dei",))]
    assert any(path[-1] == "coreware" for path, _ in commands)
    for path, command in commands:
        text = command.get_help(click.Context(command, info_name=" ".join(path)))
        assert "``" not in text and ":data:" not in text, " ".join(path)
        if isinstance(command, click.Group):
            short = [sub.get_short_help_str() for sub in command.commands.values()]
            assert not any("``" in line for line in short), " ".join(path)


def test_plugins_lists_the_core_war_axes_and_says_how_the_llm_operator_is_used(cli) -> None:
    listing = json.loads(cli("dei", "plugins", "--json").stdout)
    axes = {row["name"]: row for row in listing["axes"]}
    assert {"tsp", "mc", "opcodes", "length"} <= set(axes)
    assert all(axes[name]["domain"] == "coreware" for name in ("tsp", "mc", "opcodes", "length"))
    text = cli("dei", "plugins").stdout
    section = text[text.index("axes:") :]
    for name in ("tsp", "mc", "opcodes", "length"):
        assert re.search(rf"^  {name}\s", section, re.MULTILINE), section
    # `llm` is no operator name to pass as is: its line says how to name a model instead.
    llm = re.search(r"^  llm\s.*$", text, re.MULTILINE)
    assert llm and "--operator provider/model" in llm.group(0), text


def test_a_run_that_fails_to_start_leaves_no_directory(toy_env, tmp_path) -> None:
    args = [
        "dei-run",
        "--domain",
        "toy",
        "--operator",
        "toy-random",
        "--axes",
        "length,nope",
        "--progress",
        "quiet",
    ]
    result = subprocess.run(args, cwd=tmp_path, env=toy_env, capture_output=True, text=True)
    assert result.returncode == 1 and "no descriptor axis nope" in result.stderr
    assert list((tmp_path / "runs").glob("*")) == []
    out = tmp_path / "named"
    result = subprocess.run([*args, "--out", str(out)], env=toy_env, capture_output=True, text=True)
    assert result.returncode == 1 and not out.exists()
    kept = tmp_path / "mine"
    kept.mkdir()
    (kept / "notes.txt").write_text("not ours to delete")
    subprocess.run([*args, "--out", str(kept)], env=toy_env, capture_output=True)
    assert [p.name for p in kept.iterdir()] == ["notes.txt"]


def test_progress_after_resume_counts_from_the_resumed_totals(toy_env, cli, tmp_path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        'domain = "toy"\nnodes = 2\nbudget = 200\nrounds = 4\nseed = 3\nsharing = "none"\n'
        "checkpoint_seconds = 0.05\neval_workers = 0\n[operator_options]\ndelay = 0.02\n"
    )
    out = tmp_path / "run"
    kill_midway(
        [
            "--config",
            str(config),
            "--operator",
            "toy-random",
            "--out",
            str(out),
            "--progress",
            "quiet",
            "--no-report",
        ],
        out,
        toy_env,
        min_events=70,
    )
    result = cli("dei-run", "--resume", str(out), "--progress", "lines", "--no-report", env=toy_env)
    lines = re.findall(r"\[(node-\d)\] round (\d) of 4 done: .*calls (\d+)/100", result.stderr)
    assert lines, result.stderr
    assert any(int(r) > 0 for _, r, _ in lines), "nothing was left to resume"
    for _, round_index, calls in lines:
        # 25 calls per round: the count goes on from what was done before the kill.
        assert int(calls) == 25 * (int(round_index) + 1)


def test_a_descriptor_given_as_a_tuple_is_a_clear_error() -> None:
    space = DescriptorSpace((ThresholdAxis("tsp", (1, 2)), ThresholdAxis("mc", (0.5,))))
    with pytest.raises(PluginError, match=r"must map axis names to values.*got tuple \(3, 0\.4\)"):
        space.cell((3, 0.4))


def test_the_config_files_out_key_is_the_run_directory(toy_env, tmp_path) -> None:
    config = tmp_path / "run.toml"
    config.write_text('domain = "toy"\noperators = ["toy-random"]\nout = "from-config"\n')
    args = [
        "dei-run",
        "--config",
        str(config),
        "--budget",
        "4",
        "--rounds",
        "1",
        "--eval-workers",
        "0",
        "--progress",
        "quiet",
        "--no-report",
    ]
    result = subprocess.run(args, cwd=tmp_path, env=toy_env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "from-config" / "summary.json").is_file()
    assert "summary: from-config/summary.json" in result.stdout
    assert not (tmp_path / "runs").exists()
    # --out wins over the file; a value that is no path is refused in one line.
    assert chosen_out({"config_file": str(config), "out": "flag"}) == Path("flag")
    assert chosen_out({"config_file": str(config)}) == Path("from-config")
    assert chosen_out({}) is None
    config.write_text('domain = "toy"\nout = 3\n')
    refused = r"run\.toml: out must be a directory path \(a string\), not 3$"
    with pytest.raises(ConfigError, match=refused):
        chosen_out({"config_file": str(config)})


def test_experiment_help_is_in_its_own_words_and_omits_what_it_refuses(tmp_path) -> None:
    from click.testing import CliRunner

    runner = CliRunner()
    experiment = runner.invoke(dei, ["experiment", "--help"], terminal_width=200)
    assert experiment.exit_code == 0, experiment.output
    text = experiment.output
    assert "--replay" not in text and "--reask-mismatched" not in text
    assert "a new folder under ./experiments/" in text and "./runs/" not in text
    assert "Continue the experiment in this directory" in text
    assert "With --compute-axis tokens only" in text  # --iterations: refused on other axes
    run = runner.invoke(dei_run, ["--help"], terminal_width=200).output
    assert "--replay" in run and "a new folder under ./runs/" in run  # dei-run's are untouched
    # Still parsed, so that the refusal can say what to do instead.
    refused = runner.invoke(
        dei, ["experiment", "--domain", "coreware", "--operator", "gp", "--replay", str(tmp_path)]
    )
    assert refused.exit_code == 1
    assert "dei experiment does not replay; replay single runs with dei-run --replay" in (
        refused.output + (refused.stderr or "")
    )


def test_the_default_output_folders_are_ignored_by_git() -> None:
    # A fresh clone's first `dei-run` or `dei experiment` must not leave untracked files.
    import shutil

    repo = Path(__file__).resolve().parents[2]
    if shutil.which("git") is None or not (repo / ".git").exists():
        pytest.skip("not a git checkout")
    from dei_framework.app.cli import default_out

    run = default_out("coreware")  # what the commands pick without --out
    experiment = Path("experiments") / run.name
    paths = [str(run / "config.json"), str(experiment / "experiment.json")]
    checked = subprocess.run(
        ["git", "check-ignore", "--no-index", *paths], cwd=repo, capture_output=True, text=True
    )
    assert checked.stdout.split() == paths, checked


def test_the_axl_api_help_names_no_default_that_dei_run_does_not_use() -> None:
    # dei-run --transport axl without --axl-api starts AXL nodes of its own: 9002 is not used.
    from click.testing import CliRunner

    text = CliRunner().invoke(dei_run, ["--help"], terminal_width=200).output
    entry = re.search(r"^  --axl-api (.*?)(?=^  -)", text, re.M | re.S)
    assert entry, text
    line = " ".join(entry[1].split())
    assert "9002" not in line and "starts a loopback AXL node for every node" in line, line


def test_dei_plugins_help_and_cli_md_name_every_kind_the_listing_has() -> None:
    from click.testing import CliRunner

    from dei_framework import load_plugins

    kinds = list(load_plugins().listing())
    text = " ".join(CliRunner().invoke(dei, ["plugins", "--help"]).output.split())
    words = {
        "domains": "domains",
        "operators": "operators",
        "transports": "transports",
        "sharing": "sharing policies",
        "axes": "descriptor axes",
        "selectors": "selectors",
        "archives": "archives",
        "evaluators": "evaluators",
        "allocators": "budget allocators",
    }
    assert set(kinds) == set(words), kinds  # a new kind needs its words here and in the help
    missing = [kind for kind in kinds if words[kind] not in text]
    assert not missing, text
    cli_md = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    json_line = next(line for line in cli_md.splitlines() if line.startswith("| `--json` |"))
    assert [kind for kind in kinds if f'"{kind}": [...]' not in json_line] == []
