"""Plugins add options to dei-run and dei experiment (``dei_run_options``)."""

from __future__ import annotations

import click
import pytest
import toy_domain
from click.testing import CliRunner

from dei_framework import hookimpl, load_plugins
from dei_framework.app import cli
from dei_framework.contract.cli_options import RunOption
from dei_framework.contract.errors import ConfigError
from dei_framework.runtime.config.resolve import resolve_config


class ToyOptions:
    @hookimpl
    def dei_run_options(self):
        return [
            RunOption(
                option=click.Option(["--toy-width"], type=int, help="Toy width."),
                target="domain_options",
                convert=lambda value: value * 2,
            ),
            RunOption(
                option=click.Option(["--seed"], help="Clashes with the core."),
                target="domain_options",
            ),
        ]


def test_reference_plugins_contribute_human_set_and_axl_api(tmp_path) -> None:
    registry = load_plugins()
    assert registry.run_options["human_set"].plugin.endswith("coreware")
    assert registry.run_options["axl_api"].plugin.endswith("transports")
    config_file = tmp_path / "run.toml"
    config_file.write_text('axl_api = "http://127.0.0.1:9100"\n')
    config = resolve_config(
        {"domain": "coreware", "human_set": str(tmp_path), "config_file": str(config_file)},
        registry,
    )
    assert config.domain_options["human_set"] == str(tmp_path.resolve())
    assert config.transport_options["axl_api"] == "http://127.0.0.1:9100"
    flagged = resolve_config(
        {
            "domain": "coreware",
            "axl_api": "http://127.0.0.1:9200",
            "transport_option": ("axl_api=http://127.0.0.1:9300",),
            "config_file": str(config_file),
        },
        registry,
    )
    assert flagged.transport_options["axl_api"] == "http://127.0.0.1:9300"


def test_an_in_process_plugin_option_works_on_both_commands(monkeypatch, tmp_path) -> None:
    registry = load_plugins([toy_domain, ToyOptions()])
    monkeypatch.setattr(cli, "registry", lambda: registry)
    runner = CliRunner()
    for args in (["--help"], ["experiment", "--help"]):
        command = cli.dei_run if args == ["--help"] else cli.dei
        result = runner.invoke(command, args)
        assert result.exit_code == 0 and "--toy-width" in result.output
    assert "already has (--seed, seed); ignored" in result.output + (result.stderr or "")
    config = resolve_config({"domain": "toy", "toy_width": 3, "seed": 9}, registry)
    assert config.domain_options == {"toy_width": 6} and config.seed == 9
    with pytest.raises(ConfigError, match="unknown keys"):
        (tmp_path / "bad.toml").write_text("no_such_key = 1\n")
        resolve_config({"domain": "toy", "config_file": str(tmp_path / "bad.toml")}, registry)
    (tmp_path / "ok.toml").write_text("toy_width = 5\n")
    from_file = resolve_config(
        {"domain": "toy", "config_file": str(tmp_path / "ok.toml")}, registry
    )
    assert from_file.domain_options == {"toy_width": 10}


def test_every_config_key_but_the_tables_is_a_dei_run_flag() -> None:
    from dei_framework.runtime.config.run_config import CONFIG_KEYS
    from dei_framework.runtime.config.settings import CONFIG_TABLES

    flags = {opt for param in cli.dei_run.params for opt in getattr(param, "opts", ())}
    spelled = {
        "operators": "--operator",
        "operator": "--operator",
        "members": "--member",
        "common_ground": "--common-ground",
        "array_path": "--array-path",
    }
    missing = sorted(
        key
        for key in CONFIG_KEYS - CONFIG_TABLES
        if spelled.get(key, "--" + key.replace("_", "-")) not in flags
    )
    assert missing == [], f"config keys without a dei-run flag: {missing}"


@pytest.mark.parametrize(
    ("flags", "field", "value"),
    [
        ({"lag": 3}, "lag", 3),
        ({"max_champions": 5}, "max_champions", 5),
        ({"max_peer_champions": 0}, "max_peer_champions", 0),
        ({"checkpoint_seconds": 0.5}, "checkpoint_seconds", 0.5),
    ],
)
def test_the_search_settings_once_file_only_take_flags(flags, field, value) -> None:
    config = resolve_config({"domain": "numeric", **flags}, load_plugins())
    assert getattr(config, field) == value


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"lag": -1}, "--lag must be at least 0, got -1"),
        ({"max_champions": -2}, "--max-champions must be at least 0, got -2"),
        ({"checkpoint_seconds": -1.0}, "--checkpoint-seconds must be a number of seconds"),
        ({"members": ("a=zz",)}, "members: "),
    ],
)
def test_a_bad_search_setting_is_refused_by_name(flags, message) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_config({"domain": "numeric", **flags}, load_plugins())
