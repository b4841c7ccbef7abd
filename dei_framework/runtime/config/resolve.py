"""Run configuration: every ``dei-run`` option, from flags, a TOML file and a preset.

:func:`resolve_config` turns ``dei-run`` / ``dei experiment`` flags (core and plugin ones) plus
a ``--config`` file into a :class:`RunConfig`; :class:`Sources` is the one order of precedence
(flags, the file, the preset, the defaults) that it, ``dei experiment`` and ``dei node`` use.
Which keys and flags there are comes from ``RunConfig``'s fields (:mod:`.run_config`).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import json
import secrets
import tomllib
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from dei_framework.contract.errors import ConfigError
from dei_framework.evaluation.sandbox.policy import SandboxPolicy, choose_policy
from dei_framework.runtime.config.checks import check_count, check_shared_api_base, split_endpoint
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import CONFIG_KEYS, DEFAULT_NODES, DEFAULTS, RunConfig
from dei_framework.runtime.config.settings import (
    Preset,
    get_preset,
    of_fields,
    overridden,
    warn_overrides,
)

if TYPE_CHECKING:
    from dei_framework.contract.default_nodes import DefaultNodes
    from dei_framework.contract.registry import PluginRegistry


#: Calls per node when neither ``--budget`` nor ``--iterations`` is given.
DEFAULT_CALLS_PER_NODE = 40
#: The option tables flags can add keys to (a plugin's flag, ``--domain-option`` ...).
FLAG_TABLES = (
    "domain_options",
    "transport_options",
    "sharing_options",
    "operator_options",
    "evaluator_options",
)


#: Options a ``[[node]]`` table may set besides ``operator``.
NODE_OPTION_KEYS = (
    "api_base",
    "api_key_env",
    "temperature",
    "max_tokens",
    "timeout",
    "concurrency",
    "max_retries",
    "price",
)


#: Search settings a ``[[node]]`` table may set for its node alone.
NODE_SEARCH_KEYS = ("selector", "selector_options", "archive", "archive_options", "sharing", "axes")


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
    flags such as ``--api-base``). An operator ``MODEL@URL`` sets that node's ``api_base``.

    Raises:
        ConfigError: no operator given, a node table has unknown keys, or a global
            ``api_base`` would reach operators of several providers.
    """
    inheriting = []  # operators of the nodes that get the global api_base, if any
    if not operators and not node_tables:
        raise ConfigError("no operator given: use --operator (e.g. --operator gp)")
    count = count or max(len(operators), len(node_tables), 1)
    nodes = []
    for index in range(count):
        table = dict(node_tables[index]) if index < len(node_tables) else {}
        unknown = set(table) - {"operator", "name", *NODE_SEARCH_KEYS, *NODE_OPTION_KEYS}
        if unknown:
            raise ConfigError(f"[[node]] table {index} has unknown keys: {sorted(unknown)}")
        operator = table.pop("operator", None) or (
            operators[index % len(operators)] if operators else None
        )
        if not operator:
            raise ConfigError(f"node {index} has no operator")
        operator, endpoint = split_endpoint(operator)
        if endpoint is not None:
            table["api_base"] = endpoint
        elif "api_base" not in table:
            inheriting.append(operator)
        name = table.pop("name", f"node-{index}")
        search = {key: table.pop(key) for key in NODE_SEARCH_KEYS if key in table}
        if isinstance(search.get("axes"), str):
            search["axes"] = tuple(a.strip() for a in search["axes"].split(",") if a.strip())
        for key in ("selector_options", "archive_options"):
            if key in search and not isinstance(search[key], Mapping):
                raise ConfigError(
                    f"[[node]] table {index}: {key} must be a table, got {search[key]!r}"
                )
        nodes.append(
            NodeConfig(name=name, operator=operator, options={**common_options, **table}, **search)
        )
    names = [node.name for node in nodes]
    if len(set(names)) != len(names):
        raise ConfigError(f"node names repeat: {names}")
    check_shared_api_base(common_options.get("api_base"), inheriting)
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


