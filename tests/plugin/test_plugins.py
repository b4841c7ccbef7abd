"""Plugin discovery through real entry points, and what a broken plugin looks like."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from dei_framework import load_plugins


def test_installed_distribution_is_discovered_through_its_entry_point(toy_env) -> None:
    registry = load_plugins()
    assert registry.domains["toy"].plugin.startswith("dei-toy")
    assert registry.operator("toy-random").name == "toy-random"
    assert "champion" in registry.sharing and registry.sharing["champion"].plugin == "dei_framework"


def test_dei_plugins_json_lists_reference_and_third_party_plugins(toy_env, cli) -> None:
    listing = json.loads(cli("dei", "plugins", "--json", env=toy_env).stdout)
    assert set(listing) >= {"domains", "operators", "transports", "sharing"}
    names = {kind: {row["name"]: row for row in rows} for kind, rows in listing.items()}
    assert names["domains"]["toy"]["plugin"].startswith("dei-toy")
    assert {"inmemory", "axl"} <= set(names["transports"])
    assert names["operators"]["toy-random"]["offline"] is True
    for rows in listing.values():
        for row in rows:
            assert row["name"] and row["plugin"]


def _broken_distribution(root: Path) -> Path:
    """A distribution whose plugin module raises at import."""
    site = root / "site"
    (site / "broken_dei_plugin").mkdir(parents=True)
    (site / "broken_dei_plugin" / "__init__.py").write_text("raise RuntimeError('boom')\n")
    info = site / "broken_dei_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-dei-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[dei_framework]\nbroken = broken_dei_plugin\n")
    return site


def test_a_broken_plugin_is_named_and_the_others_keep_working(tmp_path, cli) -> None:
    site = _broken_distribution(tmp_path)
    code = textwrap.dedent("""
        from dei_framework import load_plugins
        registry = load_plugins()
        print(registry.problems)
        print(sorted(registry.transports))
    """)
    env = {"PYTHONPATH": str(site), "PATH": __import__("os").environ["PATH"]}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert "broken-dei-plugin" in out.stdout and "boom" in out.stdout
    assert "inmemory" in out.stdout
    result = cli("dei", "plugins", env=env)
    assert "Traceback" not in result.stderr
    assert "warning: plugin 'broken'" in result.stderr and "boom" in result.stderr
    assert "inmemory" in result.stdout


def test_a_plugin_failing_in_a_registration_hook_is_reported() -> None:
    from dei_framework import hookimpl

    class Faulty:
        @hookimpl
        def dei_domains(self):
            raise ValueError("bad domain table")

    registry = load_plugins([Faulty()], entry_points=False)
    assert any("bad domain table" in p for p in registry.problems)
    assert "champion" in registry.sharing
