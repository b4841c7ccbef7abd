"""A run's configuration as its record holds it: :class:`NodeConfig` (one node, its operator and
the settings it holds apart from the run's: selector, archive, sharing, axes), and the
``config.json`` form of a whole configuration, read back with the defaults an older record's
run ran with where it lacks a key.

:class:`~dei_framework.runtime.config.run_config.RunConfig` holds a tuple of
:class:`NodeConfig`; its :meth:`to_json` and :meth:`from_json` answer with :func:`to_json` and
:func:`from_json`.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

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


#: The configuration class :func:`from_json` makes (``RunConfig``).
Config = TypeVar("Config")


class RecordedRun(Protocol):
    """A :class:`~dei_framework.runtime.config.run_config.RunConfig` (an attrs class; ``run_config``
    imports this module: it is not imported here)."""

    nodes: Sequence[NodeConfig]


def to_json(config: RecordedRun) -> dict[str, Any]:
    """``config`` as ``config.json`` holds it."""
    data = attrs.asdict(config, recurse=True)
    data["nodes"] = [attrs.asdict(node) for node in config.nodes]
    # A static run records the configuration it recorded before allocators existed.
    if data["allocation"] == "static" and not data["allocation_options"]:
        del data["allocation"], data["allocation_options"]
    return data


def from_json(cls: Callable[..., Config], data: Mapping[str, Any]) -> Config:
    """The configuration ``config.json`` holds (``cls``: the class to make)."""
    values = dict(data)
    values["nodes"] = tuple(NodeConfig(**node) for node in data["nodes"])
    values.setdefault("max_peer_champions", values.get("max_champions", 20))
    # A configuration recorded before lifecycles were a choice ran Red Queen rounds.
    values.setdefault("lifecycle", "reset")
    return cls(**values)
