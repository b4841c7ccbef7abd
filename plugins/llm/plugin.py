"""The ``llm`` plugin: registers the LLM operator family and wires in provider plugins.

``--operator openai/gpt-4.1-mini`` (any ``provider/model`` string) or
``--operator llm:openai/gpt-4.1-mini`` selects an :class:`~dei_llm.operator.LLMOperator`.
Nothing here imports litellm at module level: ``dei plugins`` and every other command that
does not call a model stays fast.

In-process providers (``dei_llm_providers`` hook) are collected when the first LLM operator is
created and handed to litellm through its documented ``custom_provider_map``; a model string
``<provider_name>/<model>`` then reaches the plugin's ``litellm.CustomLLM`` handler.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dei_framework.errors import ConfigError, PluginError
from dei_framework.hookspecs import hookimpl
from dei_framework.operators import OperatorSettings, OperatorSpec

if TYPE_CHECKING:
    import pluggy
    from dei_llm.operator import LLMOperator

    from dei_framework.domain import Domain

#: Prefix that forces the LLM family for a model string (``llm:provider/model``).
PREFIX = "llm:"

# provider/model: a provider name (letters, digits, _ . -) then a non-empty model that may
# itself contain slashes (``openrouter/meta-llama/llama-3.1-8b-instruct``).
_MODEL_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*/\S+")

_providers_lock = threading.Lock()
_providers_loaded = False


def is_model_string(spec: str) -> bool:
    """Whether ``spec`` names a model (``provider/model`` or ``llm:provider/model``).

    Filesystem paths are not model strings: they start with ``/``, ``.`` or ``~``, or exist.
    """
    spec = spec.strip()
    if spec.startswith(PREFIX):
        return bool(_MODEL_RE.fullmatch(spec[len(PREFIX) :]))
    if not _MODEL_RE.fullmatch(spec) or spec.startswith(("/", ".", "~")):
        return False
    try:
        return not Path(spec).exists()
    except OSError:
        return True


def model_from_settings(settings: OperatorSettings) -> str:
    """The model string for a node: from ``--operator`` or, for bare ``llm``, the ``model``
    option (handy in TOML: ``operator = "llm"`` with ``model = "..."``).

    Raises:
        ConfigError: No model string was given, or it is not ``provider/model``.
    """
    spec = settings.spec.strip()
    model = spec[len(PREFIX) :] if spec.startswith(PREFIX) else spec
    if model == "llm":
        model = str(settings.options.get("model") or "").strip()
        if not model:
            raise ConfigError(
                f"{settings.node or 'node'}: --operator llm needs a model string, e.g. "
                "--operator openai/gpt-4.1-mini or --operator llm:ollama/qwen2.5-coder "
                "(see docs/llm.md)"
            )
    if not _MODEL_RE.fullmatch(model):
        raise ConfigError(
            f"{settings.node or 'node'}: {model!r} is not a model string; use provider/model, "
            "e.g. openai/gpt-4.1-mini, anthropic/claude-haiku-4-5, ollama/qwen2.5-coder"
        )
    return model


def create_operator(settings: OperatorSettings, domain: Domain | None = None) -> LLMOperator:
    """The ``llm`` factory: builds the node's operator (imports litellm on first use).

    Raises:
        ConfigError: Missing or malformed model string, or invalid options.
    """
    model = model_from_settings(settings)
    from dei_llm.operator import LLMOperator

    operator = LLMOperator.from_settings(model, settings)
    ensure_providers()
    return operator


def ensure_providers() -> None:
    """Registers the ``dei_llm_providers`` of all installed plugins with litellm, once."""
    global _providers_loaded
    with _providers_lock:
        if _providers_loaded:
            return
        _providers_loaded = True
    # The factory receives no plugin manager, so load the entry-point plugins again (cheap:
    # their modules are already imported) just to ask them for providers.
    from dei_framework import plugins

    registry = plugins.load_plugins()
    register_providers(providers_from(registry.manager))


def providers_from(manager: pluggy.PluginManager) -> list[tuple[str, Any]]:
    """The ``(provider_name, handler)`` pairs every plugin of ``manager`` registers.

    A plugin whose hook fails is skipped with a warning naming it, like other plugin faults.
    """
    from dei_framework.plugins import raise_warning

    pairs: list[tuple[str, Any]] = []
    for impl in manager.hook.dei_llm_providers.get_hookimpls():
        plugin = manager.get_name(impl.plugin) or repr(impl.plugin)
        try:
            pairs.extend(impl.function() or [])
        except Exception as exc:
            raise_warning(f"plugin {plugin!r} failed in dei_llm_providers: {exc!r}")
    return pairs


def register_providers(pairs: Iterable[tuple[str, Any]]) -> list[str]:
    """Hands ``(provider_name, litellm.CustomLLM)`` pairs to litellm's ``custom_provider_map``.

    Library users and the core may call this directly (e.g. with providers from plugins they
    registered in-process); a provider registered again replaces the earlier handler.

    Returns:
        The provider names registered.

    Raises:
        PluginError: A pair is not ``(name, CustomLLM instance)``.
    """
    from dei_llm.operator import import_litellm

    litellm = import_litellm()
    from litellm import CustomLLM

    names: list[str] = []
    entries = {item["provider"]: item for item in litellm.custom_provider_map}
    for pair in pairs:
        try:
            name, handler = pair
        except (TypeError, ValueError):
            raise PluginError(
                f"dei_llm_providers must return (name, handler) pairs, got {pair!r}"
            ) from None
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_\-]*", name):
            raise PluginError(f"LLM provider name {name!r} must be a plain identifier")
        if not isinstance(handler, CustomLLM):
            raise PluginError(f"LLM provider {name!r}: handler must be a litellm.CustomLLM")
        entries[name] = {"provider": name, "custom_handler": handler}
        names.append(name)
    litellm.custom_provider_map = list(entries.values())
    return names


def _reset_providers() -> None:
    """Forgets that providers were loaded (tests)."""
    global _providers_loaded
    with _providers_lock:
        _providers_loaded = False


@hookimpl
def dei_operators() -> list[OperatorSpec]:
    return [
        OperatorSpec(
            name="llm",
            factory=create_operator,
            offline=False,
            accepts=is_model_string,
            description="chat models through litellm: --operator provider/model "
            "(openai/..., anthropic/..., ollama/..., hosted_vllm/...)",
        )
    ]