def chosen_out(flags: Mapping[str, Any]) -> Path | None:
    """The output directory chosen by ``--out``, else by the config file's ``out`` key.

    A relative ``out`` in the file is taken from the current directory, as ``--out`` is.
    ``None`` when neither is given (the command then picks its default).

    Raises:
        ConfigError: the file's ``out`` is not a non-empty string.
    """
    if flags.get("out"):
        return Path(flags["out"])
    path = flags.get("config_file")
    if not path or Path(path).suffix == ".json":
        return None
    value = load_toml(path).get("out")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(
            f"config file {path}: out must be a directory path (a string), not {value!r}"
        )
    return Path(value)


# --- from flags and a config file -------------------------------------------------------------


@attrs.frozen
class Sources:
    """Where a setting's value comes from, the first that has one: the flags, the ``--config``
    file, the preset, :data:`DEFAULTS` (``flags > file > preset > defaults``, as
    docs/configuration.md says).

    Attributes:
        flags: The command's flags by parameter name (one not given is ``None`` or ``()``).
        file: The config file's top-level keys (``api-base`` read as ``api_base``).
        preset: The preset named by ``--preset`` or the file's ``preset`` key.
        protocol: The preset's settings (for ``dei experiment``, its experiment's too).
    """

    flags: Mapping[str, Any]
    file: Mapping[str, Any]
    preset: Preset | None = None
    protocol: Mapping[str, Any] = attrs.field(factory=dict)

    @classmethod
    def read(
        cls,
        flags: Mapping[str, Any],
        *,
        known: Collection[str] | None = None,
        experiment: bool = False,
    ) -> Sources:
        """The sources of ``flags``: its ``config_file`` read, its preset looked up.

        Args:
            flags: The command's flags.
            known: The keys the file may hold (``None``: not checked here).
            experiment: Whether the preset's experiment settings count (``conditions``).

        Raises:
            ConfigError: The file is missing, not TOML, or has keys not in ``known``; or the
                preset is unknown.
        """
        file = load_toml(flags["config_file"]) if flags.get("config_file") else {}
        file = {key.replace("-", "_"): value for key, value in file.items()}
        unknown = set(file) - set(known) if known is not None else set()
        if unknown:
            raise ConfigError(f"config file: unknown keys {sorted(unknown)}")
        preset = get_preset(flags.get("preset") or file.get("preset"))
        protocol = (
            {**preset.settings, **(preset.experiment if experiment else {})}
            if preset is not None
            else {}
        )
        return cls(flags, file, preset, protocol)

    def mine(self, name: str) -> Any:
        """The user's own value: the flag's, else the file's (``None``: neither gives one)."""
        value = self.flags.get(name)
        if value is None or value == ():
            value = self.file.get(name)
        return value

    def pick(self, name: str) -> Any:
        """The value that counts: the user's, else the preset's, else the default."""
        value = self.mine(name)
        if value is None:
            value = self.protocol.get(name)
        return DEFAULTS.get(name) if value is None else value


