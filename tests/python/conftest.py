"""Fixtures of the python domain's tests: an OpenEvolve task folder (openevolve_task.py) and
the loopback OpenAI-compatible model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from openai_stub import OpenAIStub
from openevolve_task import write_task


@pytest.fixture
def task(tmp_path: Path) -> Path:
    """The task folder."""
    return write_task(tmp_path / "guess_task")


@pytest.fixture
def stub():
    """A scripted OpenAI-compatible server on 127.0.0.1."""
    server = OpenAIStub().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def llm_env() -> dict[str, str]:
    """Environment for `dei-run` against the loopback model: a test key, no proxy."""
    env = dict(os.environ, OPENAI_API_KEY="sk-test", LITELLM_LOCAL_MODEL_COST_MAP="True")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env.pop(name, None)
    return env
