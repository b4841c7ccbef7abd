"""An installed plugin whose factory has a shape no longer accepted stops every command with
one line saying what to write instead, exit status 1 and no traceback (the shapes before 0.2
were adapted with a deprecation warning, six lines of it per command)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PLUGIN = """
from dei_framework import OperatorSpec, hookimpl


def create(name, options):
    return None


@hookimpl
def dei_operators():
    return [OperatorSpec(name="old-op", factory=create)]
"""

#: The one line the old-shape operator above is refused with.
EXPECTED = (
    "error: plugin 'old-shape-dei-plugin:old': operator 'old-op': factory create(name, "
    "options) takes the old shape; write create(settings) and read settings.domain "
    "(see docs/writing-an-operator.md)"
)


def _old_shape_distribution(root: Path) -> Path:
    """An installed distribution whose operator factory has the shape before 0.2."""
    site = root / "site"
    (site / "old_shape_dei_plugin").mkdir(parents=True)
    (site / "old_shape_dei_plugin" / "__init__.py").write_text(PLUGIN)
    info = site / "old_shape_dei_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: old-shape-dei-plugin\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text("[dei_framework]\nold = old_shape_dei_plugin\n")
    return site


@pytest.fixture
def old_shape_env(tmp_path) -> dict[str, str]:
    env = dict(os.environ)
    path = [str(_old_shape_distribution(tmp_path)), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(entry for entry in path if entry)
    return env


@pytest.mark.parametrize(
    "command",
    [
        ("dei", "plugins"),
        ("dei", "--help"),
        ("dei-run", "--help"),
        ("dei-run", "--domain", "toy", "--operator", "old-op", "--budget", "4"),
    ],
)
def test_an_old_shape_plugin_stops_the_command_in_one_line(old_shape_env, cli, command) -> None:
    result = cli(*command, env=old_shape_env, check=False)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [EXPECTED]
    assert result.stdout == ""


def test_left_out_the_plugin_stops_nothing(old_shape_env, cli) -> None:
    env = {**old_shape_env, "DEI_DISABLE_PLUGINS": "old-shape-dei-plugin"}
    result = cli("dei", "plugins", env=env)
    assert result.returncode == 0, result.stderr
    assert "old-op" not in result.stdout and "uniform" in result.stdout
