"""The checks made before litellm is imported: each names the cause in one line, and none
blocks a server that would answer (see ``dei_llm.preflight``)."""

from __future__ import annotations

import dei_llm.preflight as preflight_module
import pytest
from dei_llm.preflight import preflight


def _check(model: str, api_base: str | None = None, api_key: str | None = None) -> str | None:
    return preflight(model, api_base=api_base, api_key=api_key, api_key_env=None)


def test_a_missing_key_names_the_providers_variable(monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert _check("anthropic/claude-haiku-4-5") == (
        "no API key: set ANTHROPIC_API_KEY (or the api_key_env option)"
    )
    # A key given as an option is a key; a provider outside the table is left to litellm.
    assert _check("anthropic/claude-haiku-4-5", api_key="sk-ant-test") is None
    assert _check("someprovider/some-model") is None


def test_a_loopback_openai_server_needs_no_key(monkeypatch, stub) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    assert _check("openai/gpt-4o-mini") is not None
    # The operator sends local servers a placeholder key: nothing is missing.
    assert _check("openai/stub-model", api_base=stub.base_url) is None


def test_nothing_listening_is_a_refused_connection() -> None:
    cause = _check("openai/stub-model", api_base="http://127.0.0.1:9/v1")
    assert cause is not None
    assert cause.startswith("connection refused (is the server running? check --api-base): ")
    assert "127.0.0.1:9" in cause and "object at 0x" not in cause


def test_a_host_that_does_not_resolve_is_a_dns_failure() -> None:
    cause = _check("openai/stub-model", api_base="http://dei-test.invalid/v1")
    assert cause is not None and cause.startswith("DNS lookup failed for dei-test.invalid")


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ({"api_keys": {"sk-other"}}, "authentication failed (check OPENAI_API_KEY): HTTP 401"),
        ({"models_status": 403}, "permission denied: HTTP 403"),
    ],
)
def test_a_server_refusing_the_key_is_found_by_its_model_list(stub, setup, expected) -> None:
    for name, value in setup.items():
        setattr(stub, name, value)
    cause = _check("openai/stub-model", api_base=stub.base_url)  # OPENAI_API_KEY=sk-test
    assert cause == f"{expected} from {stub.base_url}/models"
    assert stub.requests == 0  # no chat call was made (none would be billed)


def test_what_the_model_list_cannot_decide_is_left_to_the_first_call(stub) -> None:
    stub.models_status = 404  # a server without /models
    assert _check("openai/stub-model", api_base=stub.base_url, api_key="sk-test") is None
    stub.models_status = 500
    assert _check("openai/stub-model", api_base=stub.base_url, api_key="sk-test") is None
    # Elsewhere than OpenAI's own API, a model is never looked up: proxies route models their
    # list does not name.
    stub.models_status, stub.known_models = None, {"stub-model"}
    assert _check("openai/other-model", api_base=stub.base_url, api_key="sk-test") is None
    assert stub.model_lookups == ["/v1/models"] * 3


def test_an_unknown_model_is_found_where_the_lookup_is_exact(stub, monkeypatch) -> None:
    monkeypatch.setattr(preflight_module, "MODEL_LOOKUP_BASES", frozenset({stub.base_url}))
    stub.known_models = {"stub-model"}
    cause = _check("openai/other-model", api_base=stub.base_url, api_key="sk-test")
    assert cause == (
        "model not found (check the model string and --api-base): HTTP 404 from "
        f"{stub.base_url}/models/other-model"
    )
    assert _check("openai/stub-model", api_base=stub.base_url, api_key="sk-test") is None
