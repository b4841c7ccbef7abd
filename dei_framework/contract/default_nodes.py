"""The nodes a domain's task asks for when the user names no operator: what the
``dei_default_nodes`` hook answers (:class:`DefaultNodes`).

An OpenEvolve task folder names its models in ``config.yaml`` (``llm.models``); the ``python``
plugin turns them into one node each, so that such a folder runs with no ``--operator``. The
core reads the answer as it reads a config file's ``[[node]]`` tables; it never imports the
plugin.

Internal: not public API (:mod:`dei_framework.plugin.hookspecs` re-exports
:class:`DefaultNodes`, the name to import); anything here may change in any release.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from dei_framework.contract.payloads import JSONValue

__all__ = ["DefaultNodes"]


@attrs.frozen(kw_only=True)
class DefaultNodes:
    """The nodes of a run that names no operator.

    Attributes:
        nodes: One table per node, in node order, as a config file's ``[[node]]`` table holds
            it: ``operator`` (an operator name or a model string) and the node's operator
            options (``api_base``, ``api_key_env``, ``temperature``, ``max_tokens``,
            ``timeout``, ``max_retries``; never a secret: a key is named by its environment
            variable, ``api_key_env``).
        source: Where they come from, for messages (``bin_packing/config.yaml llm.models``).
    """

    nodes: tuple[Mapping[str, JSONValue], ...] = attrs.field(converter=tuple)
    source: str
