"""Hooks the ``llm`` plugin adds to DEI's plugin contract (through ``dei_addhooks``).

Only the ``llm`` plugin calls these, when it creates an LLM operator. A plugin that implements
them without depending on the ``llm`` plugin should mark its implementation
``@hookimpl(optionalhook=True)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dei_framework.hookspecs import hookspec

if TYPE_CHECKING:
    from litellm import CustomLLM


@hookspec
def dei_llm_providers() -> list[tuple[str, CustomLLM]]:
    """Registers in-process LLM providers for the ``llm`` operator.

    Return ``(provider_name, handler)`` pairs where ``handler`` is a ``litellm.CustomLLM``
    instance; a model string ``provider_name/model`` then reaches the handler (through
    litellm's ``custom_provider_map``). Called each time an LLM operator is created, on the
    plugins of that run (in-process plugins included); import litellm inside the hook, not
    at module level.
    """
