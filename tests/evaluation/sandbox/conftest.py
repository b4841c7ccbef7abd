"""Fixtures of the sandbox tests: the naive program domain installed for real (`dei-naive`,
whose `evaluate` execs the model's code), and the loopback OpenAI-compatible model."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from openai_stub import stub  # noqa: F401 - the loopback model's fixture


@pytest.fixture
def naive_env(naive_site: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment for `dei-run` (and sys.path for this process) that sees the naive domain,
    with a test key and no proxy between us and the loopback model."""
    monkeypatch.syspath_prepend(str(naive_site))
    env = dict(os.environ, OPENAI_API_KEY="sk-test", LITELLM_LOCAL_MODEL_COST_MAP="True")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(naive_site), env.get("PYTHONPATH")]))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env.pop(name, None)
    return env


@pytest.fixture
def bubblewrap() -> str:
    """The `bwrap` binary (`.ci/run` installs Debian's `bubblewrap`)."""
    found = shutil.which("bwrap")
    if found is None:
        pytest.skip("bubblewrap is not installed (apt install bubblewrap); .ci/run installs it")
    return found
