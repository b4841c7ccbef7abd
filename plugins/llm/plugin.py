"""The ``llm`` plugin: registers the LLM operator family and wires in provider plugins.

``--operator openai/gpt-4.1-mini`` (any ``provider/model`` string) or
``--operator llm:openai/gpt-4.1-mini`` selects an :class:`~dei_llm.operator.LLMOperator`.
Nothing here imports litellm at module level: ``dei plugins`` and every other command that
does not call a model stays fast.

The plugin adds its own hook, ``dei_llm_providers`` (see :mod:`dei_llm.hookspecs`), to the
plugin contract. When an LLM operator is created, the providers of the run's plugins (from
the factory's ``settings.registry``, in-process plugins included) are handed to litellm
through its documented ``custom_provider_map``; a model string ``<provider_name>/<model>``
then reaches the plugin's ``litellm.CustomLLM`` handler.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dei_framework.contract.cli_options import RunOption
from dei_framework.contract.errors import ConfigError, PluginError
from dei_framework.contract.operators import OperatorSettings, OperatorSpec
from dei_framework.plugin.hookspecs import hookimpl

if TYPE_CHECKING:
    import pluggy
    from dei_llm.operator import LLMOperator

    from dei_framework.contract.registry import PluginRegistry

#: Prefix that forces the LLM family for a model string (``llm:provider/model``).
PREFIX = "llm:"

# provider/model: a provider name (letters, digits, _ . -) then a non-empty model that may
# itself contain slashes (``openrouter/meta-llama/llama-3.1-8b-instruct``).
_MODEL_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*/\S+")


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


def create_operator(settings: OperatorSettings) -> LLMOperator:
    """The ``llm`` factory, ``factory(ctx)``: builds the node's operator (imports litellm on
    first use).

    Raises:
        ConfigError: Missing or malformed model string, or invalid options.
    """
    model = model_from_settings(settings)
    from dei_llm.operator import LLMOperator

    operator = LLMOperator.from_settings(model, settings)
    if settings.registry is not None:
        register_providers(providers_from(settings.registry))
    return operator


def providers_from(registry: PluginRegistry) -> list[tuple[str, Any]]:
    """The ``(provider_name, handler)`` pairs the plugins of ``registry`` register.

    A plugin whose hook fails is skipped with a warning naming it, like other plugin faults.
    """
    before = len(registry.problems)
    pairs = [pair for pair, _ in registry.collect("dei_llm_providers")]
    for problem in registry.problems[before:]:
        print(f"warning: {problem}", file=sys.stderr)
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
    pairs = list(pairs)
    if not pairs:
        return []  # no need to import litellm (seconds) for nothing
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


@hookimpl
def dei_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    from dei_llm import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def parse_price_flags(pairs: Iterable[str]) -> dict[str, str]:
    """``--price MODEL=IN,OUT`` values into ``{model: "IN,OUT"}`` (checked by the operator).

    Raises:
        ConfigError: A value is not ``MODEL=IN,OUT``.
    """
    prices = {}
    for pair in pairs:
        model, sep, value = str(pair).rpartition("=")
        if not sep or not model.strip() or "," not in value:
            raise ConfigError(
                f"--price takes MODEL=IN,OUT (USD per million input and output "
                f"tokens), got {pair!r}"
            )
        prices[model.strip()] = value.strip()
    return prices


@hookimpl
def dei_run_options() -> list[RunOption]:
    return [
        RunOption(
            option=click.Option(
                ["--price", "prices"],
                multiple=True,
                metavar="MODEL=IN,OUT",
                help="Price of a model in USD per million input and output tokens, "
                "repeatable (for models litellm has no price for).",
            ),
            target="operator_options",
            convert=parse_price_flags,
        )
    ]


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
            # homo-temp: one model at 0.4 ... 1.3 (four nodes: 0.4, 0.7, 1.0 as in the paper, 1.3)
            ladder_option="temperature",
            ladder_range=(0.4, 1.3),
        )
    ]