def resolve_config(flags: dict[str, Any], plugins: PluginRegistry) -> RunConfig:
    """Merges defaults, a preset, the TOML file and flags (in that order of precedence, flags
    last): every ``RunConfig`` field that is a setting is picked from :class:`Sources`.

    Flags that plugins add (``dei_run_options``) go to the options table their
    :class:`~dei_framework.contract.cli_options.RunOption` names; ``--domain-option`` and
    ``--transport-option`` override them.

    Raises:
        ConfigError: Unknown config keys, unknown plugin names, invalid values.
    """
    sources = Sources.read(flags, known=CONFIG_KEYS | set(plugins.run_options))
    pick, file = sources.pick, sources.file
    domain = pick("domain")
    if not domain:
        raise ConfigError("no domain given: use --domain (see `dei plugins`)")
    plugins.domain(domain)
    plugins.evaluator(pick("evaluator"))
    plugins.allocator(pick("allocation"))
    tables = {target: dict(file.get(target, {})) for target in FLAG_TABLES}
    if sources.preset is not None:  # the preset's tables lie under the file's
        tables["domain_options"] = {**sources.preset.domain_options, **tables["domain_options"]}
        tables["operator_options"] = {
            **sources.preset.operator_options,
            **tables["operator_options"],
        }
    # A plugin flag clashing with a core option is left out (and warned about).
    apply_plugin_options(plugins, tables, pick, skip=CONFIG_KEYS)
    # Before the nodes: a task may name them (dei_default_nodes reads the domain options).
    apply_key_values(tables, flags)
    operators, node_tables, count = _operators(sources, plugins, domain, tables["domain_options"])
    if pick("api_base"):
        tables["operator_options"]["api_base"] = pick("api_base")
    nodes = build_nodes(
        count=count,
        operators=operators,
        node_tables=node_tables,
        common_options=tables["operator_options"],
    )
    if pick("transport") != "inmemory" and not any("name" in table for table in node_tables):
        # One node per process across machines: every draw derives from (seed, node name), so
        # identical default names would make same-operator nodes search identically.
        suffix = secrets.token_hex(3)
        nodes = tuple(attrs.evolve(node, name=f"{node.name}-{suffix}") for node in nodes)
    iterations = pick("iterations")
    budget = sources.mine("budget") if iterations is not None else pick("budget")
    if budget is None and iterations is None:
        budget = DEFAULT_CALLS_PER_NODE * len(nodes)
    if sources.preset is not None:
        _warn_off_protocol(sources)
    values = {item.key: pick(item.key) for item in of_fields(RunConfig)}
    values.update(
        nodes=nodes,
        budget=budget,
        iterations=iterations,
        axes=_axes(pick("axes")),
        lifecycle=values["lifecycle"] or "",
        sandbox=values["sandbox"] or "",
        array_path=bool(values["array_path"]),
        common_ground=bool(values["common_ground"]),
        members=values["members"] or (),
        compute_axis=values["compute_axis"] or "calls",
        selector_options=file.get("selector_options", {}),
        archive_options=file.get("archive_options", {}),
        allocation_options=dict(file.get("allocation_options", {})),
        **{name: tables[name] for name in FLAG_TABLES if name != "operator_options"},
    )
    config = RunConfig(**values)
    sandbox_policy(config)  # impossible sandbox options end here, before anything runs
    return config


def sandbox_policy(config: RunConfig, domain: Any = None) -> SandboxPolicy:
    """The run's sandbox level and limits: the one place they are decided, from the options
    and the domain's declarations (:func:`~dei_framework.evaluation.sandbox.choose_policy`).
    Without ``domain``, the options alone are checked.

    Raises:
        ConfigError: Impossible options (an unknown level, a limit out of range or with
            ``--sandbox none``, ``isolated`` without bubblewrap).
    """
    return choose_policy(
        domain,
        level=config.sandbox,
        timeout=config.eval_timeout,
        memory_mb=config.eval_memory,
        file_mb=config.eval_file_size,
        processes=config.eval_processes,
    )


def _operators(
    sources: Sources, plugins: PluginRegistry, domain: str, domain_options: Mapping[str, Any]
) -> tuple[list[str], list[Mapping[str, Any]], int | None]:
    """The ``--operator`` values, the file's ``[[node]]`` tables and the node count; when
    neither names an operator, the nodes the domain's task names (``dei_default_nodes``),
    else the domain's offline default ensemble."""
    file = sources.file
    operators = list(
        sources.flags.get("operators") or file.get("operators") or file.get("operator") or []
    )
    if isinstance(operators, str):
        operators = [operators]
    node_tables = list(file.get("node", []))
    count = sources.pick("nodes")
    check_count("--nodes", count)  # 0 would silently mean "the default", -2 a budget error
    given = (*operators, *(str(table.get("operator", "")) for table in node_tables))
    named = plugins.manager.hook.dei_default_nodes(
        domain=domain, options=dict(domain_options), operators=tuple(filter(None, given))
    )
    if not operators and not node_tables:
        if named is not None and named.nodes:
            return [], _default_node_tables(named, count, sources), count
        operators = default_operators(plugins, domain)
        count = count or DEFAULT_NODES
    return operators, node_tables, count


