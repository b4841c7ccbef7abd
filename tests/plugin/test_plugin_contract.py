"""The plugin contract checked at load: misspelled hooks and unknown arguments are reported."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from dei_framework import hookimpl, load_plugins


class MisspelledHook:
    """Means ``dei_round_ended``; pluggy alone would accept it silently."""

    @hookimpl
    def dei_round_end(self, node, round):
        raise AssertionError("never called")


class WrongArgument:
    """``dei_round_ended`` passes ``round``; ``rund`` is not offered."""

    @hookimpl
    def dei_round_ended(self, node, rund):
        raise AssertionError("never called")


class Optional:
    @hookimpl(optionalhook=True)
    def dei_some_other_plugins_hook(self):
        return None


def test_a_misspelled_hook_is_reported_with_the_nearest_name() -> None:
    registry = load_plugins([MisspelledHook()], entry_points=False)
    [problem] = registry.problems
    assert "MisspelledHook" in problem and "'dei_round_end'" in problem
    assert "did you mean 'dei_round_ended'?" in problem


def test_an_argument_outside_the_spec_is_reported_and_the_plugin_left_out() -> None:
    registry = load_plugins([WrongArgument()], entry_points=False)
    [problem] = registry.problems
    assert "WrongArgument" in problem and "'dei_round_ended'" in problem
    assert "'rund'" in problem and "did you mean 'round'?" in problem
    assert not any("WrongArgument" in name for name, _ in registry.manager.list_name_plugin())


def test_an_optional_hook_and_sound_plugins_raise_nothing() -> None:
    registry = load_plugins([Optional()], entry_points=False)
    assert registry.problems == []


def _distribution(root: Path, body: str) -> Path:
    """A site folder holding a plugin distribution ``typo-plugin`` with the given module."""
    site = root / "site"
    (site / "typo_plugin").mkdir(parents=True)
    (site / "typo_plugin" / "__init__.py").write_text(textwrap.dedent(body))
    info = site / "typo_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: typo-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[dei_framework]\ntypo = typo_plugin\n")
    return site


TYPO_PLUGIN = """
    from dei_framework import hookimpl

    @hookimpl
    def dei_round_end(event):
        pass
"""


def _env(site: Path, **extra: str) -> dict[str, str]:
    return {"PYTHONPATH": str(site), "PATH": os.environ["PATH"], **extra}


def test_dei_plugins_reports_and_dei_run_refuses_a_misspelled_hook(tmp_path, cli) -> None:
    site = _distribution(tmp_path, TYPO_PLUGIN)
    listing = cli("dei", "plugins", env=_env(site))
    assert "Traceback" not in listing.stderr
    assert "'typo-plugin:typo'" in listing.stderr
    assert "did you mean 'dei_round_ended'?" in listing.stderr
    run = cli(
        "dei-run",
        "--domain",
        "coreware",
        "--budget",
        "8",
        "--rounds",
        "1",
        "--out",
        str(tmp_path / "run"),
        env=_env(site),
        check=False,
    )
    assert run.returncode != 0 and "Traceback" not in run.stderr
    refusal = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(refusal) == 1
    assert "refusing to start with a broken plugin" in refusal[0]
    assert "dei_round_end" in refusal[0] and "dei_round_ended" in refusal[0]
    assert "DEI_DISABLE_PLUGINS" in refusal[0]
    assert not (tmp_path / "run").exists()


def test_a_disabled_plugin_is_not_loaded(tmp_path, cli) -> None:
    site = _distribution(tmp_path, TYPO_PLUGIN)
    listing = cli("dei", "plugins", env=_env(site, DEI_DISABLE_PLUGINS="typo"))
    assert "dei_round_end" not in listing.stderr and "coreware" in listing.stdout
