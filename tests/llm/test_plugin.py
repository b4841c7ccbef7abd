"""Tests of the ``llm`` plugin: operator-string claiming, the factory, provider plugins."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import dei_llm.plugin as llm_plugin
import echo_provider
import pytest

from dei_framework.contract.errors import ConfigError, OperatorError, PluginError
from dei_framework.contract.operators import (
    OperatorRequest,
    OperatorSettings,
    TransientOperatorFailure,
)
from dei_framework.plugin import manager as plugins


def _request() -> OperatorRequest:
    return OperatorRequest(
        key="node-0/0/0", kind="new", messages=[{"role": "user", "content": "write a warrior"}]
    )


@pytest.mark.parametrize(
    "spec",
    [
        "openai/gpt-4.1-mini",
        "anthropic/claude-haiku-4-5",
        "ollama/qwen2.5-coder",
        "hosted_vllm/Qwen/Qwen2.5-Coder-7B-Instruct",
        "openrouter/meta-llama/llama-3.1-8b-instruct",
        "gemini/gemini-2.5-flash",
        "llm:openai/gpt-4.1-mini",
    ],
)
def test_claims_model_strings(spec):
    assert llm_plugin.is_model_string(spec)


@pytest.mark.parametrize(
    "spec", ["gp", "llm", "/abs/path.red", "./rel/x", "../x/y", "~/x/y", "openai/", "/x", "a b/c"]
)
def test_does_not_claim_names_or_paths(spec):
    assert not llm_plugin.is_model_string(spec)


def test_existing_relative_path_is_not_a_model(tmp_path, monkeypatch):
    (tmp_path / "warriors").mkdir()
    (tmp_path / "warriors" / "imp.red").write_text("MOV 0, 1\n")
    monkeypatch.chdir(tmp_path)
    assert not llm_plugin.is_model_string("warriors/imp.red")


def test_registry_routes_model_strings_to_llm():
    registry = plugins.load_plugins()
    assert "llm" in registry.operators
    spec = registry.operator("openai/gpt-4.1-mini")
    assert spec.name == "llm" and spec.offline is False
    assert registry.operator("llm:ollama/qwen2.5-coder") is spec
    assert registry.operator("llm") is spec


def test_bare_llm_is_a_config_error():
    with pytest.raises(ConfigError, match="needs a model string"):
        llm_plugin.create_operator(OperatorSettings(spec="llm", node="node-0"))


def test_bad_model_string_is_a_config_error():
    with pytest.raises(ConfigError, match="not a model string"):
        llm_plugin.create_operator(OperatorSettings(spec="llm:gpt4", node="node-0"))


def test_factory_forms(stub):
    op = llm_plugin.create_operator(
        OperatorSettings(
            spec="llm:openai/stub-model",
            node="n1",
            options={"api_base": stub.base_url, "concurrency": 2},
        )
    )
    assert op.label == "openai/stub-model" and op.max_in_flight == 2
    assert asyncio.run(op.propose(_request())).attempts == 1
    op = llm_plugin.create_operator(
        OperatorSettings(
            spec="llm", node="n1", options={"model": "openai/stub-model", "api_base": stub.base_url}
        )
    )
    assert op.label == "openai/stub-model"


def test_bad_option_is_a_config_error():
    with pytest.raises(ConfigError, match="timeout"):
        llm_plugin.create_operator(
            OperatorSettings(spec="openai/x", node="n", options={"timeout": "soon"})
        )


def test_import_does_not_load_litellm():
    code = (
        "import sys; import dei_llm.plugin; from dei_framework.plugin.manager import load_plugins; "
        "load_plugins(); print('litellm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_custom_provider_from_an_in_process_plugin():
    """A provider from a plugin registered in-process (not through an entry point) is found:
    the factory gets the run's registry and asks its plugins, nothing is rediscovered."""
    registry = plugins.load_plugins([echo_provider])
    echo_provider.CALLS.clear()
    op = llm_plugin.create_operator(
        OperatorSettings(
            spec="echoprov/anything", node="node-0", options={"timeout": 5}, registry=registry
        )
    )
    reply = asyncio.run(op.propose(_request()))
    assert reply.text.startswith("echo from anything")
    assert (reply.prompt_tokens, reply.completion_tokens, reply.attempts) == (3, 5, 1)
    assert reply.cost_usd is None  # a custom provider has no known price: unknown, not 0
    assert echo_provider.CALLS == [("anything", "write a warrior")]
    import litellm

    assert "echoprov" in {item["provider"] for item in litellm.custom_provider_map}


def test_the_llm_plugin_owns_its_provider_hook():
    """``dei_llm_providers`` is not in the core contract; the llm plugin adds it."""
    from dei_framework.plugin import hookspecs

    assert not hasattr(hookspecs, "dei_llm_providers")
    registry = plugins.load_plugins([echo_provider])
    assert registry.manager.hook.dei_llm_providers.spec is not None
    assert [name for name, _ in llm_plugin.providers_from(registry)] == ["echoprov"]
    bare = plugins.load_plugins(entry_points=False)
    assert not hasattr(bare.manager.hook, "dei_llm_providers")


def test_a_failing_provider_plugin_is_named_and_skipped(capsys):
    from dei_framework import hookimpl

    class Broken:
        @hookimpl
        def dei_llm_providers(self):
            raise RuntimeError("no handler today")

    registry = plugins.load_plugins([Broken(), echo_provider])
    assert [name for name, _ in llm_plugin.providers_from(registry)] == ["echoprov"]
    assert "no handler today" in capsys.readouterr().err


def test_register_providers_directly():
    names = llm_plugin.register_providers([("echoprov2", echo_provider.make_handler())])
    assert names == ["echoprov2"]
    with pytest.raises(PluginError, match="CustomLLM"):
        llm_plugin.register_providers([("bad", object())])
    with pytest.raises(PluginError, match="pairs"):
        llm_plugin.register_providers(["nope"])


def _failing_provider(name: str, exc: Exception):
    import litellm

    class Failing(litellm.CustomLLM):
        calls = 0

        async def acompletion(self, *args, **kwargs):
            type(self).calls += 1
            raise exc

    handler = Failing()
    llm_plugin.register_providers([(name, handler)])
    return handler


def test_provider_plugin_bug_stops_without_retry():
    from dei_llm.operator import LLMOperator, LLMOptions

    handler = _failing_provider("buggyprov", KeyError("choices"))
    op = LLMOperator("buggyprov/m", LLMOptions(retry_base=0.01, max_retries=3))
    with pytest.raises(OperatorError, match=r"^buggyprov/m: provider plugin error: KeyError"):
        asyncio.run(op.propose(_request()))
    assert handler.calls == 1


def test_provider_plugin_transient_error_is_retried():
    import litellm
    from dei_llm.operator import LLMOperator, LLMOptions

    exc = litellm.exceptions.ServiceUnavailableError(
        message="overloaded", llm_provider="busyprov", model="m"
    )
    handler = _failing_provider("busyprov", exc)
    op = LLMOperator("busyprov/m", LLMOptions(retry_base=0.01, max_retries=2))
    with pytest.raises(TransientOperatorFailure) as info:
        asyncio.run(op.propose(_request()))
    assert info.value.attempts == 3 and handler.calls == 3
