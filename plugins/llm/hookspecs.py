"""Hooks the ``llm`` plugin adds to DEI's plugin contract (through ``dei_addhooks``).

Only the ``llm`` plugin calls these, when it creates an LLM operator. A plugin that implements
them without depending on the ``llm`` plugin should mark its implementation
``@hookimpl(optionalhook=True)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dei_framework.plugin.hookspecs import hookspec

if TYPE_CHECKING:
    from litellm import CustomLLM


@hookspec
def dei_llm_providers() -> list[tuple[str, CustomLLM]]:
    """Registers in-process LLM providers for the ``llm`` operator.

    A model string ``provider_name/model`` then reaches the handler (through litellm's
    ``custom_provider_map``). Import litellm inside the hook, not at module level.

    Fires:
        Once per plugin each time the ``llm`` plugin creates an LLM operator (once per node
        using one, in the process running that node), on the plugins of that run (in-process
        plugins included).

    Returns:
        A list of ``(provider_name, handler)`` pairs, ``handler`` a ``litellm.CustomLLM``
        instance. Every plugin's list is collected (not firstresult); a plugin whose hook
        raises is skipped with a warning naming it.
    """
