"""One configuration resolver: the config keys, ``dei-run``'s flags and the docs tables all come
from ``RunConfig``'s field metadata (:mod:`dei_framework.runtime.config.settings`), and these tests
fail, naming what drifted, when a flag, a key or a docs row no longer matches it."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from dei_framework.app import cli
from dei_framework.app.cli_experiment import plan_from_flags
from dei_framework.contract.errors import ConfigError
from dei_framework.plugin.manager import load_plugins
from dei_framework.runtime.config.resolve import Sources, resolve_config, with_option_flags
from dei_framework.runtime.config.run_config import CONFIG_KEYS, DEFAULTS, SETTINGS, RunConfig
from dei_framework.runtime.config.settings import CONFIG_TABLES, FLAG_ONLY, SECTIONS, of_fields

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _flags_of(params) -> dict[str, click.Option]:
    """Every long flag spelling of ``params``, to its option."""
    return {
        opt: param
        for param in params
        if isinstance(param, click.Option)
        for opt in (*param.opts, *param.secondary_opts)
        if opt.startswith("--") and opt != "--help"
    }


def _setting_flags() -> dict[str, str]:
    """Every flag spelling of a setting, to the setting's key."""
    return {flag: item.key for item in SETTINGS.values() for flag in item.flags}


@pytest.fixture(scope="module")
def plugins():
    return load_plugins()


def test_the_config_keys_are_the_settings_and_the_tables() -> None:
    derived = CONFIG_TABLES | {key for item in SETTINGS.values() for key in item.keys}
    assert CONFIG_KEYS == derived
    # The set as it was typed by hand before it was derived: no key was lost or added.
    assert CONFIG_KEYS == CONFIG_TABLES | {
        "domain",
        "transport",
        "nodes",
        "operator",
        "operators",
        "api_base",
        "budget",
        "iterations",
        "rounds",
        "sharing",
        "axes",
        "seed",
        "eval_workers",
        "new_fraction",
        "lag",
        "max_champions",
        "max_peer_champions",
        "checkpoint_seconds",
        "out",
        "selector",
        "archive",
        "compute_axis",
        "max_cost_usd",
        "max_attempts_per_node",
        "max_attempts_per_call",
        "common_ground",
        "common_seeds",
        "preset",
        "members",
        "delivery",
        "lifecycle",
        "evaluator",
        "evaluator_address",
        "array_path",
        "sandbox",
        "eval_timeout",
        "eval_memory",
        "eval_file_size",
        "eval_processes",
        "allocation",
    }
    fields = {item.key for item in of_fields(RunConfig)}
    tables = {name for name in fields | set(RunConfig.__annotations__) if name in CONFIG_TABLES}
    assert set(RunConfig.__annotations__) - fields - tables == set(), "a field is no setting"


def test_every_setting_is_a_dei_run_flag_and_every_flag_a_setting_or_said_why() -> None:
    core = _flags_of(cli.dei_run.params)
    settings = _setting_flags()
    no_flag = sorted(set(settings) - set(core))
    no_setting = sorted(set(core) - set(settings) - set(FLAG_ONLY))
    stale = sorted(set(FLAG_ONLY) - set(core))
    assert (no_flag, no_setting, stale) == ([], [], []), (
        f"settings without a dei-run flag: {no_flag}; dei-run flags that are neither a setting "
        f"nor in settings.FLAG_ONLY: {no_setting}; FLAG_ONLY flags dei-run lacks: {stale}"
    )
    for flag, key in settings.items():
        option = core[flag]
        assert (option.name, option.help) == (key, SETTINGS[key].help), flag


def test_dei_experiment_takes_every_setting_and_hides_only_what_it_refuses(plugins) -> None:
    experiment = cli.dei.get_command(click.Context(cli.dei), "experiment")
    flags = _flags_of(experiment.params)
    assert set(_setting_flags()) <= set(flags)
    hidden = sorted(flag for flag, option in flags.items() if option.hidden)
    assert hidden == ["--reask-mismatched", "--replay"]
    help_text = CliRunner().invoke(cli.dei, ["experiment", "--help"], terminal_width=200).output
    for flag in hidden:
        assert flag not in help_text
        refused = {"domain": "numeric", flags[flag].name: True}
        with pytest.raises(ConfigError, match="^dei experiment does not replay; replay single"):
            plan_from_flags(refused, plugins)


