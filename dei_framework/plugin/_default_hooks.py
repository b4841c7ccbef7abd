"""The defaults hooks: what a plugin proposes where the user gave nothing (firstresult).

Collected by :mod:`dei_framework.plugin.hookspecs`, the module the plugin manager registers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from dei_framework.plugin._markers import hookspec

if TYPE_CHECKING:
    from dei_framework.contract.default_nodes import DefaultNodes
    from dei_framework.contract.payloads import JSONValue


@hookspec(firstresult=True)
def dei_default_nodes(
    domain: str, options: Mapping[str, JSONValue], operators: tuple[str, ...]
) -> DefaultNodes | None:
    """The nodes of a run that names no operator, as the domain's task asks for them (the
    ``python`` plugin: one node per model of an OpenEvolve ``config.yaml``'s ``llm.models``).

    Example::

        @hookimpl
        def dei_default_nodes(domain, options, operators):
            if domain != "mydomain" or operators:
                return None
            return DefaultNodes(
                nodes=({"operator": "openai/my-model", "api_key_env": "MY_KEY"},),
                source="my task's settings",
            )

    Fires:
        Once per ``dei-run`` / ``dei experiment`` configuration, while its nodes are resolved
        (:func:`~dei_framework.runtime.config.resolve.resolve_config`). The answer is used only when
        neither ``--operator`` (nor a config file's ``operator``) nor a ``[[node]]`` table
        names an operator; without one the run gets the domain's offline default operators.

    Args:
        domain: The run's domain name.
        options: The run's domain options (``--task`` and ``--domain-option`` over the config
            file's ``[domain_options]``), before the domain is built.
        operators: The operators the user named (``--operator``, the config file's, its
            ``[[node]]`` tables'), in order; empty when none. When there are any the answer is
            not used: answer ``None``, and say in one warning line (on standard error) what
            of the task's own settings gives way, without checking them (a mistake there must
            not stop a run that does not use them).

    Returns:
        The first answer that is not ``None`` (firstresult): a
        :class:`~dei_framework.contract.default_nodes.DefaultNodes`, read as ``[[node]]``
        tables (``--nodes N`` cycles them over N nodes, and may not be fewer; ``--api-base``
        replaces their ``api_base``); or ``None`` for a domain that is not yours or a task
        that names no nodes. A user mistake in what the task names is a
        :class:`~dei_framework.contract.errors.ConfigError` (one ``error:`` line).
    """
