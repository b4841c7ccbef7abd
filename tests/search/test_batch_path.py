"""The scheduler's batch path: ``tell_batch`` admits exactly what ``tell`` admits, texts are read
only when needed, cells are placed in one pass, messages are written on first read."""

from __future__ import annotations

import asyncio
import functools
import math
import pickle
import random
from collections.abc import Sequence

import numpy as np
import pytest

from dei_framework import (
    AddStatus,
    Candidate,
    CVTArchive,
    DescriptorSpace,
    GridArchive,
    ImprovementSelector,
    Result,
    Scheduler,
    ThresholdAxis,
    UniformAxis,
)
from dei_framework.contract.descriptors import LogAxis
from dei_framework.contract.operators import (
    DeferredMessages,
    Operator,
    OperatorReply,
    OperatorRequest,
)
from dei_framework.contract.records import DeferredText

SPACE = DescriptorSpace([UniformAxis("x", -1.0, 1.0, 12), ThresholdAxis("y", (0.0, 0.5))])


def outcome(item) -> tuple[str, float | None, list[float], str | None]:
    """A made-up evaluation of an item, a function of its seed (every 13th is invalid)."""
    draw = random.Random(item.seed)
    if item.seed % 13 == 0:
        return "", None, [0.0, 0.0], f"bad {item.seed % 7}"
    text = f"p{item.seed}"
    return text, draw.uniform(0, 10), [draw.uniform(-1.2, 1.2), draw.uniform(-1, 1)], None


def scheduler(**settings) -> Scheduler:
    return Scheduler(
        name="n",
        space=SPACE,
        initial_opponents=[],
        calls=300,
        rounds=2,
        seed=4,
        lag=16,
        lifecycle="continual",
        **settings,
    )


def run_with_tell(**settings) -> Scheduler:
    node = scheduler(**settings)
    while not node.finished:
        items = node.ask(16)
        results = []
        for item in reversed(items):  # out of order: the reorder buffer puts them back
            text, fitness, values, error = outcome(item)
            descriptor = None if fitness is None else dict(zip(SPACE.names, values, strict=True))
            results.append(
                Result(
                    item=item,
                    text=text or None,
                    fitness=fitness,
                    descriptor=descriptor,
                    error=error,
                    operator="op",
                )
            )
        node.tell(results)
    return node


