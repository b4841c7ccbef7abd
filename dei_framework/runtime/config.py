"""Run configuration: every ``dei-run`` option, from a TOML file and flags (flags win).

:func:`resolve_config` turns ``dei-run`` / ``dei experiment`` flags (core and plugin ones) plus
a ``--config`` file into a :class:`RunConfig`.
"""

from __future__ import annotations

import json
import numbers
import secrets
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from dei_framework.contract.domain import LIFECYCLES
from dei_framework.contract.errors import ConfigError
from dei_framework.evaluation.sandbox.policy import check_options as check_sandbox_options
from dei_framework.runtime.endpoints import check_shared_api_base, split_endpoint
from dei_framework.runtime.presets import get_preset, overridden, warn_overrides

if TYPE_CHECKING:
    from dei_framework.contract.registry import PluginRegistry


def check_count(name: str, value: Any, minimum: int | None = 1) -> None:
    """Refuses a count that is not a whole number of at least ``minimum`` (``None`` passes:
    the option was not given).

    A TOML file can hold any type where a flag holds an int: ``true`` (a bool is an int to
    Python, and would count as 1) or ``"ten"`` must be refused by name, not crash later.

    Raises:
        ConfigError: Naming the option and the value.
    """
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{name} must be a whole number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")


def _positive(name: str, minimum: int | None = 1):
    def check(instance, attribute, value) -> None:
        check_count(name, value, minimum)

    return check


def _seconds(name: str):
    """A validator refusing a duration that is not a number of seconds ≥ 0."""
    def check(instance, attribute, value) -> None:
        if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                or not 0 <= value < float("inf")):
            raise ConfigError(f"{name} must be a number of seconds, at least 0, got {value!r}")

    return check


#: Champion delivery modes (``RunConfig.delivery``, ``--delivery``).
DELIVERIES = ("auto", "virtual", "wallclock")


