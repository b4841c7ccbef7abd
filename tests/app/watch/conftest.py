"""Fixtures of the watch tests: finished toy runs and a toy experiment, made once per session."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

TOY_ARGS = [
    "--domain",
    "toy",
    "--operator",
    "toy-random",
    "--eval-workers",
    "0",
    "--progress",
    "quiet",
    "--no-report",
]


def _run(args: list[str], env: dict[str, str]) -> None:
    result = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture(scope="session")
def finished_run(toy_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 4-node toy run (4 rounds, champions shared over the in-memory transport)."""
    out = tmp_path_factory.mktemp("watch") / "run"
    _run(
        [
            "dei-run",
            *TOY_ARGS,
            "--nodes",
            "4",
            "--budget",
            "160",
            "--rounds",
            "4",
            "--seed",
            "5",
            "--out",
            str(out),
        ],
        _env(toy_site),
    )
    return out


@pytest.fixture(scope="session")
def finished_experiment(toy_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished toy experiment: solo then homo (one toy operator only), two repeats each."""
    out = tmp_path_factory.mktemp("watch") / "experiment"
    _run(
        [
            "dei",
            "experiment",
            *TOY_ARGS,
            "--conditions",
            "solo,homo",
            "--budget",
            "48",
            "--rounds",
            "2",
            "--repeats",
            "2",
            "--out",
            str(out),
        ],
        _env(toy_site),
    )
    return out


def _env(toy_site: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(toy_site), env.get("PYTHONPATH")]))
    return env
