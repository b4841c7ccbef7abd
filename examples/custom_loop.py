"""A custom search loop built from DEI's library pieces, without ``dei-run``.

``dei-run`` wires nodes, transports, budgets and checkpoints together. When you want your own
loop instead (a different selection rule, a notebook experiment, another QD algorithm), the
pieces work on their own:

* the plugin registry (:func:`dei_framework.load_plugins`) finds any installed domain and
  operator by name, exactly as ``dei-run`` does;
* :class:`~dei_framework.DescriptorSpace` and :class:`~dei_framework.GridArchive` are the
  MAP-Elites grid, :class:`~dei_framework.AddStatus` says what each insertion did;
* :class:`~dei_framework.OpponentPool` holds the Red Queen opponents (initial programs plus
  the most recent champions).

The loop below is a single-node Red Queen MAP-Elites: rounds of operator calls, a fresh archive
per round warm-started with the opponent pool, and each round's champion joining the pool.
It uses the symbolic-regression example (``pip install -e examples/symreg``) by default; pass
``--domain`` and ``--operator`` to use any other installed pair.

Run it::

    python examples/custom_loop.py                       # human-readable
    python examples/custom_loop.py --json --rounds 3     # one JSON object on stdout
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from dei_framework import (
    AddStatus,
    DEIError,
    DescriptorSpace,
    Domain,
    Elite,
    GridArchive,
    InvalidProgram,
    Operator,
    OperatorRequest,
    OperatorSettings,
    Opponent,
    OpponentPool,
    Parent,
    Program,
    load_plugins,
)


def build(domain_name: str, operator_name: str) -> tuple[Domain, Operator]:
    """The domain and operator registered under these names, with default options."""
    registry = load_plugins()
    domain = registry.domain(domain_name).factory({})
    settings = OperatorSettings(spec=operator_name, node="custom", options={})
    operator = registry.operator(operator_name).factory(settings, domain)
    return domain, operator


def as_parent(elite: Elite) -> Parent:
    return Parent(id=elite.id, text=elite.text, fitness=elite.fitness, descriptor=elite.descriptor)


def offer(
    domain: Domain,
    archive: GridArchive,
    opponents: list[Program],
    text: str,
    *,
    elite_id: str,
    parent: str | None,
    operator: str,
    round_index: int,
    seed: int,
) -> AddStatus | None:
    """Parses, evaluates and offers one program to the archive; ``None`` if it is invalid."""
    try:
        program = domain.parse(text)
    except InvalidProgram:  # the message would say why; a real loop logs it
        return None
    evaluation = domain.evaluate(program, opponents, seed=seed)
    elite = Elite(
        id=elite_id, text=program.text, fitness=evaluation.fitness,
        descriptor=dict(evaluation.descriptor), cell=archive.cell_of(evaluation.descriptor),
        operator=operator, round=round_index, parent=parent,
    )  # fmt: skip
    return archive.add(elite)


async def search(
    domain: Domain, operator: Operator, *, rounds: int, iterations: int, seed: int
) -> dict[str, Any]:
    """Runs the loop and returns what it found (final archive stats, champion, counters)."""
    offered = {spec.name: spec.axis for spec in domain.descriptor_axes()}
    space = DescriptorSpace([offered[name] for name in domain.default_axes])
    pool = OpponentPool(domain.initial_opponents(), max_champions=20)
    counts = {status.label: 0 for status in AddStatus} | {"invalid": 0}
    history = []
    archive = GridArchive(space=space, qd_offset=domain.fitness_floor, seed=seed)
    for round_index in range(rounds):
        # A fresh archive each round: fitness depends on the opponents, which just changed.
        archive = GridArchive(space=space, qd_offset=domain.fitness_floor, seed=seed + round_index)
        opponents = [domain.parse(o.text) for o in pool.opponents()]

        def record(status: AddStatus | None) -> None:
            counts["invalid" if status is None else status.label] += 1

        # Warm start: the opponent pool's programs (initial ones and past champions).
        for index, opponent in enumerate(pool.opponents()):
            record(
                offer(
                    domain,
                    archive,
                    opponents,
                    opponent.text,
                    elite_id=f"r{round_index}-w{index}",
                    parent=None,
                    operator="warm",
                    round_index=round_index,
                    seed=seed,
                )
            )
        for step in range(iterations):
            # 10% new programs, 90% mutations of an elite drawn uniformly from the archive.
            if step % 10 == 0 or len(archive) == 0:
                kind, parent, others = "new", None, []
            else:
                parent, *others = (as_parent(e) for e in archive.sample(3))
                kind = "mutate"
            request = OperatorRequest(
                key=f"custom/r{round_index}/s{step}", kind=kind,
                messages=domain.messages(kind, parent=parent, others=others),
                parent=parent, others=others, seed=seed * 1_000_003 + round_index * 10_007 + step,
            )  # fmt: skip
            reply = await operator.propose(request)
            record(
                offer(
                    domain,
                    archive,
                    opponents,
                    reply.text,
                    elite_id=f"r{round_index}-s{step}",
                    parent=parent.id if parent else None,
                    operator=operator.label,
                    round_index=round_index,
                    seed=seed,
                )
            )
        stats = archive.stats()
        history.append({"round": round_index, "coverage": stats.coverage,
                        "qd_score": stats.qd_score, "best": stats.obj_max})  # fmt: skip
        champion = archive.best()
        if champion is not None:
            # The Red Queen step: next round's candidates face this round's champion.
            pool.add_champion(Opponent(text=champion.text, source="own", round=round_index,
                                       operator=champion.operator))  # fmt: skip
    await operator.aclose()
    champion = archive.best()
    return {
        "domain": domain.name,
        "operator": operator.label,
        "space": {"axes": list(space.names), "shape": list(space.shape)},
        "rounds": history,
        "final": archive.stats().to_json(),
        "champion": champion.to_json() if champion else None,
        "generality": domain.generality(domain.parse(champion.text)) if champion else None,
        "counts": counts,
        "opponents": len(pool),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="symreg")
    parser.add_argument("--operator", default="symreg-gp")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=200, help="operator calls per round")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    try:
        domain, operator = build(args.domain, args.operator)
        result = asyncio.run(search(domain, operator, rounds=args.rounds,
                                    iterations=args.iterations, seed=args.seed))  # fmt: skip
    except DEIError as exc:
        hint = " (install it: pip install -e examples/symreg)" if args.domain == "symreg" else ""
        print(f"error: {exc}{hint}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result))
        return 0
    for entry in result["rounds"]:
        print(f"round {entry['round']}: coverage {entry['coverage']:.1%}, "
              f"QD-score {entry['qd_score']:.2f}, best fitness {entry['best']:.4f}")  # fmt: skip
    champion = result["champion"]
    print(f"champion: {champion['text']}  (fitness {champion['fitness']:.4f}, "
          f"generality {result['generality']:.4f})")  # fmt: skip
    print(f"insertions: {result['counts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
