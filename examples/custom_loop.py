"""Red Queen MAP-Elites on DEI's ask/tell core (public API only); a JSON line per round."""

import argparse
import asyncio
import json
import sys

from dei_framework import DEIError, OperatorSettings, Scheduler, evaluate, load_plugins


async def search(domain, operator, args: argparse.Namespace) -> list[dict]:
    budget = {"calls": args.rounds * args.iterations, "rounds": args.rounds}
    scheduler = Scheduler.for_domain(domain, name="custom", seed=args.seed, **budget)
    while not scheduler.finished:
        items = scheduler.ask(4)  # warm starts first, then operator calls; 4 slots at a time
        opponents = [domain.parse(o.text) for o in scheduler.opponents]
        calls = [operator.propose(i.request(domain)) for i in items if i.needs_call]
        replies, results = iter(await asyncio.gather(*calls)), []
        for item in items:
            text = next(replies).text if item.needs_call else item.program.text
            scored = evaluate(
                domain, text, opponents, seed=item.eval_seed, axes=scheduler.space.names
            )
            results.append(scored.result(item, operator=operator.label))
        scheduler.tell(reversed(results))  # any order; a round's champion joins the opponents
    return [event.to_json() for event in scheduler.history]  # the round events, as logged


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
