"""``dei plan``: choosing an ensemble's operators from short pilots.

Which operators to combine is an optimisation problem of its own (the DEI paper fixes its four
models; niche novelty differs several-fold between pairs). :func:`plan` runs one short Solo
pilot per candidate operator — all of them together within one stated pilot budget, split
equally — and measures, from the pilots' archives:

* each candidate's **coverage**: the cells its merged archive holds;
* the **pairwise complementarity** of every pair ``(A, B)``: how many of A's round champions
  fall into cells B's archive left empty (and B's into A's), and the coverage of the union of
  their cells;
* for every ``K``-subset, the **expected merged coverage**: the union of its members' cells
  over the grid, per unit of cost (the mean cost per call of its members when every one is
  priced; on an offline or unpriced set every call costs the same, and the union alone
  decides). Ties go to the subset whose members cover more alone, then to the one listed
  first (the candidates' order).

The pick is printed with the commands that run it (``dei-run`` and a ``dei experiment``
condition ``chosen=...``), and everything is written to ``plan.json`` in the output directory.
The pick is a prediction from pilots, not a measurement of the ensemble: run the experiment.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import itertools
import json
import math
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import click

from dei_framework.contract.errors import ConfigError
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.files import run_layout
from dei_framework.runtime.files.run_layout import MERGED_ARCHIVE_FILE, SUMMARY_FILE

if TYPE_CHECKING:
    from dei_framework.contract.registry import PluginRegistry

#: Rounds of a pilot when not given.
PILOT_ROUNDS = 2


@attrs.frozen(kw_only=True)
class Pilot:
    """What one candidate's pilot gave.

    Attributes:
        operator: The candidate operator.
        run_dir: The pilot's run directory.
        cells: The cells of its merged archive.
        champion_cells: The cells of its round champions, round by round (a round won by an
            initial opponent counts its best other elite).
        calls: Calls it spent.
        cost_usd: What they cost (``None``: unknown or unpriced).
        grid: Cells of the grid.
    """

    operator: str
    run_dir: Path
    cells: frozenset[tuple[int, ...]]
    champion_cells: tuple[tuple[int, ...], ...]
    calls: int
    cost_usd: float | None
    grid: int

    @property
    def coverage(self) -> float:
        return len(self.cells) / self.grid if self.grid else 0.0

    @property
    def cost_per_call(self) -> float | None:
        if self.cost_usd is None or not self.calls:
            return None
        return self.cost_usd / self.calls

    @classmethod
    def read(cls, operator: str, run_dir: Path) -> Pilot:
        """A finished pilot's figures, from its run directory."""
        summary = json.loads((run_dir / SUMMARY_FILE).read_text())
        merged = json.loads((run_dir / MERGED_ARCHIVE_FILE).read_text())
        champions = []
        for path in run_layout.round_paths(run_dir):
            entry = json.loads(path.read_text())
            # A round won by an initial opponent (re-evaluated in the warm start) is no work
            # of the operator: its best other elite stands in, as for generality.
            champion = (
                entry.get("generality_champion")
                if entry.get("champion_initial")
                else entry.get("champion")
            )
            if champion and champion.get("cell") is not None:
                champions.append(tuple(champion["cell"]))
        budget = summary["budget"]
        return cls(
            operator=operator,
            run_dir=run_dir,
            cells=frozenset(tuple(entry["cell"]) for entry in merged),
            champion_cells=tuple(champions),
            calls=int(budget["calls"]),
            cost_usd=budget.get("cost_usd"),
            grid=int(summary["space"]["cells"]),
        )


def pairwise(pilots: Sequence[Pilot]) -> list[dict[str, Any]]:
    """Every pair's complementarity: each one's champions in the other's empty cells, and the
    coverage of the union of their cells."""
    rows = []
    for a, b in itertools.combinations(pilots, 2):
        rows.append(
            {
                "a": a.operator,
                "b": b.operator,
                "a_into_b": sum(cell not in b.cells for cell in a.champion_cells),
                "b_into_a": sum(cell not in a.cells for cell in b.champion_cells),
                "union_coverage": len(a.cells | b.cells) / a.grid if a.grid else 0.0,
            }
        )
    return rows


def choose(pilots: Sequence[Pilot], pick: int) -> dict[str, Any]:
    """The ``pick``-subset with the best expected merged coverage per unit of cost.

    Raises:
        ConfigError: ``pick`` is not between 1 and the number of candidates.
    """
    if not 1 <= pick <= len(pilots):
        raise ConfigError(f"--pick {pick}: choose between 1 and the {len(pilots)} candidates")
    priced = all(p.cost_per_call for p in pilots)
    ranked = []
    for subset in itertools.combinations(pilots, pick):
        union = frozenset().union(*(p.cells for p in subset))
        coverage = len(union) / subset[0].grid if subset[0].grid else 0.0
        cost = (sum(p.cost_per_call for p in subset) / pick) if priced else None
        score = coverage / cost if cost else coverage
        alone = sum(p.coverage for p in subset) / pick
        ranked.append(
            {
                "operators": [p.operator for p in subset],
                "coverage": coverage,
                "cost_per_call": cost,
                "score": score,
                "alone": alone,
            }
        )
    # Equal scores: the subset of stronger members (their mean coverage alone), then the one
    # listed first (candidates' order; the sort is stable).
    ranked.sort(key=lambda entry: (-entry["score"], -entry["alone"]))
    return {"per": "cost" if priced else "call", "ranked": ranked, "pick": ranked[0]}


