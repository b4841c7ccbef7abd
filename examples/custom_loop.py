"""Red Queen MAP-Elites on DEI's ask/tell core (public API only); a JSON line per round."""

import argparse
import asyncio
import json
import sys

from dei_framework import DEIError, OperatorSettings, Scheduler, evaluate, load_plugins


async def search(domain, operator, args: argparse.Namespace) -> list[dict]:
    scheduler = Scheduler.for_domain(
        domain,
        name="custom",
        calls=args.rounds * args.iterations,
        rounds=args.rounds,
        seed=args.seed,
    )
    while not scheduler.finished:
        items = scheduler.ask(4)  # warm starts first, then operator calls; 4 slots at a time
        opponents = [domain.parse(o.text) for o in scheduler.opponents]
        calls = [operator.propose(i.request(domain)) for i in items if i.needs_call]
        replies = iter(await asyncio.gather(*calls))
        texts = [next(replies).text if i.needs_call else i.program.text for i in items]
        results = [
            evaluate(domain, text, opponents, seed=i.eval_seed, axes=scheduler.space.names).result(
                i, operator=operator.label
            )
            for i, text in zip(items, texts, strict=True)
        ]
        scheduler.tell(reversed(results))  # any order; a round's champion joins the opponents
    return scheduler.history


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("domain", nargs="?", default="symreg")
    parser.add_argument("operator", nargs="?", default="symreg-gp")
    for flag, default in (("--rounds", 3), ("--iterations", 200), ("--seed", 0)):
        parser.add_argument(flag, type=int, default=default)
    args = parser.parse_args()
    try:
        domain = (reg := load_plugins()).domain(args.domain).factory({})
        settings = OperatorSettings(
            spec=args.operator, node="custom", registry=reg, seed=args.seed, domain=domain
        )
        operator = reg.operator(args.operator).factory(settings)
    except DEIError as exc:
        sys.exit(f"error: {exc}")
    for event in asyncio.run(search(domain, operator, args)):  # one JSON line per round
        print(json.dumps({key: event[key] for key in ("round", "stats", "champion", "opponents")}))
