"""Per-node endpoints: ``--operator MODEL@URL`` and the check on a shared ``--api-base``.

A node's server URL (``api_base``) is one of its operator options. It comes from the global
``--api-base`` flag (or ``api_base`` in ``[operator_options]``), from the node's ``[[node]]``
table, or from the operator spec itself: ``--operator ollama/qwen2.5-coder@http://127.0.0.1:11434``.
A global URL reaches every node without one of its own, so one given beside operators of
several providers would send, say, an Anthropic node's requests (and its key) to a local
Ollama server: :func:`check_shared_api_base` refuses that and shows the per-node form.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dei_framework.contract.errors import ConfigError

# ``@`` followed by a URL: model strings may contain ``@`` themselves (Vertex AI's
# ``vertex_ai/claude-3-5-sonnet@20240620``), a scheme after it tells the endpoint apart.
_ENDPOINT = re.compile(r"^(?P<operator>.+?)@(?P<url>https?://\S+)$")

# ``provider/model`` (``llm:`` optional); paths (``./op.py``, ``/x/y``) are not model strings.
_MODEL = re.compile(r"^(?:llm:)?(?P<provider>[A-Za-z][A-Za-z0-9_.\-]*)/\S+$")

#: Providers that usually run on the user's own machine: the example a refusal shows.
_LOCAL_PROVIDERS = ("ollama", "ollama_chat", "hosted_vllm", "lm_studio", "llamafile", "vllm")


def split_endpoint(spec: str) -> tuple[str, str | None]:
    """``"ollama/qwen2.5-coder@http://127.0.0.1:11434"`` into the operator and its URL.

    Returns:
        The operator spec without the endpoint, and the URL (``None`` when there is none).
    """
    match = _ENDPOINT.match(spec.strip())
    if match is None:
        return spec, None
    return match["operator"], match["url"]


def provider_of(spec: str) -> str | None:
    """The provider of a model string (``anthropic`` of ``anthropic/claude-haiku-4-5``), or
    ``None`` for an operator that is not one (``gp``, a path)."""
    match = _MODEL.match(spec.strip())
    return match["provider"] if match is not None else None


def check_shared_api_base(api_base: str | None, inheriting: Sequence[str]) -> None:
    """Refuses a global ``api_base`` that operators of several providers would share.

    Args:
        api_base: The global URL (``--api-base`` or ``[operator_options] api_base``).
        inheriting: The operator specs of the nodes that would get it (those without an
            endpoint of their own).

    Raises:
        ConfigError: The operators of ``inheriting`` name more than one provider.
    """
    if not api_base:
        return
    providers = {
        provider: spec for spec in inheriting if (provider := provider_of(spec)) is not None
    }
    if len(providers) < 2:
        return
    local = [spec for provider, spec in providers.items() if provider in _LOCAL_PROVIDERS]
    example = (local or list(providers.values()))[0].removeprefix("llm:")
    raise ConfigError(
        f"--api-base {api_base} would send the requests of every LLM node to that one server, "
        f"but the nodes use {len(providers)} providers ({', '.join(sorted(providers))}): give "
        f"the server to the node it serves, e.g. --operator {example}@{api_base} (or api_base "
        "in its [[node]] table), and none to hosted models"
    )