def plan(
    base: RunConfig,
    operators: Sequence[str],
    *,
    pick: int,
    pilot_budget: int,
    out: Path,
    registry: PluginRegistry,
) -> dict[str, Any]:
    """Runs one pilot per candidate (``pilot_budget`` calls in all, split equally), then
    measures and chooses; writes and returns ``plan.json``'s content.

    Args:
        base: The run configuration pilots derive from (domain, rounds, seed, options).
        operators: The candidates, in order (ties go to the first).
        pick: How many to choose (``K``).
        pilot_budget: Calls of all pilots together; it must split into whole, equal
            per-pilot and per-round quotas.
        out: Where the pilots' run directories and ``plan.json`` go.
        registry: The loaded plugins.

    Raises:
        ConfigError: too few candidates, a repeated one, a pick out of range, or a pilot
            budget that does not split equally.
    """
    operators = list(operators)
    _check_plan(operators, pick=pick, pilot_budget=pilot_budget, rounds=base.rounds)
    for operator in operators:
        registry.operator(operator)  # an unknown one fails before any pilot runs
    pilots = _run_pilots(base, operators, pilot_budget=pilot_budget, out=out, registry=registry)
    choice = choose(pilots, pick)
    spent = sum(p.calls for p in pilots)
    record = {
        "domain": base.domain,
        "domain_options": dict(base.domain_options),
        "candidates": operators,
        "pick": pick,
        "pilot_budget": pilot_budget,
        "pilot_spent": spent,
        "rounds": base.rounds,
        "seed": base.seed,
        "pilots": [
            {
                "operator": p.operator,
                "run_dir": str(p.run_dir),
                "calls": p.calls,
                "coverage": p.coverage,
                "cells": len(p.cells),
                "champions": len(p.champion_cells),
                "cost_per_call": p.cost_per_call,
            }
            for p in pilots
        ],
        "pairs": pairwise(pilots),
        "chosen": choice["pick"],
        "ranked": choice["ranked"],
        "per": choice["per"],
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def _check_plan(operators: Sequence[str], *, pick: int, pilot_budget: int, rounds: int) -> None:
    """Refuses too few candidates, a repeated one, a pick out of range, or a pilot budget that
    does not split into whole, equal per-pilot and per-round quotas.

    Raises:
        ConfigError: Saying which.
    """
    if len(operators) < 2 or len(set(operators)) != len(operators):
        raise ConfigError(
            "dei plan needs at least two different candidates (--operator, once each)"
        )
    if not 1 <= pick <= len(operators):
        raise ConfigError(f"--pick {pick}: choose between 1 and the {len(operators)} candidates")
    step = len(operators) * rounds
    if pilot_budget < step or pilot_budget % step:
        raise ConfigError(
            f"--pilot-budget {pilot_budget} does not split equally across "
            f"{len(operators)} pilots of {rounds} rounds; use a multiple of "
            f"{step}"
        )


def _run_pilots(
    base: RunConfig,
    operators: Sequence[str],
    *,
    pilot_budget: int,
    out: Path,
    registry: PluginRegistry,
) -> list[Pilot]:
    """Runs one single-node pilot per candidate, in order (each its equal share of
    ``pilot_budget``, under ``out/pilots/``), and reads what each found."""
    from dei_framework.runtime.ensemble import run

    options = {node.operator: dict(node.options) for node in reversed(base.nodes)}
    pilots = []
    for index, operator in enumerate(operators):
        node = NodeConfig(
            name="node-0",
            operator=operator,
            options=options.get(operator, dict(base.nodes[0].options)),
        )
        config = attrs.evolve(
            base,
            nodes=(node,),
            budget=pilot_budget // len(operators),
            iterations=None,
            common_ground=False,
        )
        run_dir = out / "pilots" / f"{index}-{operator.replace('/', '_').replace(':', '-')}"
        run(config, run_dir, registry=registry)
        pilots.append(Pilot.read(operator, run_dir))
    return pilots


def plan_lines(record: Mapping[str, Any]) -> list[str]:
    """What ``dei plan`` prints: the pilots, the pairs, the pick and the commands to run."""
    lines = [
        f"pilots: {record['pilot_spent']} of {record['pilot_budget']} calls "
        f"({record['rounds']} rounds each, seed {record['seed']})"
    ]
    width = max(len(p["operator"]) for p in record["pilots"])
    for pilot in record["pilots"]:
        cost = pilot["cost_per_call"]
        lines.append(
            f"  {pilot['operator']:<{width}}  coverage {100 * pilot['coverage']:5.1f}%  "
            f"{pilot['calls']} calls" + (f"  ${cost:.6f}/call" if cost else "")
        )
    lines.append("pairs (A's champions in B's empty cells, B's in A's, union coverage):")
    for pair in record["pairs"]:
        lines.append(
            f"  {pair['a']} + {pair['b']}: {pair['a_into_b']}, {pair['b_into_a']}, "
            f"{100 * pair['union_coverage']:.1f}%"
        )
    chosen = record["chosen"]
    per = "per unit of cost" if record["per"] == "cost" else "(every call costs the same)"
    lines.append(
        f"pick ({record['pick']}): {', '.join(chosen['operators'])} — expected merged "
        f"coverage {100 * chosen['coverage']:.1f}% {per}"
    )
    domain = f"--domain {shlex.quote(record['domain'])}" + "".join(
        f" --domain-option {shlex.quote(f'{key}={json.dumps(value)}')}"
        for key, value in (record.get("domain_options") or {}).items()
    )
    ops = " ".join(f"--operator {shlex.quote(op)}" for op in chosen["operators"])
    lines.append(f"run it:    dei-run {domain} {ops}")
    # A budget that splits equally across Solo, Diverse (every candidate) and the pick.
    rounds, largest = record["rounds"], len(record["candidates"])
    step = math.lcm(rounds, largest * rounds, record["pick"] * rounds)
    budget = -(-40 * largest // step) * step  # 40 calls per node at least, as dei experiment
    candidates = " ".join(f"--operator {shlex.quote(op)}" for op in record["candidates"])
    lines.append(
        f"test it:   dei experiment {domain} {candidates} --conditions solo,diverse "
        f"--condition chosen={','.join(chosen['operators'])} --budget {budget} "
        f"--rounds {rounds} --repeats 10"
    )
    return lines


def plan_options(function: Any) -> Any:
    """The options of ``dei plan`` (the command itself is declared in
    :mod:`dei_framework.app.cli`)."""
    options = [
        click.option("--domain", required=True, help="The domain."),
        click.option(
            "--operator",
            "operators",
            multiple=True,
            required=True,
            help="A candidate operator; repeat for each (at least two).",
        ),
        click.option("--pick", type=int, required=True, help="How many operators to choose (K)."),
        click.option(
            "--pilot-budget",
            type=int,
            required=True,
            help="Calls of all pilots together (split equally across the candidates).",
        ),
        click.option(
            "--rounds",
            type=int,
            default=PILOT_ROUNDS,
            show_default=True,
            help="Rounds of each pilot.",
        ),
        click.option("--seed", type=int, default=0, show_default=True, help="Seed of every pilot."),
        click.option(
            "--domain-option",
            "domain_option",
            multiple=True,
            metavar="KEY=VALUE",
            help="A domain option, repeatable.",
        ),
        click.option(
            "--config",
            "config_file",
            type=click.Path(dir_okay=False),
            help="A run configuration file (operator options, [[node]] tables ...).",
        ),
        click.option("--eval-workers", type=int, help="Evaluation worker processes of each pilot."),
        click.option(
            "--out",
            type=click.Path(file_okay=False, path_type=Path),
            required=True,
            help="Where the pilots and plan.json go.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def plan_main(flags: Mapping[str, Any], plugins: PluginRegistry) -> None:
    """``dei plan``: runs the pilots, prints the tables, the pick and the commands.

    Raises:
        ConfigError: ``--out`` holds a plan already, or the plan cannot be made (see
            :func:`plan`).
    """
    out = Path(flags["out"])
    if (out / "plan.json").exists():
        raise ConfigError(f"{out} holds a plan already; choose another --out")
    base = resolve_base(flags, plugins)
    record = plan(
        base,
        flags["operators"],
        pick=flags["pick"],
        pilot_budget=flags["pilot_budget"],
        out=out,
        registry=plugins,
    )
    for line in plan_lines(record):
        click.echo(line)
    click.echo(f"plan: {out / 'plan.json'}")


def resolve_base(flags: Mapping[str, Any], plugins: PluginRegistry) -> RunConfig:
    """The pilots' base configuration from ``dei plan``'s flags (as ``dei-run`` resolves its)."""
    from dei_framework.runtime.config.resolve import resolve_config

    return resolve_config(
        {
            "domain": flags["domain"],
            "operators": tuple(flags["operators"]),
            "rounds": flags["rounds"],
            "seed": flags["seed"],
            "domain_option": tuple(flags.get("domain_option") or ()),
            "config_file": flags.get("config_file"),
            "eval_workers": flags.get("eval_workers"),
            "budget": flags["pilot_budget"],
            "nodes": len(flags["operators"]),
        },
        plugins,
    )
