"""Run configuration: every ``dei-run`` option, from a TOML file and flags (flags win)."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from dei_framework.errors import ConfigError


def _positive(name: str):
    def check(instance, attribute, value) -> None:
        if value is not None and value < 1:
            raise ConfigError(f"{name} must be at least 1, got {value}")

    return check


@attrs.frozen(kw_only=True)
class NodeConfig:
    """One node: its operator and the operator's settings.

    Attributes:
        name: Node name (``node-0`` ...), used in logs, events and the summary.
        operator: ``--operator`` value for this node (an operator name or a model string).
        options: Operator options (``api_base``, ``temperature``, ``max_tokens``, ``timeout``,
            ``concurrency`` ...), node table over global settings.
    """

    name: str
    operator: str
    options: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class RunConfig:
    """Everything a run needs, resolved. Recorded as ``config.json`` in the run directory.

    Attributes:
        domain: Domain name.
        transport: Transport name.
        nodes: The nodes, in order.
        rounds: Red Queen rounds per node.
        budget: Total operator calls across nodes (split equally), or ``None`` with
            ``iterations``.
        iterations: Calls per node per round (the alternative to ``budget``).
        seed: Run seed; every random draw derives from it.
        sharing: Sharing policy name.
        sharing_options: Options of the policy (``[sharing]`` table).
        axes: Descriptor axes of the grid (empty: the domain's default).
        new_fraction: Share of calls that write a new program instead of mutating an elite.
        max_champions: Recent champions kept as opponents (DRQ's k).
        eval_workers: Worker processes for evaluation (0: threads in this process).
        domain_options: Domain options (``[domain_options]`` table and domain flags).
        transport_options: Transport options (``[transport_options]`` table and flags).
        checkpoint_seconds: Minimum seconds between in-round checkpoints.
        common_ground: After the run, re-evaluate every merged-archive elite and round
            champion against the domain's reference set (``merged.common`` in the summary;
            always on in experiments).
    """

    domain: str
    transport: str = "inmemory"
    nodes: tuple[NodeConfig, ...] = attrs.field(converter=tuple)
    rounds: int = attrs.field(default=3, validator=_positive("--rounds"))
    budget: int | None = attrs.field(default=None, validator=_positive("--budget"))
    iterations: int | None = attrs.field(default=None, validator=_positive("--iterations"))
    seed: int = 0
    sharing: str = "champion"
    sharing_options: Mapping[str, Any] = attrs.field(factory=dict)
    axes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    new_fraction: float = 0.1
    max_champions: int = 20
    eval_workers: int | None = None
    domain_options: Mapping[str, Any] = attrs.field(factory=dict)
    transport_options: Mapping[str, Any] = attrs.field(factory=dict)
    checkpoint_seconds: float = 2.0
    common_ground: bool = False

    def __attrs_post_init__(self) -> None:
        if not self.nodes:
            raise ConfigError("a run needs at least one node")
        if (self.budget is None) == (self.iterations is None):
            raise ConfigError("give exactly one of --budget and --iterations")
        if not 0.0 <= self.new_fraction <= 1.0:
            raise ConfigError(f"new_fraction must be within [0, 1], got {self.new_fraction}")

    @property
    def node_names(self) -> list[str]:
        return [node.name for node in self.nodes]

    def node_quotas(self) -> dict[str, int]:
        """Calls per node: the budget split equally, or iterations x rounds."""
        from dei_framework.budget import split_budget

        if self.budget is not None:
            return split_budget(self.budget, self.node_names)
        return {name: self.iterations * self.rounds for name in self.node_names}

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self, recurse=True)
        data["nodes"] = [attrs.asdict(node) for node in self.nodes]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunConfig:
        values = dict(data)
        values["nodes"] = tuple(NodeConfig(**node) for node in data["nodes"])
        return cls(**values)


#: Options a ``[[node]]`` table may set besides ``operator``.
NODE_OPTION_KEYS = ("api_base", "api_key_env", "temperature", "max_tokens", "timeout",
                    "concurrency", "max_retries")  # fmt: skip


def build_nodes(
    *,
    count: int | None,
    operators: list[str],
    node_tables: list[Mapping[str, Any]],
    common_options: Mapping[str, Any],
) -> tuple[NodeConfig, ...]:
    """Resolves the node list: ``--operator`` values cycled over ``count`` nodes.

    A ``[[node]]`` table (by position) may set that node's operator and options; a node
    table's options override ``common_options`` (the global ``[operator_options]`` table and
    flags such as ``--api-base``).

    Raises:
        ConfigError: no operator given, or a node table has unknown keys.
    """
    if not operators and not node_tables:
        raise ConfigError("no operator given: use --operator (e.g. --operator gp)")
    count = count or max(len(operators), len(node_tables), 1)
    nodes = []
    for index in range(count):
        table = dict(node_tables[index]) if index < len(node_tables) else {}
        unknown = set(table) - {"operator", "name", *NODE_OPTION_KEYS}
        if unknown:
            raise ConfigError(f"[[node]] table {index} has unknown keys: {sorted(unknown)}")
        operator = table.pop("operator", None) or (operators[index % len(operators)]
                                                   if operators else None)
        if not operator:
            raise ConfigError(f"node {index} has no operator")
        name = table.pop("name", f"node-{index}")
        nodes.append(NodeConfig(name=name, operator=operator,
                                options={**common_options, **table}))
    names = [node.name for node in nodes]
    if len(set(names)) != len(names):
        raise ConfigError(f"node names repeat: {names}")
    return tuple(nodes)


def load_toml(path: str | Path) -> dict[str, Any]:
    """Reads a TOML configuration file.

    Raises:
        ConfigError: the file is missing or not valid TOML (the message has the position).
    """
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: {exc}") from None
