"""One node of a run, as its configuration records it: :class:`NodeConfig`, its operator and the
settings it holds apart from the run's (selector, archive, sharing, axes).

Importable from :mod:`dei_framework.runtime.run_config` and :mod:`dei_framework.runtime.config`
(and :mod:`dei_framework`), where :class:`~dei_framework.runtime.run_config.RunConfig` holds a
tuple of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs


@attrs.frozen(kw_only=True)
class NodeConfig:
    """One node: its operator and the operator's settings.

    Attributes:
        name: Node name (``node-0`` ...), used in logs, events and the summary.
        operator: ``--operator`` value for this node (an operator name or a model string).
        options: Operator options (``api_base``, ``temperature``, ``max_tokens``, ``timeout``,
            ``concurrency`` ...), node table over global settings.
        selector: This node's parent selector (empty: the run's).
        selector_options: Options of this node's parent selector (``None``: the run's
            ``[selector_options]``; a table given replaces the run's, it is not merged).
        archive: This node's archive (empty: the run's).
        archive_options: Options of this node's archive (``None``: the run's
            ``[archive_options]``; likewise replaced, not merged).
        sharing: This node's sharing policy (empty: the run's).
        axes: This node's descriptor axes (empty: the run's); results are mapped into the
            run's axes for the merged archive and reports.
    """

    name: str
    operator: str
    options: Mapping[str, Any] = attrs.field(factory=dict)
    selector: str = ""
    archive: str = ""
    sharing: str = ""
    axes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    selector_options: Mapping[str, Any] | None = None
    archive_options: Mapping[str, Any] | None = None
