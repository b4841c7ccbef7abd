"""The run's configuration record: :class:`RunConfig`, each field carrying its config key, flag
and help (:mod:`.settings`), and what is derived from them (the known config keys, the
defaults). Its parts live beside it: :class:`NodeConfig` and the ``config.json`` form
(:mod:`.record`), the checks (:mod:`.checks`), the budget arithmetic
(:mod:`dei_framework.runtime.budget.usage`).

:mod:`dei_framework.runtime.config.resolve` resolves flags, a config file and a preset into a
``RunConfig``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from dei_framework.contract.domain import LIFECYCLES
from dei_framework.runtime.budget import usage as budget_arithmetic
from dei_framework.runtime.config import record
from dei_framework.runtime.config.checks import DELIVERIES, check_config
from dei_framework.runtime.config.checks import members as _members
from dei_framework.runtime.config.checks import positive as _positive
from dei_framework.runtime.config.checks import seconds as _seconds
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.settings import (
    CONFIG_TABLES,
    NOT_FIELDS,
    RUN,
    SHARE,
    SPEND,
    WHERE,
    Setting,
    of_fields,
    setting,
)

#: Nodes of the offline default run (operators cycled).
DEFAULT_NODES = 4


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
        selector: Parent selector name (how parents are chosen).
        selector_options: Options of the parent selector (``[selector_options]`` table).
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
        eval_file_size: Largest file per candidate in MB (``None``: 64; 0: no limit).
        eval_processes: Processes per candidate at once (``None``: 64; 0: no limit).
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

    domain: str = attrs.field(
        metadata=setting("--domain", RUN, "Search domain (see `dei plugins`).")
    )
    transport: str = attrs.field(
        default="inmemory",
        metadata=setting(
            "--transport", SHARE, "How nodes share champions: inmemory (default) or axl."
        ),
    )
    nodes: tuple[NodeConfig, ...] = attrs.field(
        converter=tuple,
        metadata=setting(
            "--nodes",
            RUN,
            "Number of nodes (default: one per --operator; "
            f"{DEFAULT_NODES} for the offline default).",
            type=int,
        ),
    )
    rounds: int = attrs.field(
        default=3,
        validator=_positive("--rounds"),
        metadata=setting(
            "--rounds",
            SPEND,
            "Rounds per node (default 3): Red Queen rounds (reset lifecycle) or "
            "migration intervals (continual).",
            type=int,
        ),
    )
    budget: int | None = attrs.field(
        default=None,
        validator=_positive("--budget"),
        metadata=setting(
            "--budget", SPEND, "Total operator calls, split equally across nodes.", type=int
        ),
    )
    iterations: int | None = attrs.field(
        default=None,
        validator=_positive("--iterations"),
        metadata=setting(
            "--iterations",
            SPEND,
            "Operator calls per node per round (instead of --budget).",
            type=int,
        ),
    )
    seed: int = attrs.field(
        default=0,
        validator=_positive("--seed", None),
        metadata=setting("--seed", SPEND, "Run seed (default 0).", type=int),
    )
    sharing: str = attrs.field(
        default="champion",
        metadata=setting("--sharing", SHARE, "Champion-sharing policy (default: champion)."),
    )
    sharing_options: Mapping[str, Any] = attrs.field(factory=dict)
    axes: tuple[str, ...] = attrs.field(
        default=(),
        converter=tuple,
        metadata=setting("--axes", RUN, "Comma-separated descriptor axes (default: the domain's)."),
    )
    selector: str = attrs.field(
        default="uniform",
        metadata=setting(
            "--selector", RUN, "How parents are chosen (default: uniform; see `dei plugins`)."
        ),
    )
    selector_options: Mapping[str, Any] = attrs.field(factory=dict)
    archive: str = attrs.field(
        default="grid",
        metadata=setting("--archive", RUN, "Archive kind (default: grid; cvt for 3+ axes)."),
    )
    archive_options: Mapping[str, Any] = attrs.field(factory=dict)
    new_fraction: float = attrs.field(
        default=0.1,
        metadata=setting(
            "--new-fraction",
            RUN,
            "Share of calls that write a program from scratch (default 0.1).",
            type=float,
        ),
    )
    lifecycle: str = attrs.field(
        default="",
        metadata=setting(
            "--lifecycle",
            SPEND,
            "Archive lifecycle (default: the domain's): reset starts a fresh "
            "archive each round (Red Queen); continual keeps it (a round is a migration interval).",
            choices=LIFECYCLES,
        ),
    )
    lag: int | None = attrs.field(
        default=None,
        validator=_positive("--lag", 0),
        metadata=setting(
            "--lag",
            RUN,
            "How far parent choice may run ahead of admission, in slots (default: 6 x "
            "the operator's concurrency; 0: one call at a time).",
            type=int,
            metavar="SLOTS",
        ),
    )
    max_champions: int = attrs.field(
        default=20,
        validator=_positive("--max-champions", 0),
        metadata=setting(
            "--max-champions",
            RUN,
            "A node's own recent champions kept as opponents (default 20).",
            type=int,
        ),
    )
    max_peer_champions: int = attrs.field(
        default=20,
        validator=_positive("--max-peer-champions", 0),
        metadata=setting(
            "--max-peer-champions",
            RUN,
            "Received champions kept as opponents (default 20).",
            type=int,
        ),
    )
    eval_workers: int | None = attrs.field(
        default=None,
        validator=_positive("--eval-workers", 0),
        metadata=setting(
            "--eval-workers",
            WHERE,
            "Evaluation worker processes (default: one per core; 0: in-process).",
            type=int,
        ),
    )
    evaluator: str = attrs.field(
        default="local",
        metadata=setting(
            "--evaluator",
            WHERE,
            "Where evaluations run: local (a process pool, the default), dask "
            "(a Dask cluster), or a plugin's backend; results are the same on every one.",
            metavar="NAME",
        ),
    )
    evaluator_address: str | None = attrs.field(
        default=None,
        metadata=setting(
            "--evaluator-address",
            WHERE,
            "The evaluation backend's address, e.g. the Dask "
            "scheduler tcp://host:8786 (default: a local cluster started for the run).",
            metavar="ADDRESS",
        ),
    )
    evaluator_options: Mapping[str, Any] = attrs.field(factory=dict)
    sandbox: str = attrs.field(
        default="",
        metadata=setting(
            "--sandbox",
            WHERE,
            "How candidates are isolated: none (in the evaluation worker), "
            "process (each in its own child process), isolated (as process, inside bubblewrap: "
            "read-only files, no network). Default: process for domains that execute code, none "
            "otherwise.",
            choices=("none", "process", "isolated"),
        ),
    )
    eval_timeout: float | None = attrs.field(
        default=None,
        metadata=setting(
            "--eval-timeout",
            WHERE,
            "Wall-clock limit per candidate; one over it is invalid "
            '("timeout after N s"). Default: the domain\'s, else none.',
            type=float,
            metavar="SECONDS",
        ),
    )
    eval_memory: int | None = attrs.field(
        default=None,
        metadata=setting(
            "--eval-memory",
            WHERE,
            "Memory limit per candidate (address space it may add, in MB); "
            "one over it is invalid. Default: the domain's, else none.",
            type=int,
            metavar="MB",
        ),
    )
    eval_file_size: int | None = attrs.field(
        default=None,
        metadata=setting(
            "--eval-file-size",
            WHERE,
            "Largest file a candidate may write, in MB; a write past it makes the candidate "
            "invalid. Default: 64; 0: no limit.",
            type=int,
            metavar="MB",
        ),
    )
    eval_processes: int | None = attrs.field(
        default=None,
        metadata=setting(
            "--eval-processes",
            WHERE,
            "Processes a candidate may have at once, itself included; one with more is "
            "killed and invalid. Default: 64; 0: no limit.",
            type=int,
            metavar="N",
        ),
    )
    domain_options: Mapping[str, Any] = attrs.field(factory=dict)
    transport_options: Mapping[str, Any] = attrs.field(factory=dict)
    delivery: str = attrs.field(
        default="auto",
        metadata=setting(
            "--delivery",
            SHARE,
            "Champion delivery: virtual time (deterministic; the default in "
            "one process) or wallclock (as the transport delivers; default across processes).",
            choices=DELIVERIES,
        ),
    )
    checkpoint_seconds: float = attrs.field(
        default=2.0,
        validator=_seconds("--checkpoint-seconds"),
        metadata=setting(
            "--checkpoint-seconds",
            WHERE,
            "Minimum seconds between in-round checkpoints (default 2).",
            type=float,
            metavar="SECONDS",
        ),
    )
    array_path: bool = attrs.field(
        default=True,
        metadata=setting(
            "--array-path/--no-array-path",
            WHERE,
            "Let offline array operators skip program texts "
            "and call records when the domain has an array form (default: on; same results).",
            default=None,
        ),
    )
    common_ground: bool = attrs.field(
        default=False,
        metadata=setting(
            "--common-ground",
            WHERE,
            "Re-evaluate merged-archive elites and champions against the "
            "domain's reference set (always on in experiments).",
            is_flag=True,
            default=None,
        ),
    )
    common_seeds: int = attrs.field(
        default=5,
        validator=_positive("--common-seeds"),
        metadata=setting(
            "--common-seeds",
            WHERE,
            "Fresh seeds each common-ground winner and champion is "
            "scored on; its common-ground fitness is their mean (default 5).",
            type=int,
        ),
    )
    members: tuple[str, ...] = attrs.field(
        default=(),
        converter=lambda v: _members(v),
        metadata=setting(
            "--member",
            WHERE,
            "A member of a closed run: a node's name and its ed25519 public "
            "key (64 hex), repeatable; champions from anyone else are dropped.",
            multiple=True,
            metavar="NAME=KEY",
        ),
    )
    compute_axis: str = attrs.field(
        default="calls",
        metadata=setting(
            "--compute-axis",
            SPEND,
            "What equal compute is measured on (default calls, as in the "
            "paper): --budget counts calls or tokens; for cost, --max-cost-usd is the budget.",
            choices=("calls", "tokens", "cost"),
        ),
    )
    max_cost_usd: float | None = attrs.field(
        default=None,
        metadata=setting(
            "--max-cost-usd",
            SPEND,
            "Hard money cap of the run in USD, split equally across nodes; "
            "every attempt reserves its worst-case cost first.",
            type=float,
        ),
    )
    max_attempts_per_node: int | None = attrs.field(
        default=None,
        validator=_positive("--max-attempts-per-node"),
        metadata=setting(
            "--max-attempts-per-node",
            SPEND,
            "Hard cap on each node's attempts, retries and failures included.",
            type=int,
        ),
    )
    max_attempts_per_call: int | None = attrs.field(
        default=None,
        validator=_positive("--max-attempts-per-call"),
        metadata=setting(
            "--max-attempts-per-call", SPEND, "Most attempts one operator call may make.", type=int
        ),
    )
    allocation: str = attrs.field(
        default="static",
        metadata=setting(
            "--allocation",
            SHARE,
            "Budget allocator (default: static, equal shares; bandit moves "
            "the budget left to the nodes that add cells; see `dei plugins`).",
        ),
    )
    allocation_options: Mapping[str, Any] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        check_config(self)

    @property
    def node_names(self) -> list[str]:
        return [node.name for node in self.nodes]

    def node_quotas(self) -> dict[str, int]:
        """Calls per node: the budget split equally, or iterations x rounds (on a ``tokens``
        axis, where ``budget`` counts tokens, always the latter)."""
        return budget_arithmetic.node_quotas(self)

    def node_caps(self) -> dict[str, Any]:
        """Each node's token, money and attempt caps (:class:`~.budget.NodeCaps`): the run's
        token budget and money cap split equally, like calls."""
        return budget_arithmetic.node_caps(self)

    def compute_limit(self) -> float | None:
        """The run's total budget on its compute axis."""
        return budget_arithmetic.compute_limit(self)

    def to_json(self) -> dict[str, Any]:
        return record.to_json(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunConfig:
        return record.from_json(cls, data)


#: Every setting, by key: ``RunConfig``'s fields' and those that are no field, in the order
#: of the fields.
SETTINGS: dict[str, Setting] = {item.key: item for item in (*of_fields(RunConfig), *NOT_FIELDS)}
#: Every key a configuration file may hold at its top level (plugins' options besides): each
#: setting's (``operator`` too, for ``operators``) and the option tables.
CONFIG_KEYS = CONFIG_TABLES | {key for item in SETTINGS.values() for key in item.keys}
#: Defaults of ``dei-run`` options that a config file may also set: :class:`RunConfig`'s own
#: plain defaults (one place: a default changed there is the flag's default too).
DEFAULTS: dict[str, Any] = {
    field.name: field.default
    for field in attrs.fields(RunConfig)
    if field.default is not attrs.NOTHING
    and not isinstance(field.default, attrs.Factory)
    and field.default not in (None, "", ())
}
