"""Fixtures of the ``llm`` operator tests: the loopback OpenAI stub and a test key."""

from __future__ import annotations

import pytest
from openai_stub import stub  # noqa: F401 - the loopback model's fixture


@pytest.fixture(autouse=True)
def _test_key(monkeypatch):
    """A fake key for the OpenAI path; no test ever reaches a real provider."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def env(toy_env):
    """Subprocess environment: the toy plugin visible, a test key, no proxy between us and the
    loopback server, so no way to a real provider."""
    env = dict(toy_env, OPENAI_API_KEY="sk-test", LITELLM_LOCAL_MODEL_COST_MAP="True")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env.pop(name, None)
    return env
