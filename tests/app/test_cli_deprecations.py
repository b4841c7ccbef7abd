"""The command line shows a plugin author the framework's deprecation warnings
(:func:`dei_framework.app.console.show_deprecations`): Python hides them outside ``__main__``,
so without it an old plugin shape would never be reported by ``dei`` or ``dei-run``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = """
import warnings

from dei_framework import OperatorSpec, hookimpl

# Another library's deprecation: Python's default filters decide, not the command line.
warnings.warn("some other library's deprecation", DeprecationWarning)


@hookimpl
def dei_operators():
    return [OperatorSpec(name="old-op", factory=lambda settings, domain: None)]
"""

#: The one line the old-shape operator above is reported with.
EXPECTED = (
    "dei: deprecated: plugin 'old-shape-dei-plugin:old': operator 'old-op' has a factory of the "
    "old shape factory(settings, domain); write factory(ctx) (ctx.domain, ctx.node_names and "
    "the options are in the context); the old shape is adapted for one release"
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
    env.pop("PYTHONWARNINGS", None)
    path = [str(_old_shape_distribution(tmp_path)), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(entry for entry in path if entry)
    return env


def test_dei_shows_an_old_plugin_shape_once_as_one_line(old_shape_env, cli) -> None:
    result = cli("dei", "plugins", env=old_shape_env)
    assert result.returncode == 0
    assert "old-op" in result.stdout
    lines = result.stderr.splitlines()
    assert lines.count(EXPECTED) == 1, result.stderr
    assert not [line for line in lines if "deprecat" in line.lower() and line != EXPECTED]
    assert "Traceback" not in result.stderr and "warnings.warn" not in result.stderr
    assert "some other library" not in result.stderr


def test_dei_run_shows_it_too(old_shape_env, cli) -> None:
    result = cli("dei-run", "--help", env=old_shape_env)
    assert result.stderr.splitlines().count(EXPECTED) == 1, result.stderr


def test_the_users_own_warning_filters_win(old_shape_env, cli) -> None:
    result = cli("dei", "plugins", env={**old_shape_env, "PYTHONWARNINGS": "ignore"})
    assert result.returncode == 0
    assert "deprecated" not in result.stderr
    result = cli("dei", "plugins", env={**old_shape_env, "PYTHONWARNINGS": "error::UserWarning"})
    assert "deprecated" not in result.stderr  # filters of the user's own: Python's defaults


def test_importing_the_library_leaves_the_users_filters_alone() -> None:
    code = (
        "import warnings; import dei_framework.app.cli, dei_framework.app.console; "
        "print([f for f in warnings.filters if f[2] is DeprecationWarning and f[3] is None"
        " and f[0] != 'ignore'], warnings.showwarning.__module__)"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONWARNINGS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["[]", "warnings"], out.stderr