def _section(text: str, heading: str) -> str:
    match = re.search(rf"^(#+) {re.escape(heading)}\s*$", text, re.MULTILINE)
    assert match, f"no heading {heading!r}"
    rest = text[match.end() :]
    end = re.search(rf"^#{{1,{len(match.group(1))}}} ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def _rows(text: str) -> list[list[str]]:
    """The body rows of every Markdown table in ``text``, as cells."""
    rows = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and not set("".join(cells)) <= set("-: "):
            rows.append(cells)
    return [row for row in rows if row[0] not in ("option", "key")]


def _groups(section: str) -> dict[str, str]:
    """docs/cli.md's ``dei-run`` tables: every flag in a row's first cell, to its group."""
    found = {}
    for group, body in re.findall(r"^\*\*(.+?)\*\*.*?\n(.*?)(?=^\*\*|\Z)", section, re.M | re.S):
        for row in _rows(body):
            for flag in re.findall(r"`(--[a-z-]+)", row[0]):
                found[flag] = group
    return found


def test_cli_md_lists_every_dei_run_flag_in_its_settings_group(plugins) -> None:
    documented = _groups(_section((DOCS / "cli.md").read_text(), "`dei-run`"))
    expected = {flag: SETTINGS[key].section for flag, key in _setting_flags().items()}
    misplaced = {
        flag: (documented.get(flag), group)
        for flag, group in expected.items()
        if documented.get(flag) != group
    }
    assert not misplaced, (
        f"docs/cli.md, dei-run: flag -> (its group there, its setting's) {misplaced}"
    )
    assert set(documented.values()) <= set(SECTIONS)
    plugin_flags = set(_flags_of(entry.spec.option for entry in plugins.run_options.values()))
    unknown = sorted(set(documented) - set(expected) - set(FLAG_ONLY) - plugin_flags)
    missing = sorted(set(FLAG_ONLY) - set(documented))
    assert (unknown, missing) == ([], []), (
        f"docs/cli.md, dei-run: rows for no flag {unknown}; flag-only flags without a row {missing}"
    )


def test_cli_md_says_which_flags_are_no_config_key() -> None:
    section = _section((DOCS / "cli.md").read_text(), "`dei-run`")
    paragraph = re.search(r"\*\*Flags and config keys\.\*\*(.*?)\n\n", section, re.S)
    assert paragraph, "docs/cli.md, dei-run: no **Flags and config keys.** paragraph"
    listed = set(re.findall(r"`(--[a-z-]+)`", paragraph.group(1).partition("except")[2]))
    assert listed == set(FLAG_ONLY), (
        f"docs/cli.md lists as flag-only {sorted(listed - set(FLAG_ONLY))} that are not, and "
        f"leaves out {sorted(set(FLAG_ONLY) - listed)}"
    )


def _shown(value: object) -> str:
    """A default as docs/configuration.md writes it."""
    if isinstance(value, bool):
        return str(value).lower()
    return f'`"{value}"`' if isinstance(value, str) else str(value)


def test_configuration_md_lists_every_key_with_its_flag_and_default(plugins) -> None:
    text = (DOCS / "configuration.md").read_text()
    rows = {}
    for row in _rows(_section(text, "Top-level keys")):
        for key in re.findall(r"`([a-z_]+)`", row[0]):
            rows[key] = row
    plugin_keys = set(plugins.run_options)
    expected = CONFIG_KEYS - CONFIG_TABLES
    missing, unknown = sorted(expected - set(rows)), sorted(set(rows) - expected - plugin_keys)
    assert (missing, unknown) == ([], []), (
        f"docs/configuration.md, top-level keys: missing {missing}; not config keys {unknown}"
    )
    for key in expected:
        setting = next(item for item in SETTINGS.values() if key in item.keys)
        meaning = " ".join(rows[key][1:])
        assert all(f"`{flag}" in meaning for flag in setting.flags), (
            f"docs/configuration.md, `{key}`: its flag {setting.flag} is not named"
        )
        if setting.key in DEFAULTS:
            assert rows[key][2] == _shown(DEFAULTS[setting.key]), (
                f"docs/configuration.md, `{key}`: default {rows[key][2]}, RunConfig's "
                f"{_shown(DEFAULTS[setting.key])}"
            )
    paragraph = re.search(r"\*\*Keys with no flag\.\*\*(.*?)\n\n", text, re.S)
    assert paragraph, "docs/configuration.md: no **Keys with no flag.** paragraph"
    tables = set(re.findall(r"`\[\[?([a-z_]+)\]\]?`", paragraph.group(1).partition("have no")[0]))
    assert tables == set(CONFIG_TABLES), f"tables listed: {sorted(tables)}"


# --- the one order of precedence ---------------------------------------------------------------


def test_flags_win_over_the_file_which_wins_over_the_preset_and_the_defaults(tmp_path) -> None:
    path = tmp_path / "run.toml"
    path.write_text('preset = "dei-paper"\nrounds = 7\nmax-champions = 3\n')
    sources = Sources.read({"config_file": str(path), "rounds": 9, "seed": None})
    assert sources.pick("rounds") == 9  # the flag
    assert sources.pick("max_champions") == 3  # the file (dashes read as underscores)
    assert sources.pick("nodes") == 4  # the preset
    assert sources.pick("seed") == 0 == DEFAULTS["seed"]  # the default
    assert sources.mine("nodes") is None  # neither the flags nor the file
    assert "conditions" not in sources.protocol
    assert Sources.read({"preset": "dei-paper"}, experiment=True).pick("conditions") == (
        "solo,homo,diverse"
    )


def test_an_unknown_key_is_refused_only_where_keys_are_known(tmp_path) -> None:
    path = tmp_path / "run.toml"
    path.write_text("no_such_key = 1\n")
    assert Sources.read({"config_file": str(path)}).file == {"no_such_key": 1}
    with pytest.raises(ConfigError, match=r"config file: unknown keys \['no_such_key'\]"):
        Sources.read({"config_file": str(path)}, known=CONFIG_KEYS)


FULL = """domain = "numeric"
delivery = "virtual"
nodes = 3
operators = ["gaussian", "iso-line"]
budget = 30
rounds = 2
lifecycle = "continual"
sharing = "top-k"
selector = "tournament"
seed = 5
eval_workers = 0
sandbox = "none"
new-fraction = 0.2
lag = 2
max_champions = 7
max_peer_champions = 9
checkpoint_seconds = 0.5
array_path = false
common_ground = true
common_seeds = 3
max_attempts_per_node = 50
max_attempts_per_call = 2
[domain_options]
dims = 2
[sharing_options]
k = 2
[selector_options]
size = 2
[operator_options]
concurrency = 2
"""


def test_a_file_setting_every_kind_of_key_resolves_as_it_always_did(tmp_path, plugins) -> None:
    # The values resolve_config gave this file before the resolver was derived from RunConfig.
    path = tmp_path / "run.toml"
    path.write_text(FULL)
    config = resolve_config(
        {"config_file": str(path), "seed": 6, "domain_option": ("dims=3",)}, plugins
    )
    data = config.to_json()
    assert [(n["name"], n["operator"], n["options"]) for n in data.pop("nodes")] == [
        ("node-0", "gaussian", {"concurrency": 2}),
        ("node-1", "iso-line", {"concurrency": 2}),
        ("node-2", "gaussian", {"concurrency": 2}),
    ]
    assert data == {
        "domain": "numeric",
        "transport": "inmemory",
        "rounds": 2,
        "budget": 30,
        "iterations": None,
        "seed": 6,
        "sharing": "top-k",
        "sharing_options": {"k": 2},
        "axes": (),
        "selector": "tournament",
        "selector_options": {"size": 2},
        "archive": "grid",
        "archive_options": {},
        "new_fraction": 0.2,
        "lifecycle": "continual",
        "lag": 2,
        "max_champions": 7,
        "max_peer_champions": 9,
        "eval_workers": 0,
        "evaluator": "local",
        "evaluator_address": None,
        "evaluator_options": {},
        "sandbox": "none",
        "eval_timeout": None,
        "eval_memory": None,
        "eval_file_size": None,
        "eval_processes": None,
        "domain_options": {"dims": 3},
        "transport_options": {},
        "delivery": "virtual",
        "checkpoint_seconds": 0.5,
        "array_path": False,
        "common_ground": True,
        "common_seeds": 3,
        "members": (),
        "compute_axis": "calls",
        "max_cost_usd": None,
        "max_attempts_per_node": 50,
        "max_attempts_per_call": 2,
    }


def test_dei_experiment_takes_the_node_count_from_the_file_too(tmp_path, plugins) -> None:
    path = tmp_path / "run.toml"
    path.write_text(
        'domain = "numeric"\nnodes = 2\nbudget = 48\noperators = ["gaussian", "iso-line"]\n'
    )
    plan = plan_from_flags({"config_file": str(path)}, plugins)
    assert {c.name: c.nodes for c in plan.conditions} == {
        "solo": 1,
        "homo:gaussian": 2,
        "homo:iso-line": 2,
        "diverse": 2,
    }
    flagged = plan_from_flags({"config_file": str(path), "nodes": 4}, plugins)
    assert {c.name: c.nodes for c in flagged.conditions}["diverse"] == 4  # the flag wins


def test_dei_node_puts_its_flags_over_the_configuration(plugins) -> None:
    config = resolve_config(
        {"domain": "numeric", "transport_option": ("loss=0.1",), "domain_option": ("dims=2",)},
        plugins,
    )
    over = with_option_flags(config, {"transport_option": ("loss=0.5", "latency=2")}, plugins)
    assert over.transport_options == {"loss": 0.5, "latency": 2}
    assert over.domain_options == {"dims": 2}
    assert with_option_flags(config, {}, plugins) == config
