"""Smoke test against real hosted providers; runs only when asked to (it costs a few tokens).

Set ``DEI_LIVE_TESTS=1`` and a real key (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``,
``GEMINI_API_KEY`` or ``OPENROUTER_API_KEY``). ``DEI_LIVE_MODEL_<PROVIDER>`` overrides the
model tried for that provider.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from dei_llm.operator import LLMOperator, LLMOptions

from dei_framework.contract.operators import OperatorRequest

CANDIDATES = {
    "openai": ("OPENAI_API_KEY", "openai/gpt-4.1-mini"),
    "anthropic": ("ANTHROPIC_API_KEY", "anthropic/claude-haiku-4-5"),
    "gemini": ("GEMINI_API_KEY", "gemini/gemini-2.5-flash"),
    "openrouter": ("OPENROUTER_API_KEY", "openrouter/openai/gpt-4.1-mini"),
}

# conftest.py sets OPENAI_API_KEY=sk-test for every test: remember the real one first.
_REAL_KEYS = {env: os.environ.get(env, "") for env, _ in CANDIDATES.values()}


@pytest.mark.parametrize("provider", sorted(CANDIDATES))
def test_live_provider_answers(provider, monkeypatch):
    env, default_model = CANDIDATES[provider]
    key = _REAL_KEYS[env]
    if os.environ.get("DEI_LIVE_TESTS") != "1":
        pytest.skip("live provider tests are off; set DEI_LIVE_TESTS=1 and a real API key")
    if not key or key == "sk-test":
        pytest.skip(f"{env} is not set to a real key")
    monkeypatch.setenv(env, key)
    model = os.environ.get(f"DEI_LIVE_MODEL_{provider.upper()}", default_model)
    op = LLMOperator(model, LLMOptions(max_tokens=200, timeout=60, max_retries=2))
    request = OperatorRequest(
        key="live/0/0",
        kind="new",
        messages=[
            {"role": "system", "content": "You write Redcode warriors for Core War (ICWS-94)."},
            {"role": "user", "content": "Write the Imp in one line inside a ```redcode fence."},
        ],
    )
    reply = asyncio.run(op.propose(request))
    assert "MOV" in reply.text.upper()
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0
    assert reply.cost_usd >= 0.0