@attrs.frozen(kw_only=True)
class NodeConfig:
    """One node: its operator and the operator's settings.

    Attributes:
        name: Node name (``node-0`` ...), used in logs, events and the summary.
        operator: ``--operator`` value for this node (an operator name or a model string).
        options: Operator options (``api_base``, ``temperature``, ``max_tokens``, ``timeout``,
            ``concurrency`` ...), node table over global settings.
        emitter: This node's emitter (empty: the run's).
        emitter_options: Options of this node's emitter (``None``: the run's
            ``[emitter_options]``; a table given replaces the run's, it is not merged).
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
    emitter: str = ""
    archive: str = ""
    sharing: str = ""
    axes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    emitter_options: Mapping[str, Any] | None = None
    archive_options: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class RunConfig:
    """Everything a run needs, resolved. Recorded as ``config.json`` in the run directory.

    Attributes:
        domain: Domain name.
        transport: Transport name.
        nodes: The nodes, in order.
        rounds: Rounds per node: Red Queen rounds (``reset``) or migration intervals
            (``continual``).
        budget: Total operator calls across nodes (split equally), or ``None`` with
            ``iterations``.
        iterations: Calls per node per round (the alternative to ``budget``).
        seed: Run seed; every random draw derives from it.
        sharing: Sharing policy name.
        sharing_options: Options of the policy (``[sharing]`` table).
        axes: Descriptor axes of the grid (empty: the domain's default).
        emitter: Emitter name (how parents are chosen).
        emitter_options: Options of the emitter (``[emitter_options]`` table).
        archive: Archive name (``grid``, ``cvt`` ...).
        archive_options: Options of the archive (``[archive_options]`` table).
        new_fraction: Share of calls that write a new program instead of mutating an elite.
        lifecycle: The archive lifecycle: ``"reset"`` (a fresh archive each round, Red Queen
            opponent pool), ``"continual"`` (one archive per node for the whole run; a round
            is a migration interval) or ``""`` (the domain's default,
            :meth:`~dei_framework.contract.domain.Domain.default_lifecycle`; a run records the one
            it used).
        lag: How far parent choice may run ahead of admission, in slots: mutation slot ``s``
            is planned once every slot before ``s - lag`` is admitted (``None``: 6 x the
            operator's concurrency; 0: every parent choice sees all earlier children, so calls
            go one at a time).
        max_champions: Own recent champions kept as opponents (DRQ's k).
        max_peer_champions: Received champions kept as opponents (a separate window, so own
            Red Queen memory is the same in Solo and ensemble runs).
        eval_workers: Worker processes for evaluation (0: threads in this process).
        evaluator: Where evaluations run: an evaluation backend (``local``, ``dask``, or a
            plugin's); every backend gives the same results.
        evaluator_address: The backend's address (for ``dask``, the scheduler,
            ``tcp://host:8786``; ``None``: a local cluster started for the run).
        evaluator_options: Options of a plugin's backend (``[evaluator_options]`` table).
        sandbox: Candidate isolation: ``"none"``, ``"process"``, ``"isolated"`` or ``""`` (the
            domain's default: ``process`` when it executes code or has limits; see
            :mod:`dei_framework.evaluation.sandbox`).
        eval_timeout: Wall-clock seconds per candidate (``None``: the domain's, else none).
        eval_memory: Memory per candidate in MB (``None``: the domain's, else none).
        domain_options: Domain options (``[domain_options]`` table and domain flags).
        transport_options: Transport options (``[transport_options]`` table and flags).
        delivery: How champions reach peers: ``"virtual"`` (by virtual time: deterministic;
            in-process transports only), ``"wallclock"`` (as the transport delivers them) or
            ``"auto"`` (virtual for in-process transports, else wall clock).
        checkpoint_seconds: Minimum seconds between in-round checkpoints.
        array_path: Let a node whose offline operator and domain both have the array form
            (``propose_genomes``, ``evaluate_genomes``) skip program texts and call records
            (docs/performance.md, "The array path"); ``False`` sends every call through text
            and logs it in ``calls.jsonl``. The results are the same either way.
        common_ground: After the run, re-evaluate every merged-archive elite and round
            champion against the domain's reference set (``merged.common`` in the summary;
            always on in experiments).
        common_seeds: Fresh seeds each common-ground winner (the elite kept per cell) and
            each round champion is scored on; its common-ground fitness is the mean over them.
            The cell's winner is chosen on one other measurement, so the reported figure is
            free of the winner's curse (see :mod:`dei_framework.analysis.common_ground`).
        members: The run's membership: entries ``name=key`` (a node's name and its ed25519
            public key, 64 hex: that key may sign only champions under that name, and no other
            key may claim it) or a bare ``key`` (no name bound). Empty: an open run (any
            validly signed champion is considered).
            Champions signed by other keys are dropped and counted (``nonmember``); networked
            transports also drop frames from peers outside it (``rejected_nonmember``).
        compute_axis: What equal compute is measured on: ``calls`` (the paper; ``budget`` counts
            calls), ``tokens`` (``budget`` counts tokens of every billed attempt) or ``cost``
            (``max_cost_usd`` is the budget).
        max_cost_usd: Hard money cap of the run in US dollars, split equally across nodes.
        max_attempts_per_node: Hard cap on each node's attempts (retries and failures included).
        max_attempts_per_call: Most attempts one call may make.
        allocation: How the budget left is shared between nodes at round boundaries: a budget
            allocator (``static``, the equal split fixed at the start; ``bandit``; or a
            plugin's; see :mod:`dei_framework.search.allocation`).
        allocation_options: Options of the allocator (``[allocation_options]`` table).
    """

    domain: str
    transport: str = "inmemory"
    nodes: tuple[NodeConfig, ...] = attrs.field(converter=tuple)
    rounds: int = attrs.field(default=3, validator=_positive("--rounds"))
    budget: int | None = attrs.field(default=None, validator=_positive("--budget"))
    iterations: int | None = attrs.field(default=None, validator=_positive("--iterations"))
    seed: int = attrs.field(default=0, validator=_positive("--seed", None))
    sharing: str = "champion"
    sharing_options: Mapping[str, Any] = attrs.field(factory=dict)
    axes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    emitter: str = "uniform"
    emitter_options: Mapping[str, Any] = attrs.field(factory=dict)
    archive: str = "grid"
    archive_options: Mapping[str, Any] = attrs.field(factory=dict)
    new_fraction: float = 0.1
    lifecycle: str = ""
    lag: int | None = attrs.field(default=None, validator=_positive("--lag", 0))
    max_champions: int = attrs.field(default=20, validator=_positive("--max-champions", 0))
    max_peer_champions: int = attrs.field(default=20,
                                          validator=_positive("--max-peer-champions", 0))
    eval_workers: int | None = attrs.field(default=None, validator=_positive("--eval-workers", 0))
    evaluator: str = "local"
    evaluator_address: str | None = None
    evaluator_options: Mapping[str, Any] = attrs.field(factory=dict)
    sandbox: str = ""
    eval_timeout: float | None = None
    eval_memory: int | None = None
    domain_options: Mapping[str, Any] = attrs.field(factory=dict)
    transport_options: Mapping[str, Any] = attrs.field(factory=dict)
    delivery: str = "auto"
    checkpoint_seconds: float = attrs.field(default=2.0, validator=_seconds("--checkpoint-seconds"))
    array_path: bool = True
    common_ground: bool = False
    common_seeds: int = attrs.field(default=5, validator=_positive("--common-seeds"))
    members: tuple[str, ...] = attrs.field(default=(), converter=lambda v: _members(v))
    compute_axis: str = "calls"
    max_cost_usd: float | None = None
    max_attempts_per_node: int | None = attrs.field(
        default=None, validator=_positive("--max-attempts-per-node")
    )
    max_attempts_per_call: int | None = attrs.field(
        default=None, validator=_positive("--max-attempts-per-call")
    )
    allocation: str = "static"
    allocation_options: Mapping[str, Any] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        from dei_framework.runtime.budget import COMPUTE_AXES

        if not self.nodes:
            raise ConfigError("a run needs at least one node")
        if self.compute_axis not in COMPUTE_AXES:
            raise ConfigError(f"--compute-axis must be one of {', '.join(COMPUTE_AXES)}, "
                              f"got {self.compute_axis!r}")  # fmt: skip
        if self.max_cost_usd is not None and not self.max_cost_usd > 0:
            raise ConfigError(f"--max-cost-usd must be positive, got {self.max_cost_usd}")
        if self.compute_axis == "cost":
            if self.max_cost_usd is None:
                raise ConfigError("--compute-axis cost needs --max-cost-usd (the budget)")
            if (self.budget is None) == (self.iterations is None):
                raise ConfigError("give exactly one of --budget and --iterations (calls at "
                                  "most; --max-cost-usd is the budget)")  # fmt: skip
        elif self.compute_axis == "tokens":
            if self.budget is None or self.iterations is None:
                raise ConfigError("--compute-axis tokens needs --budget (total tokens) and "
                                  "--iterations (calls per node per round at most)")  # fmt: skip
        elif (self.budget is None) == (self.iterations is None):
            raise ConfigError("give exactly one of --budget and --iterations")
        if self.delivery not in DELIVERIES:
            raise ConfigError(f"delivery must be one of {', '.join(DELIVERIES)}, "
                              f"got {self.delivery!r}")  # fmt: skip
        if self.lifecycle and self.lifecycle not in LIFECYCLES:
            raise ConfigError(f"lifecycle must be one of {', '.join(LIFECYCLES)}, "
                              f"got {self.lifecycle!r}")  # fmt: skip
        if not 0.0 <= self.new_fraction <= 1.0:
            raise ConfigError(f"new_fraction must be within [0, 1], got {self.new_fraction}")

    @property
    def node_names(self) -> list[str]:
        return [node.name for node in self.nodes]

    def node_quotas(self) -> dict[str, int]:
        """Calls per node: the budget split equally, or iterations x rounds (on a ``tokens``
        axis, where ``budget`` counts tokens, always the latter)."""
        from dei_framework.runtime.budget import split_budget

        if self.budget is not None and self.compute_axis != "tokens":
            return split_budget(self.budget, self.node_names)
        return {name: self.iterations * self.rounds for name in self.node_names}

    def node_caps(self) -> dict[str, Any]:
        """Each node's token, money and attempt caps
        (:class:`~dei_framework.runtime.budget.NodeCaps`):
        the run's token budget and money cap split equally, like calls."""
        from dei_framework.runtime.budget import NodeCaps, split_budget

        count = len(self.nodes)
        tokens = (split_budget(self.budget, self.node_names)
                  if self.compute_axis == "tokens" else {})  # fmt: skip
        cost = None if self.max_cost_usd is None else self.max_cost_usd / count
        return {
            name: NodeCaps(tokens=tokens.get(name), cost_usd=cost,
                           attempts=self.max_attempts_per_node)
            for name in self.node_names
        }  # fmt: skip

    def compute_limit(self) -> float | None:
        """The run's total budget on its compute axis."""
        if self.compute_axis == "cost":
            return self.max_cost_usd
        if self.compute_axis == "tokens":
            return self.budget
        return sum(self.node_quotas().values())

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self, recurse=True)
        data["nodes"] = [attrs.asdict(node) for node in self.nodes]
        # A static run records the configuration it recorded before allocators existed.
        if data["allocation"] == "static" and not data["allocation_options"]:
            del data["allocation"], data["allocation_options"]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunConfig:
        values = dict(data)
        values["nodes"] = tuple(NodeConfig(**node) for node in data["nodes"])
        values.setdefault("max_peer_champions", values.get("max_champions", 20))
        # A configuration recorded before lifecycles were a choice ran Red Queen rounds.
        values.setdefault("lifecycle", "reset")
        return cls(**values)


def _members(value: Any) -> tuple[str, ...]:
    from dei_framework.net.envelope import EnvelopeError, parse_membership

    try:
        membership = parse_membership(value or None)
        return () if membership is None else membership.entries()
    except EnvelopeError as exc:
        raise ConfigError(f"members: {exc}") from None


#: Options a ``[[node]]`` table may set besides ``operator``.
NODE_OPTION_KEYS = ("api_base", "api_key_env", "temperature", "max_tokens", "timeout",
                    "concurrency", "max_retries", "price")  # fmt: skip


#: Search settings a ``[[node]]`` table may set for its node alone.
NODE_SEARCH_KEYS = ("emitter", "emitter_options", "archive", "archive_options", "sharing", "axes")


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
        operator = table.pop("operator", None) or (operators[index % len(operators)]
                                                   if operators else None)
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
        for key in ("emitter_options", "archive_options"):
            if key in search and not isinstance(search[key], Mapping):
                raise ConfigError(f"[[node]] table {index}: {key} must be a table, "
                                  f"got {search[key]!r}")  # fmt: skip
        nodes.append(NodeConfig(name=name, operator=operator,
                                options={**common_options, **table}, **search))
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
        raise ConfigError(f"config file {path}: out must be a directory path (a string), "
                          f"not {value!r}")  # fmt: skip
    return Path(value)


# --- from flags and a config file -------------------------------------------------------------

#: Defaults of ``dei-run`` options that a config file may also set: :class:`RunConfig`'s own
#: plain defaults (one place: a default changed there is the flag's default too).
DEFAULTS: dict[str, Any] = {
    field.name: field.default for field in attrs.fields(RunConfig)
    if field.default is not attrs.NOTHING and not isinstance(field.default, attrs.Factory)
    and field.default not in (None, "", ())
}
#: Calls per node when neither ``--budget`` nor ``--iterations`` is given.
DEFAULT_CALLS_PER_NODE = 40
#: Nodes of the offline default run (operators cycled).
DEFAULT_NODES = 4


#: Option tables of a configuration file: no flag sets a whole table (``--domain-option``
#: and ``--transport-option`` set one key of theirs).
CONFIG_TABLES = frozenset({"node", "domain_options", "transport_options", "sharing_options",
                           "operator_options", "emitter_options", "archive_options",
                           "evaluator_options", "allocation_options"})  # fmt: skip
#: Every key a configuration file may hold at its top level (plugins' options besides). Each
#: that is not a table is also a ``dei-run`` flag (``new_fraction``: ``--new-fraction``;
#: ``operators``/``operator``: ``--operator``; ``members``: ``--member``).
CONFIG_KEYS = CONFIG_TABLES | {
    "domain", "transport", "nodes", "operator", "operators", "api_base", "budget",
    "iterations", "rounds", "sharing", "axes", "seed", "eval_workers", "new_fraction", "lag",
    "max_champions", "max_peer_champions", "checkpoint_seconds", "out", "emitter", "archive",
    "compute_axis", "max_cost_usd", "max_attempts_per_node", "max_attempts_per_call",
    "common_ground", "common_seeds", "preset", "members", "delivery", "lifecycle", "evaluator",
    "evaluator_address", "array_path", "sandbox", "eval_timeout", "eval_memory", "allocation",
}


def resolve_config(flags: dict[str, Any], plugins: PluginRegistry) -> RunConfig:
    """Merges defaults, the TOML file and flags (in that order of precedence, flags last).

    Flags that plugins add (``dei_run_options``) go to the options table their
    :class:`~dei_framework.contract.cli_options.RunOption` names; ``--domain-option`` and
    ``--transport-option`` override them.

    Raises:
        ConfigError: Unknown config keys, unknown plugin names, invalid values.
    """
    file: dict[str, Any] = load_toml(flags["config_file"]) if flags.get("config_file") else {}
    file = {key.replace("-", "_"): value for key, value in file.items()}
    unknown = set(file) - CONFIG_KEYS - set(plugins.run_options)
    if unknown:
        raise ConfigError(f"config file: unknown keys {sorted(unknown)}")

    preset = get_preset(flags.get("preset") or file.get("preset"))

    def mine(name: str) -> Any:
        value = flags.get(name)
        if value is None or value == ():
            value = file.get(name)
        return value

    def pick(name: str) -> Any:
        value = mine(name)
        if value is None and preset is not None:
            value = preset.settings.get(name)
        return DEFAULTS.get(name) if value is None else value

    domain = pick("domain")
    if not domain:
        raise ConfigError("no domain given: use --domain (see `dei plugins`)")
    check_sandbox_options(pick("sandbox") or "", pick("eval_timeout"), pick("eval_memory"))
    plugins.domain(domain)
    plugins.evaluator(pick("evaluator"))
    plugins.allocator(pick("allocation"))
    operators = list(flags.get("operators") or file.get("operators") or file.get("operator") or [])
    if isinstance(operators, str):
        operators = [operators]
    node_tables = list(file.get("node", []))
    count = pick("nodes")
    check_count("--nodes", count)  # 0 would silently mean "the default", -2 a budget error
    if not operators and not node_tables:
        operators = default_operators(plugins, domain)
        count = count or DEFAULT_NODES
    tables = {target: dict(file.get(target, {})) for target in
              ("domain_options", "transport_options", "sharing_options", "operator_options",
               "evaluator_options")}
    if preset is not None:  # the preset's tables lie under the file's
        tables["domain_options"] = {**preset.domain_options, **tables["domain_options"]}
        tables["operator_options"] = {**preset.operator_options, **tables["operator_options"]}
    for name, entry in plugins.run_options.items():  # flags plugins add (--human-set, ...)
        if name not in CONFIG_KEYS:  # a clash with a core option is left out (and warned about)
            entry.spec.apply(pick(name), tables)
    common = tables["operator_options"]
    if pick("api_base"):
        common["api_base"] = pick("api_base")
    nodes = build_nodes(count=count, operators=operators, node_tables=node_tables,
                        common_options=common)  # fmt: skip
    if pick("transport") != "inmemory" and not any("name" in table for table in node_tables):
        # One node per process across machines: every draw derives from (seed, node name), so
        # identical default names would make same-operator nodes search identically.
        suffix = secrets.token_hex(3)
        nodes = tuple(attrs.evolve(node, name=f"{node.name}-{suffix}") for node in nodes)
    iterations = pick("iterations")
    budget = mine("budget") if iterations is not None else pick("budget")
    if budget is None and iterations is None:
        budget = DEFAULT_CALLS_PER_NODE * len(nodes)
    domain_options = tables["domain_options"]
    domain_options.update(_key_values(flags.get("domain_option") or (), "--domain-option"))
    transport_options = tables["transport_options"]
    transport_options.update(_key_values(flags.get("transport_option") or (),
                                         "--transport-option"))  # fmt: skip
    if preset is not None:
        chosen: dict[str, Any] = {name: mine(name) for name in preset.settings}
        chosen["domain_options"] = {**file.get("domain_options", {}),
                                    **_key_values(flags.get("domain_option") or (), "")}
        warn_overrides(preset, overridden(preset, chosen))
    axes = pick("axes") or ()
    if isinstance(axes, str):
        axes = tuple(a.strip() for a in axes.split(",") if a.strip())
    elif not isinstance(axes, list | tuple) or not all(isinstance(a, str) for a in axes):
        raise ConfigError(f"--axes takes axis names (comma-separated, or a list of strings in a "
                          f"config file), got {axes!r}")  # fmt: skip
    return RunConfig(
        domain=domain, transport=pick("transport"), nodes=nodes, rounds=pick("rounds"),
        budget=budget, iterations=iterations, seed=pick("seed"), sharing=pick("sharing"),
        sharing_options=tables["sharing_options"], axes=axes,
        new_fraction=pick("new_fraction"), lifecycle=pick("lifecycle") or "", lag=pick("lag"),
        max_champions=pick("max_champions"),
        max_peer_champions=pick("max_peer_champions"), emitter=pick("emitter"),
        emitter_options=file.get("emitter_options", {}), archive=pick("archive"),
        archive_options=file.get("archive_options", {}),
        eval_workers=pick("eval_workers"), evaluator=pick("evaluator"),
        evaluator_address=pick("evaluator_address"),
        evaluator_options=tables["evaluator_options"], sandbox=pick("sandbox") or "",
        eval_timeout=pick("eval_timeout"), eval_memory=pick("eval_memory"),
        domain_options=domain_options,
        transport_options=transport_options, checkpoint_seconds=pick("checkpoint_seconds"),
        array_path=bool(pick("array_path")),
        common_ground=bool(pick("common_ground")), common_seeds=pick("common_seeds"),
        members=mine("members") or (),
        compute_axis=pick("compute_axis") or "calls", max_cost_usd=pick("max_cost_usd"),
        max_attempts_per_node=pick("max_attempts_per_node"),
        max_attempts_per_call=pick("max_attempts_per_call"),
        delivery=pick("delivery"), allocation=pick("allocation"),
        allocation_options=dict(file.get("allocation_options", {})),
    )  # fmt: skip


def default_operators(plugins: PluginRegistry, domain: str) -> list[str]:
    """The offline operators that work with ``domain`` (the offline default ensemble)."""
    names = [
        name for name, entry in sorted(plugins.operators.items())
        if entry.spec.offline and entry.spec.default
        and (not entry.spec.domains or domain in entry.spec.domains)
    ]  # fmt: skip
    if not names:
        raise ConfigError(f"no offline operator is registered for domain {domain!r}; "
                          "give one with --operator")  # fmt: skip
    return names


def _key_values(pairs: tuple[str, ...], flag: str) -> dict[str, Any]:
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


