"""DEI's own mechanics on hand-built rounds: niche novelty and seeding of received champions.

Niche novelty (eta) counts a received champion as novel when its cell was empty in the
receiver's archive *of the previous round* — not in the fresh archive it arrives in — and a
received champion only ever fills an empty cell, however fit it is.
"""

from __future__ import annotations

from test_scheduler import DOMAIN, scheduler, work

from dei_framework import Candidate

#: Every cell of the test domain's 5 x 5 grid (length bins x peak bins).
CELLS = {(i, j) for i in range(5) for j in range(5)}


def cell(s, text: str) -> tuple[int, ...]:
    """The cell of ``text`` (the test domain's descriptors do not depend on opponents)."""
    return s.archive.cell_of(DOMAIN.evaluate(DOMAIN.parse(text), [], seed=0).descriptor)


def run_round(s, received=()) -> dict[str, dict]:
    """One round to its end; returns the received champions' ``evaluated`` events by item."""
    events = {}
    round_index = s.round
    s.start_round(list(received))
    while s.round == round_index:
        report = s.tell([work(s, item) for item in s.ask(4)])
        for admission in report.admitted:
            if admission.result.item.kind == "peer":
                event = admission.event()
                events[event.id.rsplit("-", 1)[-1]] = event
    return events


def text_in(target: tuple[int, ...], s, avoid: set[str]) -> str:
    """A program text that lands in ``target``, not among ``avoid``."""
    for length in range(1, 9):
        for peak in range(50):
            for filler in range(peak + 1):
                text = " ".join([str(peak)] + [str(filler)] * (length - 1))
                if text not in avoid and cell(s, text) == target:
                    return text
    raise AssertionError(f"no program lands in {target}")


def test_niche_novelty_is_measured_against_the_previous_rounds_cells() -> None:
    s = scheduler(calls=60, rounds=3)
    run_round(s)
    previous = set(s.previous_cells)
    # The fresh round-1 archive is warm-started with the pool (initial opponents and the
    # round-0 champion); a cell filled in round 0 but not by the pool is empty in it.
    pool = {o.text for o in s.pool.opponents()}
    warm = {cell(s, text) for text in pool}
    only_previous = sorted(previous - warm)
    never = sorted(CELLS - previous - warm)
    assert only_previous and never
    stale = text_in(only_previous[0], s, pool)
    novel = text_in(never[0], s, pool)
    events = run_round(
        s,
        [
            Candidate(text=stale, node="p", round=0, operator="op"),
            Candidate(text=novel, node="p", round=0, operator="op"),
        ],
    )
    # Both cells were empty in the archive they arrived in, so both are seeded ...
    assert events["p0"].status == events["p1"].status == "new"
    # ... but only one was empty in round 0: eta = 1/2, not 2/2.
    assert s.history[1].received == 2
    assert s.history[1].niche_novelty == 0.5


def test_a_received_champion_fills_only_an_empty_cell() -> None:
    s = scheduler(calls=60, rounds=3)
    run_round(s)
    # The initial opponent "20 20" re-enters every fresh archive at the warm start. "29 29"
    # lands in its cell and is fitter against any pool, but arrives from a peer: not added.
    opponents = [DOMAIN.parse(o.text) for o in s.pool.opponents()]
    strong, weak = "29 29", "20 20"
    assert cell(s, strong) == cell(s, weak)
    assert (
        DOMAIN.evaluate(DOMAIN.parse(strong), opponents, seed=0).fitness
        > DOMAIN.evaluate(DOMAIN.parse(weak), opponents, seed=0).fitness
    )
    empty = sorted(CELLS - {cell(s, o.text) for o in s.pool.opponents()})[0]
    newcomer = text_in(empty, s, set())
    events = run_round(
        s,
        [
            Candidate(text=strong, node="p", round=0, operator="op"),
            Candidate(text=newcomer, node="p", round=0, operator="op"),
        ],
    )
    assert events["p0"].status == "not_added"
    assert events["p1"].status == "new"
