"""What a domain's prompt shows besides the parent (PromptNeeds): the archive's top elites kept
in step with every insertion, the inspirations a work item carries (top, then diverse, never
the parent), evaluation info and ancestors kept on candidates, and nothing of it for a domain
that asks for nothing."""

from __future__ import annotations

import random

import numpy as np
from test_scheduler import DOMAIN, drive, scheduler

from dei_framework import Candidate, DescriptorSpace, GridArchive, UniformAxis
from dei_framework.contract.descriptors import LearnedAxis
from dei_framework.contract.domain import PromptNeeds
from dei_framework.search._inspirations import inspirations

SPACE = DescriptorSpace([UniformAxis("x", 0.0, 100.0, 50)])


def _elite(index: int, fitness: float, x: float) -> Candidate:
    return Candidate(id=f"e{index}", text=f"p{index}", fitness=fitness, descriptor={"x": x})


def _sorted_top(archive: GridArchive, k: int) -> list[str]:
    ranked = sorted(archive, key=lambda e: (-e.fitness, archive.flat_index(e.cell)))
    return [elite.id for elite in ranked[:k]]


def test_the_top_list_follows_every_insertion_and_a_regrid() -> None:
    rng = random.Random(5)
    archive = GridArchive(space=SPACE)
    learned = GridArchive(space=DescriptorSpace([LearnedAxis("x", 8)]))
    for index in range(300):
        fitness, x = round(rng.uniform(-1, 1), 2), rng.uniform(0, 100) * (1 + index // 100)
        archive.add(_elite(index, fitness, min(x, 99.0)))
        learned.add(_elite(index, fitness, x))  # widens, so its cells move now and then
        if index in (0, 3, 40, 299):  # asked now and then: kept from then on
            assert [e.id for e in archive.top(4)] == _sorted_top(archive, 4)
            assert [e.id for e in learned.top(4)] == _sorted_top(learned, 4)
    assert learned.rebins > 0
    assert [e.id for e in archive.top(7)] == _sorted_top(archive, 7)  # a longer list asked
    assert archive.top(0) == []


def test_inspirations_are_the_best_then_other_cells_never_the_parent() -> None:
    archive = GridArchive(space=SPACE)
    for index in range(20):
        archive.add(_elite(index, fitness=index / 20, x=index * 5.0))
    parent = archive.best()
    other = archive.elite_at(archive.cell_of({"x": 15.0}))
    needs = PromptNeeds(top=3, diverse=4)
    shown = inspirations(archive, np.random.default_rng(1), needs, parent=parent, others=(other,))
    ids = [c.id for c in shown]
    assert ids[:3] == ["e18", "e17", "e16"]  # the best after the parent, best first
    assert len(ids) == 7 and len(set(ids)) == 7
    assert parent.id not in ids and other.id not in ids
    again = inspirations(archive, np.random.default_rng(1), needs, parent=parent, others=(other,))
    assert again == shown  # the slot's generator decides: reproducible
    small = GridArchive(space=SPACE)
    for index in range(3):
        small.add(_elite(index, fitness=index, x=index * 10.0))
    # Two elites besides the parent: both are top ones; none is left to be diverse.
    few = inspirations(small, np.random.default_rng(0), needs, parent=small.best(), others=())
    assert [c.id for c in few] == ["e1", "e0"]


def test_a_scheduler_keeps_ancestors_without_changing_the_run() -> None:
    needs = PromptNeeds(top=2, diverse=1, info=True, history=2)
    asking = scheduler(prompt_needs=needs, lifecycle="continual")
    plain = scheduler(lifecycle="continual")
    events = drive(asking, None)
    assert events == drive(plain, None)  # the draws after the parent change no choice
    mutated = [e for e in asking.archive if e.parent is not None]
    assert mutated and all(1 <= len(e.lineage) <= 2 for e in mutated)
    deep = [e for e in mutated if len(e.lineage) == 2]
    assert deep and all(e.lineage[0].id == e.parent for e in deep)
    assert all(not ancestor.lineage for e in deep for ancestor in e.lineage)  # no chains
    assert all(not e.lineage for e in plain.archive)


def test_work_items_carry_inspirations_only_for_a_domain_that_asks() -> None:
    needs = PromptNeeds(top=2, diverse=1)
    settings = {"rounds": 2, "lifecycle": "continual"}
    asking, plain = scheduler(prompt_needs=needs, **settings), scheduler(**settings)
    for s in (asking, plain):
        drive_until_round(s, 1)
    items = [i for i in asking.ask(8) if i.needs_call]
    item = next(i for i in items if i.parent is not None)
    assert 1 <= len(item.inspirations) <= 3
    assert item.parent.id not in {c.id for c in item.inspirations}
    # A new program's request is one nothing in the round decides (it may be made early).
    assert all(i.inspirations == () for i in items if i.parent is None)
    assert "inspirations" in item.to_json()
    assert type(item).from_json(item.to_json()) == item
    plain_item = next(i for i in plain.ask(4) if i.needs_call)
    assert plain_item.inspirations == () and "inspirations" not in plain_item.to_json()
    request = plain_item.request(DOMAIN)  # a domain that asks for nothing gets no argument
    assert request.inspirations == () and list(request.messages)


def drive_until_round(s, round_index: int) -> None:
    """Runs ``s`` until round ``round_index`` has started (admitting in slot order)."""
    while s.round < round_index:
        items = s.ask(1)
        s.tell([_work(s, item) for item in items])


def _work(s, item):
    from test_scheduler import work

    return work(s, item)