def _default_node_tables(
    named: DefaultNodes, count: int | None, sources: Sources
) -> list[Mapping[str, Any]]:
    """The task's nodes as ``[[node]]`` tables: cycled over ``--nodes`` (which may not be
    fewer: a model would be dropped unsaid), ``--api-base`` over their own ``api_base``."""
    tables = [dict(table) for table in named.nodes]
    if count is not None and count < len(tables):
        raise ConfigError(
            f"--nodes {count} is fewer than the {len(tables)} nodes {named.source} names "
            f"(one each): give --nodes {len(tables)} or more, or choose with --operator"
        )
    if sources.mine("api_base"):
        for table in tables:
            table.pop("api_base", None)
    return [tables[index % len(tables)] for index in range(count or len(tables))]


def _axes(axes: Any) -> tuple[str, ...]:
    """``--axes a,b`` or a file's list, as axis names."""
    axes = axes or ()
    if isinstance(axes, str):
        return tuple(a.strip() for a in axes.split(",") if a.strip())
    if not isinstance(axes, list | tuple) or not all(isinstance(a, str) for a in axes):
        raise ConfigError(
            f"--axes takes axis names (comma-separated, or a list of strings in a "
            f"config file), got {axes!r}"
        )
    return axes


def _warn_off_protocol(sources: Sources) -> None:
    """Warns about the user's values over the preset's (the run leaves its protocol)."""
    assert sources.preset is not None
    chosen: dict[str, Any] = {name: sources.mine(name) for name in sources.preset.settings}
    chosen["domain_options"] = {
        **sources.file.get("domain_options", {}),
        **key_values(sources.flags.get("domain_option") or (), ""),
    }
    warn_overrides(sources.preset, overridden(sources.preset, chosen))


def apply_plugin_options(
    plugins: PluginRegistry,
    tables: dict[str, dict[str, Any]],
    value_of: Callable[[str], Any],
    *,
    skip: Collection[str] = (),
) -> None:
    """Stores the value of every option plugins add (``--human-set`` ...) in its table."""
    for name, entry in plugins.run_options.items():
        if name not in skip:
            entry.spec.apply(value_of(name), tables)


def apply_key_values(tables: dict[str, dict[str, Any]], flags: Mapping[str, Any]) -> None:
    """``--domain-option`` and ``--transport-option`` values over their tables' keys."""
    tables["domain_options"].update(key_values(flags.get("domain_option") or (), "--domain-option"))
    tables["transport_options"].update(
        key_values(flags.get("transport_option") or (), "--transport-option")
    )


def with_option_flags(
    config: RunConfig, flags: Mapping[str, Any], plugins: PluginRegistry
) -> RunConfig:
    """``config`` with the option flags of ``dei node`` over it (plugins' options and
    ``--transport-option``, as :func:`resolve_config` puts them over a file's)."""
    tables = {
        "transport_options": dict(config.transport_options),
        "domain_options": dict(config.domain_options),
        "sharing_options": dict(config.sharing_options),
        "operator_options": {},
        "evaluator_options": dict(config.evaluator_options),
    }
    apply_plugin_options(plugins, tables, flags.get)
    apply_key_values(tables, flags)
    return attrs.evolve(
        config,
        transport_options=tables["transport_options"],
        domain_options=tables["domain_options"],
        sharing_options=tables["sharing_options"],
        evaluator_options=tables["evaluator_options"],
        nodes=tuple(
            attrs.evolve(node, options={**node.options, **tables["operator_options"]})
            for node in config.nodes
        ),
    )


def default_operators(plugins: PluginRegistry, domain: str) -> list[str]:
    """The offline operators that work with ``domain`` (the offline default ensemble)."""
    names = [
        name
        for name, entry in sorted(plugins.operators.items())
        if entry.spec.offline
        and entry.spec.default
        and (not entry.spec.domains or domain in entry.spec.domains)
    ]
    if not names:
        raise ConfigError(
            f"no offline operator is registered for domain {domain!r}; give one with --operator"
        )
    return names


def key_values(pairs: tuple[str, ...], flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` flags into a dict; values parse as JSON where they can (numbers, bools)."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"{flag} takes KEY=VALUE, got {pair!r}")
        try:
            options[key.replace("-", "_")] = json.loads(value)
        except json.JSONDecodeError:
            options[key.replace("-", "_")] = value
    return options