def run_with_tell_batch(**settings) -> tuple[Scheduler, list[int]]:
    node, reads = scheduler(**settings), []
    while not node.finished:
        items = node.ask(16)
        # Two batches, the later slots told first.
        for part in (items[len(items) // 2 :], items[: len(items) // 2]):
            rows = [outcome(item) for item in part]
            texts = CountingTexts([text for text, *_ in rows], reads)
            node.tell_batch(
                part,
                texts=texts,
                fitness=[f for _, f, _, _ in rows],
                descriptors=np.array([v for _, _, v, _ in rows]).reshape(-1, 2),
                errors=[e for *_, e in rows],
                operator="op",
            )
    return node, reads


class CountingTexts(Sequence):
    """Texts that count how often they are read."""

    def __init__(self, texts: list[str], reads: list[int]) -> None:
        self.texts, self.reads = texts, reads

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, index):
        self.reads.append(1)
        return self.texts[index]


@pytest.mark.parametrize("selector", [None, "improvement"])
def test_tell_batch_admits_exactly_what_tell_admits(selector) -> None:
    make = (lambda: ImprovementSelector()) if selector else (lambda: None)
    single = run_with_tell(selector=make())
    batched, _ = run_with_tell_batch(selector=make())
    assert batched.archive.to_json() == single.archive.to_json()
    assert batched.history == single.history
    assert batched.lineage_errors == single.lineage_errors and single.lineage_errors
    assert batched.selector.state_json() == single.selector.state_json()
    assert len(single.archive) > 20  # the comparison is not between two empty archives


def test_texts_are_read_only_for_elites_whose_text_is_wanted() -> None:
    node, reads = run_with_tell_batch()
    # Only the round events read texts (their champions'); the rest stay unwritten until asked.
    assert 0 < len(reads) <= len(node.history)
    unwritten = [elite for elite in node.archive if type(elite._text) is not str]
    assert len(unwritten) > 20
    assert node.archive.to_json() == run_with_tell().archive.to_json()  # written when wanted
    assert len(reads) >= len(unwritten) and all(type(e._text) is str for e in node.archive)


def test_tell_batch_reports_statuses_in_slot_order_and_refuses_bad_calls() -> None:
    node = scheduler()
    items = node.ask(4)
    with pytest.raises(ValueError, match="one entry per item"):
        node.tell_batch(items, texts=["a"], fitness=[1.0] * 4, descriptors=np.zeros((4, 2)))
    report = node.tell_batch(
        items[2:], texts=["c", "d"], fitness=[1.0, 2.0], descriptors=[[0.1, 0.2], [0.1, 0.2]]
    )
    assert report.statuses == ()  # slots 0 and 1 are not in yet
    report = node.tell_batch(
        items[:2],
        texts=["a", "b"],
        fitness=[1.0, None],
        descriptors=[[0.5, 0.9], [0.0, 0.0]],
        errors=[None, "no"],
    )
    assert [(item.order, status) for item, status in report.statuses] == [
        (0, AddStatus.NEW),
        (1, None),
        (2, AddStatus.NEW),
        (3, AddStatus.IMPROVE_EXISTING),
    ]
    assert node.archive.elite_at(SPACE.cell({"x": 0.1, "y": 0.2})).text == "d"
    with pytest.raises(ValueError, match="was not asked or was already told"):
        node.tell_batch(items[:1], texts=["a"], fitness=[1.0], descriptors=[[0.5, 0.9]])


def test_tell_batch_refuses_warm_and_peer_items() -> None:
    node = Scheduler(name="n", space=SPACE, initial_opponents=["w"], calls=10, rounds=1)
    (warm,) = node.ask(1)
    with pytest.raises(ValueError, match="'warm' item; tell"):
        node.tell_batch([warm], texts=["w"], fitness=[1.0], descriptors=[[0.0, 0.0]])


@pytest.mark.parametrize(
    "archive",
    [
        lambda: GridArchive(
            space=DescriptorSpace(
                [
                    UniformAxis("x", -1, 1, 7),
                    ThresholdAxis("y", (0.0, 0.5)),
                    LogAxis("z", 0.01, 100.0, 5),
                ]
            )
        ),
        lambda: CVTArchive(
            space=DescriptorSpace(
                [
                    UniformAxis("x", -1, 1, 7),
                    ThresholdAxis("y", (0.0, 0.5)),
                    LogAxis("z", 0.01, 100.0, 5),
                ]
            ),
            cells=20,
            seed=1,
        ),
    ],
)
def test_place_gives_each_rows_cell_of(archive) -> None:
    archive = archive()
    specials = [math.inf, -math.inf, math.nan, 0.0, -1.0, 1.0, 1e300, -1e300, 0.5, 100.0]
    rows = np.array([[a, b, c] for a in specials for b in specials[:4] for c in specials[:6]])
    rows = np.concatenate([rows, np.random.default_rng(0).uniform(-2, 120, (200, 3))])
    cells, indices = archive.place(rows)
    names = archive.space.names
    for row, cell, index in zip(rows.tolist(), cells, indices, strict=True):
        descriptor = dict(zip(names, row, strict=True))
        assert cell == archive.cell_of(descriptor), row
        assert index == archive.index_of(descriptor), row
        assert type(index) is int and all(type(c) is int for c in cell)


def test_add_at_and_status_at_agree_with_add() -> None:
    archive = GridArchive(space=SPACE)
    elite = Candidate(text="a", fitness=2.0, descriptor={"x": 0.3, "y": 0.7})
    ([cell], [index]) = archive.place(np.array([[0.3, 0.7]]))
    assert archive.status_at(index, 2.0) == AddStatus.NEW
    assert (
        archive.add_at(
            Candidate(text="a", fitness=2.0, descriptor=elite.descriptor, cell=cell), index
        )
        == AddStatus.NEW
    )
    assert archive.status_at(index, 1.0) == AddStatus.NOT_ADDED
    assert archive.status_at(index, math.nan) == AddStatus.NOT_ADDED
    assert archive.status_at(index, 3.0) == AddStatus.IMPROVE_EXISTING
    assert (
        archive.add(Candidate(text="b", fitness=1.0, descriptor=elite.descriptor))
        == AddStatus.NOT_ADDED
    )
    assert archive.elite_at(cell).text == "a"


def test_deferred_text_is_read_once_compares_as_its_text_and_pickles_as_a_string() -> None:
    reads: list[int] = []
    texts = CountingTexts(["zero", None], reads)
    first = Candidate(text=DeferredText(texts, 0), fitness=1.0)
    assert reads == []
    assert first == Candidate(text="zero", fitness=1.0)
    assert first.text == "zero" and first.text == "zero" and len(reads) == 1
    assert "text='zero'" in repr(first)
    empty = Candidate(text=DeferredText(texts, 1))
    assert empty.text == ""
    restored = pickle.loads(pickle.dumps(Candidate(text=DeferredText(["p"], 0), data=[1])))
    assert type(restored._text) is str and restored.text == "p" and restored.data == [1]
    assert Candidate.from_json(first.to_json()) == first


def test_candidate_data_is_neither_compared_nor_serialised() -> None:
    one = Candidate(text="a", data=np.zeros(2))
    assert one == Candidate(text="a") and "data" not in one.to_json()


def test_messages_are_written_on_first_read_only() -> None:
    calls: list[str] = []

    def write(kind: str) -> list[dict[str, str]]:
        calls.append(kind)
        return [{"role": "user", "content": kind}]

    messages = DeferredMessages(functools.partial(write, "new"))
    request = OperatorRequest(key="k", kind="new", messages=messages)
    assert calls == []
    assert request.messages == [{"role": "user", "content": "new"}]
    assert list(request.messages) == [{"role": "user", "content": "new"}] and len(messages) == 1
    assert messages[0]["content"] == "new" and calls == ["new"]
    assert request == OperatorRequest(
        key="k", kind="new", messages=[{"role": "user", "content": "new"}]
    )


def test_propose_batch_defaults_to_propose_per_request_in_order() -> None:
    class Echo(Operator):
        async def propose(self, request: OperatorRequest) -> OperatorReply:
            return OperatorReply(text=f"{request.key}:{request.seed}")

    requests = [OperatorRequest(key=f"k{i}", kind="new", messages=[], seed=i) for i in range(5)]
    replies = asyncio.run(Echo().propose_batch(requests))
    assert [reply.text for reply in replies] == [f"k{i}:{i}" for i in range(5)]


@pytest.mark.parametrize("kind", ["same grid", "other space", "cvt"])
def test_fill_from_gives_what_the_json_round_trip_gives(kind) -> None:
    source = GridArchive(space=SPACE, qd_offset=1.0)
    draw = random.Random(3)
    for index in range(300):
        descriptor = {"x": draw.uniform(-1.2, 1.2), "y": draw.uniform(-1, 1)}
        source.add(Candidate(text=f"p{index}", fitness=draw.uniform(0, 9), descriptor=descriptor))
    if kind == "same grid":
        make = lambda: GridArchive(space=SPACE, qd_offset=1.0)  # noqa: E731
    elif kind == "other space":
        other = DescriptorSpace([UniformAxis("x", -1.0, 1.0, 5), ThresholdAxis("y", (0.2,))])
        make = lambda: GridArchive(space=other, qd_offset=1.0)  # noqa: E731
    else:
        make = lambda: CVTArchive(space=SPACE, cells=16, seed=2, qd_offset=1.0)  # noqa: E731
    copied, reference = make().fill_from(source), make().fill_from_json(source.to_json())
    assert copied.to_json() == reference.to_json()
    assert copied.stats() == reference.stats() and copied.best() == reference.best()
    assert [elite.id for elite in copied.occupied] == [elite.id for elite in reference.occupied]
    copied.add(Candidate(text="late", fitness=100.0, descriptor={"x": 0.0, "y": 0.0}))
    assert source.best().text != "late"  # a copy: the source archive is not changed
