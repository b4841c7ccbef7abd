"""Shared fixtures: the toy plugin distribution, installed for real so entry points find it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# litellm fetches its price map from GitHub when first imported unless told not to; the LLM
# operator sets this before its import, but a test may import litellm first (nothing here may
# reach the network).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[1]
TOY_SOURCE = REPO / "tests" / "toy"
SEARCHPLUG_SOURCE = REPO / "tests" / "searchplug"
NAIVE_SOURCE = REPO / "tests" / "naive"


def _pip_install(source: Path, factory: pytest.TempPathFactory) -> Path:
    """Installs a distribution into a fresh folder (pip install --target); returns it.

    pip builds a local project in its own tree (setuptools writes `build/` and `*.egg-info`
    there), so two xdist workers installing the same checkout at once race on those folders:
    each worker builds from a private copy. No build isolation: the build backend is the
    setuptools the test extras install, so nothing is fetched from an index mid-run.
    """
    target = factory.mktemp(f"{source.name}-site")
    build = factory.mktemp(f"{source.name}-build")
    copy = build / source.name
    shutil.copytree(
        source, copy, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(copy),
        ],
        check=True,
        cwd=build,
    )
    return target


@pytest.fixture(scope="session")
def toy_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where the `dei-toy` distribution is installed (pip install --target)."""
    return _pip_install(TOY_SOURCE, tmp_path_factory)


@pytest.fixture(scope="session")
def naive_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where the `dei-naive` distribution is installed (its `evaluate` execs the
    model's Python code: the sandbox tests' domain)."""
    return _pip_install(NAIVE_SOURCE, tmp_path_factory)


@pytest.fixture(scope="session")
def searchplug_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where the `dei-searchplug` distribution is installed."""
    return _pip_install(SEARCHPLUG_SOURCE, tmp_path_factory)


@pytest.fixture
def searchplug_env(
    toy_env: dict[str, str], searchplug_site: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """Like `toy_env`, plus the `dei-searchplug` distribution (selector, archive, sharing)."""
    site = searchplug_site
    monkeypatch.syspath_prepend(str(site))
    return {**toy_env, "PYTHONPATH": os.pathsep.join([str(site), toy_env["PYTHONPATH"]])}


@pytest.fixture
def toy_env(toy_site: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment for subprocesses (and sys.path for this one) that sees the toy plugin."""
    monkeypatch.syspath_prepend(str(toy_site))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(toy_site), env.get("PYTHONPATH")]))
    return env


def run_console(
    script: str,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    check: bool = True,
) -> subprocess.CompletedProcess:
    """Runs one of the project's real console scripts (`dei-run`, `dei`)."""
    result = subprocess.run(
        [script, *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{script} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result


@pytest.fixture
def cli():
    """The console-script runner (`cli("dei-run", "--domain", ...)`)."""
    return run_console
