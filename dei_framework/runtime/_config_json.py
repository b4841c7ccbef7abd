"""A run configuration as ``config.json`` records it, and read back: the record's JSON form, and
the defaults an older record's run ran with where it lacks a key.

:class:`~dei_framework.runtime.run_config.RunConfig`'s :meth:`to_json` and :meth:`from_json`
answer with these.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import attrs

from dei_framework.runtime._node_config import NodeConfig

#: The configuration class :func:`from_json` makes (``RunConfig``).
Config = TypeVar("Config")


class RecordedRun(Protocol):
    """A :class:`~dei_framework.runtime.run_config.RunConfig` (an attrs class; ``run_config``
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
