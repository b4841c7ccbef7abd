"""An experiment's plan: its conditions, budget and repeats (``experiment.json``).

A :class:`Condition` is one arm (Solo, Homo, Diverse or a custom list of operators, one per
node); an :class:`ExperimentPlan` runs every condition ``repeats`` times with the same total
budget (DEI's equal-compute protocol), repeat ``k`` of every condition with seed ``seed + k``.
The checks here refuse budgets that would split unequally. Running a plan is
:mod:`dei_framework.experiment.runner`; ``dei experiment`` builds one from its flags
(:mod:`dei_framework.app.cli_experiment`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from dei_framework.contract.errors import ConfigError, DEIError
from dei_framework.runtime.config.checks import split_endpoint
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.files.run_files import config_from_json, damaged, field, read_json
from dei_framework.runtime.files.run_layout import EXPERIMENT_FILE

#: The built-in conditions, in report order, each with what it runs (``dei experiment --help``
#: and the unknown-condition message list them from here; :func:`_named_conditions` builds them).
BUILTIN_CONDITIONS: dict[str, str] = {
    "solo": "one node, the first operator",
    "homo": "every node the same operator, one condition per distinct operator",
    "diverse": "the operators cycled over the nodes",
    "sample": "the diverse nodes, or homo's with one operator, every call from scratch",
    "homo-temp": "the first operator on every node, its temperature or strength spread across them",
    "adaptive": "diverse with --allocation bandit",
}
#: What runs when neither ``--conditions`` nor ``--condition`` is given (the paper's three);
#: the others are baselines and variants, on request only.
DEFAULT_CONDITIONS = ("solo", "homo", "diverse")
#: Nodes of Homo and Diverse when ``--nodes`` is not given (the DEI paper's four).
DEFAULT_EXPERIMENT_NODES = 4
#: Version of ``experiment.json`` and of the experiment ``summary.json``.
EXPERIMENT_VERSION = 1


@attrs.frozen(kw_only=True)
class Condition:
    """One arm of an experiment.

    Attributes:
        name: Condition name (``solo``, ``homo``, ``diverse`` or a custom name); also the
            folder name of its runs.
        operators: The operator of each node, in node order (its length is the node count).
        settings: Run settings of this condition over the base configuration (``sample``:
            ``new_fraction`` 1; ``adaptive``: ``allocation``); never the budget.
        node_options: Per node, operator options over the base ones (``homo-temp``'s
            ladder); empty, or one mapping per node.
    """

    name: str
    operators: tuple[str, ...] = attrs.field(converter=tuple)
    settings: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    node_options: tuple[Mapping[str, Any], ...] = attrs.field(
        default=(), converter=lambda value: tuple(dict(v) for v in value)
    )

    def __attrs_post_init__(self) -> None:
        if self.node_options and len(self.node_options) != len(self.operators):
            raise ConfigError(
                f"condition {self.name!r}: node options for "
                f"{len(self.node_options)} nodes, operators for "
                f"{len(self.operators)}"
            )
        touched = set(self.settings) & {"budget", "iterations", "nodes", "seed", "max_cost_usd"}
        if touched:  # equal compute is the plan's, never a condition's
            raise ConfigError(f"condition {self.name!r} may not set {sorted(touched)}")

    @property
    def nodes(self) -> int:
        return len(self.operators)

    @property
    def folder(self) -> str:
        """The folder of its runs: the name with ``:`` as ``-`` and ``/`` (from model strings) as
        ``_``, so that it is a valid file name everywhere (``homo:openai/gpt-4.1`` ->
        ``homo-openai_gpt-4.1``)."""
        return self.name.replace(":", "-").replace("/", "_")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "operators": list(self.operators)}
        # Only when set: the plans of solo / homo / diverse are recorded as they always were.
        if self.settings:
            data["settings"] = dict(self.settings)
        if self.node_options:
            data["node_options"] = [dict(options) for options in self.node_options]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Condition:
        return cls(
            name=data["name"],
            operators=data["operators"],
            settings=data.get("settings") or {},
            node_options=data.get("node_options") or (),
        )


@attrs.frozen(kw_only=True)
class ExperimentPlan:
    """Everything an experiment runs, recorded as ``experiment.json``.

    Attributes:
        base: The resolved ``dei-run`` configuration conditions derive from (its ``nodes``
            carry each operator's options; its ``budget`` is the per-condition budget).
        conditions: The conditions, in order.
        budget: Total operator calls of every condition (identical by construction).
        repeats: Repeats per condition; repeat ``k`` uses seed ``base.seed + k``.
        preset: The ``--preset`` the plan was built with, if any (recorded, not re-applied).
    """

    base: RunConfig
    conditions: tuple[Condition, ...] = attrs.field(converter=tuple)
    budget: int
    repeats: int
    preset: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.repeats < 1:
            raise ConfigError(f"--repeats must be at least 1, got {self.repeats}")
        if not self.conditions:
            raise ConfigError("an experiment needs at least one condition")
        names = [c.name for c in self.conditions]
        if len(set(names)) != len(names):
            raise ConfigError(f"condition names repeat: {names}")
        folders = [c.folder for c in self.conditions]
        if len(set(folders)) != len(folders):
            raise ConfigError(f"condition folders repeat: {folders}")
        if self.base.compute_axis == "tokens":
            check_equal_token_split(self.budget, self.conditions, self.base.iterations)
        else:
            check_equal_split(self.budget, self.conditions, self.base.rounds)

    def seed(self, repeat: int) -> int:
        return self.base.seed + repeat

    def run_config(self, condition: Condition, repeat: int) -> RunConfig:
        """The run configuration of one repeat of one condition."""
        options = {node.operator: dict(node.options) for node in reversed(self.base.nodes)}
        common = dict(self.base.nodes[0].options)
        extra = condition.node_options or ({},) * condition.nodes
        nodes = tuple(
            NodeConfig(
                name=f"node-{index}",
                operator=operator,
                options={**options.get(operator, common), **extra[index]},
            )
            for index, operator in enumerate(condition.operators)
        )
        config = attrs.evolve(self.base, **condition.settings)
        config = attrs.evolve(
            config,
            nodes=nodes,
            budget=self.budget,
            iterations=self.call_bound(condition),
            seed=self.seed(repeat),
            common_ground=True,
        )
        # The protocol itself: every condition gets exactly the same total budget on the
        # compute axis (a real check, not ``assert``: it must hold under ``python -O`` too).
        total, expected = config.compute_limit(), self.base.compute_limit()
        if config.compute_axis == "calls":
            expected = self.budget
        if total != expected or config.budget != self.budget:
            raise ConfigError(
                f"equal compute violated: condition {condition.name!r} would get {total} "
                f"{config.compute_axis}, not {expected}"
            )
        return config

    def call_bound(self, condition: Condition) -> int | None:
        """On the ``tokens`` axis, each node's calls per round at most (``iterations``).

        ``--iterations`` is the bound of a node in the condition with the most nodes; a node
        of a smaller condition has a proportionally larger token share and gets a
        proportionally larger bound, so that the same kind of limit (tokens) ends every node
        (as on the ``calls`` axis Solo's one node makes as many calls as all of Homo's).
        ``None`` on the other axes, where ``budget`` bounds the calls.
        """
        if self.base.compute_axis != "tokens":
            return None
        largest = max(c.nodes for c in self.conditions)
        return self.base.iterations * largest // condition.nodes

    def run_dir(self, out: Path, condition: Condition, repeat: int) -> Path:
        return out / condition.folder / f"repeat-{repeat}"

    def to_json(self) -> dict[str, Any]:
        return {
            "version": EXPERIMENT_VERSION,
            "base": self.base.to_json(),
            "conditions": [c.to_json() for c in self.conditions],
            "budget": self.budget,
            "repeats": self.repeats,
            "preset": self.preset,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExperimentPlan:
        return cls(
            base=RunConfig.from_json(data["base"]),
            conditions=tuple(Condition.from_json(c) for c in data["conditions"]),
            budget=int(data["budget"]),
            repeats=int(data["repeats"]),
            preset=data.get("preset"),
        )


def check_equal_split(budget: int, conditions: Sequence[Condition], rounds: int) -> None:
    """Checks that ``budget`` splits into whole, equal per-node and per-round call quotas in
    every condition.

    Raises:
        ConfigError: it does not (equal compute would then hold only approximately); the
            message names the smallest budget step that works for every condition.
    """
    step = math.lcm(*(c.nodes * rounds for c in conditions))
    for condition in conditions:
        per_node, rest = divmod(budget, condition.nodes)
        if per_node < 1 or rest:
            problem = f"across the {condition.nodes} nodes of condition {condition.name!r}"
        elif per_node % rounds:
            problem = (
                f"across {rounds} rounds ({per_node} calls per node in condition "
                f"{condition.name!r})"
            )
        else:
            continue
        raise ConfigError(
            f"--budget {budget} does not split equally {problem}; use a multiple "
            f"of {step} (nodes x rounds of every condition)"
        )


TOKENS_NEED_ITERATIONS = (
    "--compute-axis tokens needs --iterations (calls per node per round "
    "at most, for a node of the largest condition)"
)


def check_equal_token_split(
    budget: int, conditions: Sequence[Condition], iterations: int | None
) -> None:
    """On the ``tokens`` axis: checks that ``budget`` tokens split into equal node shares, and
    the call bound ``iterations`` scales to a whole number per node, in every condition.

    Raises:
        ConfigError: it does not; the message names a value that works.
    """
    if iterations is None:
        raise ConfigError(TOKENS_NEED_ITERATIONS)
    step = math.lcm(*(c.nodes for c in conditions))
    largest = max(c.nodes for c in conditions)
    for condition in conditions:
        if budget % condition.nodes or budget < condition.nodes:
            raise ConfigError(
                f"--budget {budget} tokens does not split equally across the "
                f"{condition.nodes} nodes of condition {condition.name!r}; use a "
                f"multiple of {step}"
            )
        if iterations * largest % condition.nodes:
            raise ConfigError(
                f"--iterations {iterations} does not scale to whole calls per round for the "
                f"{condition.nodes} nodes of condition {condition.name!r} ({iterations} x "
                f"{largest} / {condition.nodes}); use a multiple of "
                f"{step // math.gcd(step, largest)}"
            )


def ladder(low: float, high: float, nodes: int) -> list[float]:
    """``nodes`` values spread evenly from ``low`` to ``high`` (one node: the midpoint).

    Example:
        >>> ladder(0.5, 2.0, 4)
        [0.5, 1.0, 1.5, 2.0]
    """
    if nodes == 1:
        return [round((low + high) / 2, 6)]
    return [round(low + (high - low) * i / (nodes - 1), 6) for i in range(nodes)]


def parse_conditions(
    names: Sequence[str],
    custom: Sequence[str],
    operators: Sequence[str],
    nodes: int,
    *,
    registry: Any = None,
) -> list[Condition]:
    """Builds the conditions from ``--conditions`` names and ``--condition NAME=op,op`` specs.

    Args:
        names: Built-in condition names (the keys of :data:`BUILTIN_CONDITIONS`).
        custom: ``NAME=op1,op2,...`` specs, one node per listed operator.
        operators: The operators given: Solo uses the first; Homo is ``homo`` with one distinct
            operator, else one ``homo:<operator>`` condition per distinct operator; Diverse
            cycles them; ``sample`` cycles them too (or repeats the only one), every call
            from scratch (``new_fraction`` 1); ``homo-temp`` puts the first on every node with
            its ladder option spread across the nodes; ``adaptive`` is Diverse with
            ``--allocation bandit``.
        nodes: Node count of Homo, Diverse and the conditions derived from them.
        registry: The loaded plugins (``homo-temp`` reads the operator's ladder from its
            :class:`~dei_framework.contract.operators.OperatorSpec`).

    Raises:
        ConfigError: an unknown condition, a malformed spec, Diverse (or ``adaptive``) with one
            operator, or ``homo-temp`` for an operator without a ladder option.
    """
    if nodes < 1:
        raise ConfigError(f"--nodes must be at least 1, got {nodes}")
    cycled = [operators[i % len(operators)] for i in range(nodes)]
    conditions: list[Condition] = []
    for name in names:
        conditions += _named_conditions(name, operators, cycled, nodes, registry)
    conditions += [_custom_condition(spec) for spec in custom]
    return conditions


def _named_conditions(
    name: str, operators: Sequence[str], cycled: list[str], nodes: int, registry: Any
) -> list[Condition]:
    """The conditions a built-in name stands for (``homo`` is one per distinct operator);
    ``cycled`` is ``operators`` repeated over the ``nodes`` (see :func:`parse_conditions`)."""
    if name == "solo":
        return [Condition(name="solo", operators=[operators[0]])]
    if name == "homo":
        distinct = list(dict.fromkeys(operators))
        if len(distinct) == 1:
            return [Condition(name="homo", operators=[operators[0]] * nodes)]
        return [
            Condition(name=f"homo:{operator}", operators=[operator] * nodes)
            for operator in distinct
        ]
    if name == "diverse":
        if len(set(operators)) < 2:
            raise ConfigError(
                "condition 'diverse' needs at least two different operators: give "
                "--operator more than once (e.g. --operator gp --operator templates)"
            )
        return [
            Condition(
                name="diverse", operators=[operators[i % len(operators)] for i in range(nodes)]
            )
        ]
    if name == "adaptive":
        if len(set(operators)) < 2:
            raise ConfigError(
                "condition 'adaptive' (Diverse with --allocation bandit) needs "
                "at least two different operators: give --operator more "
                "than once"
            )
        return [Condition(name="adaptive", operators=cycled, settings={"allocation": "bandit"})]
    if name == "sample":
        # Best-of-N at equal compute: the same operators, no parent ever (is the
        # evolution doing anything?).
        return [Condition(name="sample", operators=cycled, settings={"new_fraction": 1.0})]
    if name == "homo-temp":
        return [_homo_temp(operators[0], nodes, registry)]
    raise ConfigError(
        f"unknown condition {name!r}; built-in: {', '.join(BUILTIN_CONDITIONS)} "
        "(define others with --condition NAME=op1,op2,...)"
    )


def _custom_condition(spec: str) -> Condition:
    """The condition of a ``--condition NAME=op1,op2,...`` spec (one node per operator)."""
    name, sep, listed = spec.partition("=")
    name = name.strip()
    ops = [op.strip() for op in listed.split(",") if op.strip()]
    if not sep or not name or not ops:
        raise ConfigError(
            f"--condition takes NAME=op1,op2,... (one node per operator), got {spec!r}"
        )
    if "/" in name or name.startswith("."):
        raise ConfigError(f"condition name {name!r} must be usable as a folder name")
    with_endpoint = next((op for op in ops if split_endpoint(op)[1] is not None), None)
    if with_endpoint is not None:
        # A condition's nodes take each operator's options (its endpoint included) from
        # --operator; one given here would reach no node.
        operator, url = split_endpoint(with_endpoint)
        raise ConfigError(
            f"--condition {name}: give the endpoint with --operator {operator}@{url} and "
            f"name the operator here as {operator}"
        )
    return Condition(name=name, operators=ops)


def _homo_temp(operator: str, nodes: int, registry: Any) -> Condition:
    """One operator on every node, its ladder option (temperature, mutation strength) spread
    from low on the first node to high on the last: diversity from one source only."""
    if registry is None:
        raise ConfigError(
            "condition 'homo-temp' needs the loaded plugins (the operator's ladder option)"
        )
    spec = registry.operator(operator)
    if not spec.ladder_option:
        raise ConfigError(
            f"condition 'homo-temp': operator {operator!r} has no temperature or "
            "strength option to spread across the nodes; put one that has "
            "(see `dei plugins`) first"
        )
    low, high = spec.ladder_range
    return Condition(
        name="homo-temp",
        operators=[operator] * nodes,
        node_options=[{spec.ladder_option: value} for value in ladder(low, high, nodes)],
    )


def load_plan(out: Path) -> ExperimentPlan:
    """Reads ``experiment.json`` of an experiment directory.

    Raises:
        ConfigError: ``out`` holds no experiment, or its ``experiment.json`` is damaged.
    """
    path = Path(out) / EXPERIMENT_FILE
    if not path.exists():
        raise ConfigError(f"{out} is not an experiment directory (no experiment.json)")
    data = read_json(path)
    unknown = sorted(set(data) - {"version", *(f.name for f in attrs.fields(ExperimentPlan))})
    if unknown:
        raise damaged(path, f"unknown key {unknown[0]} (a file of another version?)")
    if "version" in data:
        field(path, data, "version", int)
    config_from_json(path, field(path, data, "base", dict), "base.")
    field(path, data, "budget", int)
    field(path, data, "repeats", int)
    field(path, data, "conditions", list)
    if "preset" in data:
        field(path, data, "preset", (str, type(None)))
    try:
        return ExperimentPlan.from_json(data)
    except DEIError as exc:
        raise damaged(path, str(exc)) from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise damaged(path, f"{type(exc).__name__}: {exc}") from None
