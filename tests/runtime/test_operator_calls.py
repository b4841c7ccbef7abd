"""OperatorCalls: one path for a node's operator calls, recorded replies served first, the
budget reserved and billed, and one error ladder (:mod:`dei_framework.runtime.operator_calls`).
"""

from __future__ import annotations

import asyncio

import pytest

from dei_framework.contract.errors import BudgetExhausted, OperatorError, ReplayMismatch
from dei_framework.contract.operators import Operator, OperatorReply, TransientOperatorFailure
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.operator_calls import MAX_FAILURES_PER_SLOT, OperatorCalls, call_outcomes
from dei_framework.runtime.replay import RecordedCall, Recording, messages_digest
from dei_framework.search.scheduler import WorkItem


class Prompts:
    """A domain as far as calls go: the chat messages of a request."""

    def __init__(self, task: str = "Write") -> None:
        self.task = task

    def messages(self, kind, *, parent=None, others=(), feedback=None):
        return [{"role": "user", "content": f"{self.task} ({kind})"}]


class Scripted(Operator):
    """Answers each call with the next step of its script: a reply's text, or an exception."""

    def __init__(
        self, *script: str | BaseException, label: str = "scripted", max_in_flight: int = 1
    ) -> None:
        self.script = list(script)
        self.label = label
        self.max_in_flight = max_in_flight
        self.asked: list[str] = []

    async def propose(self, request):
        self.asked.append(request.key)
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        return OperatorReply(text=step, attempts=1)


class ShortBatch(Operator):
    """A batching operator that answers one reply fewer than it was asked for (a bug)."""

    label = "short-batch"
    capabilities = frozenset({"batch"})

    async def propose(self, request):
        return OperatorReply(text="PROGRAM: 1")

    async def propose_batch(self, requests):
        return [OperatorReply(text="PROGRAM: 1") for _ in requests[1:]]


def item(slot: int) -> WorkItem:
    return WorkItem(
        id=f"n-r0-s{slot}",
        key=f"n/r0/s{slot}",
        node="n",
        round=0,
        order=slot,
        kind="new",
        seed=slot,
        eval_seed=0,
    )


class Node:
    """One node's :class:`OperatorCalls`, its ledger and what it logged."""

    def __init__(
        self,
        operator: Operator,
        *,
        quota: int = 10,
        replies: Recording | None = None,
        batched: bool = False,
    ) -> None:
        self.ledger = BudgetLedger(quotas={"n": quota})
        self.lines: list[dict] = []
        self.calls = OperatorCalls(
            name="n",
            domain=Prompts(),
            operator=operator,
            ledger=self.ledger,
            replies=replies,
            record=lambda events, calls: self.lines.extend(calls),
            batched=batched,
        )

    @property
    def usage(self):
        return self.ledger.usage["n"]

    def call(self, slot: int = 0):
        return asyncio.run(self.calls.call(item(slot)))


def recorded(slot: int = 0, *, text: str = "PROGRAM: 7", task: str = "Write", **fields) -> dict:
    """A ``calls.jsonl`` line of the call of ``item(slot)``."""
    return {
        "key": f"n/r0/s{slot}",
        "node": "n",
        "round": 0,
        "kind": "new",
        "messages_sha256": messages_digest(Prompts(task).messages("new")),
        "reply": {"text": text, "attempts": 2, "cost_usd": 0.25},
        "usage": {"attempts": 2, "prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 0.25},
        **fields,
    }


# --- made calls ----------------------------------------------------------------------------------


def test_a_made_call_is_billed_once_and_logged_with_its_messages_hash() -> None:
    node = Node(Scripted("PROGRAM: 1 2"))

    reply, _ = node.call()

    assert reply.text == "PROGRAM: 1 2"
    assert (node.usage.calls, node.usage.attempts, node.usage.in_flight) == (1, 1, 0)
    (line,) = node.lines
    assert line["key"] == "n/r0/s0" and line["operator"] == "scripted"
    assert line["messages_sha256"] == messages_digest(Prompts().messages("new"))
    assert line["reply"]["text"] == "PROGRAM: 1 2"
    assert "failed" not in line


def test_a_transient_failure_releases_the_meter_and_counts_its_attempts() -> None:
    node = Node(Scripted(TransientOperatorFailure("provider down", attempts=3)))

    assert node.call() == (None, 0.0)

    assert node.calls.failures == 1
    # Released, not committed: no call counts, its attempts do, nothing stays reserved.
    assert (node.usage.calls, node.usage.attempts, node.usage.in_flight) == (0, 3, 0)
    assert node.ledger.remaining("n") == 10
    (line,) = node.lines
    assert line["failed"] == "provider down" and "reply" not in line


def test_consecutive_failures_are_counted_until_the_node_gives_up() -> None:
    limit = MAX_FAILURES_PER_SLOT * 2  # two slots of concurrency
    node = Node(
        Scripted(
            *[TransientOperatorFailure("busy")] * (limit - 1),
            "PROGRAM: 3",
            *[TransientOperatorFailure("busy")] * limit,
            max_in_flight=2,
        ),
        quota=3 * limit,
    )

    async def calls(count: int) -> None:
        for slot in range(count):
            await node.calls.call(item(slot))

    asyncio.run(calls(limit - 1))
    assert node.calls.failures == limit - 1 and not node.calls.gave_up
    asyncio.run(calls(1))  # a reply: the count starts again
    assert node.calls.failures == 0
    asyncio.run(calls(limit))
    assert node.calls.gave_up
    assert str(node.calls.gave_up_error()) == (
        f"n: operator 'scripted' failed {limit} calls in a row; stopping this node"
    )


def test_a_cap_reached_mid_call_fails_the_call_but_is_no_operator_failure() -> None:
    node = Node(Scripted(BudgetExhausted("n: money cap reached")))
    assert node.call() == (None, 0.0)
    assert node.calls.failures == 0
    assert node.usage.in_flight == 0


def test_a_spent_budget_asks_nothing() -> None:
    operator = Scripted("PROGRAM: 1")
    node = Node(operator, quota=0)
    assert node.call() == (None, 0.0)
    assert operator.asked == [] and node.lines == [] and node.calls.failures == 0


def test_an_operator_bug_stops_the_node_with_a_message_naming_the_operator() -> None:
    node = Node(Scripted(KeyError("choices"), label="buggy"))

    with pytest.raises(OperatorError) as stopped:
        node.call()

    assert str(stopped.value) == "n: operator 'buggy' failed: KeyError: 'choices'"
    assert isinstance(stopped.value.__cause__, KeyError)
    assert (node.usage.calls, node.usage.in_flight) == (0, 0)
    assert node.lines == []


def test_an_operator_error_stops_the_node_as_raised() -> None:
    node = Node(Scripted(OperatorError("n: wrong API key")))
    with pytest.raises(OperatorError, match="^n: wrong API key$"):
        node.call()
    assert node.usage.in_flight == 0


def test_a_batch_answered_short_is_an_operator_bug() -> None:
    node = Node(ShortBatch(), batched=True)
    with pytest.raises(OperatorError) as stopped:
        asyncio.run(node.calls.call_batch([item(0), item(1)]))
    assert str(stopped.value) == (
        "n: operator 'short-batch' failed: ValueError: 1 replies to 2 requests"
    )
    assert node.usage.in_flight == 0


def test_batched_lines_leave_out_the_messages_hash() -> None:
    node = Node(Scripted("PROGRAM: 1", "PROGRAM: 2"), batched=True)
    outcomes = asyncio.run(node.calls.call_batch([item(0), item(1)]))
    assert [reply.text for reply, _ in outcomes] == ["PROGRAM: 1", "PROGRAM: 2"]
    assert [line["key"] for line in node.lines] == ["n/r0/s0", "n/r0/s1"]
    assert not any("messages_sha256" in line for line in node.lines)


# --- recorded replies ----------------------------------------------------------------------------


def test_a_recorded_reply_is_served_and_charged_once_without_asking() -> None:
    operator = Scripted()
    replies = Recording({"n/r0/s0": RecordedCall(record=recorded())})
    node = Node(operator, replies=replies)

    reply, seconds = node.call()

    assert (reply.text, seconds) == ("PROGRAM: 7", 0.0)
    assert operator.asked == []
    # Charged as the record says, once.
    assert (node.usage.calls, node.usage.attempts, node.usage.cost_usd) == (1, 2, 0.25)
    (line,) = node.lines
    assert line["replayed"] is True and line["key"] == "n/r0/s0"


def test_a_reply_already_in_the_budget_is_served_without_charging_it_again() -> None:
    operator = Scripted()
    replies = Recording(
        {"n/r0/s0": RecordedCall(record=recorded(), logged=True)}, on_mismatch="ask"
    )
    node = Node(operator, replies=replies)

    reply, _ = node.call()

    assert reply.text == "PROGRAM: 7"
    assert operator.asked == [] and node.lines == []
    assert (node.usage.calls, node.usage.attempts) == (0, 0)


def test_a_recorded_failure_is_a_failed_call() -> None:
    replies = Recording({"n/r0/s0": RecordedCall(record=recorded(failed="provider down"))})
    node = Node(Scripted(), replies=replies)
    assert node.call() == (None, 0.0)
    assert node.calls.failures == 1
    assert (node.usage.calls, node.usage.attempts) == (0, 2)


def test_a_mismatched_record_stops_a_replay_and_is_asked_again_on_request() -> None:
    changed = {"n/r0/s0": RecordedCall(record=recorded(task="Improve"))}

    strict = Node(Scripted(), replies=Recording(changed))
    with pytest.raises(ReplayMismatch, match=r"^replay: call n/r0/s0 has different messages"):
        strict.call()

    operator = Scripted("PROGRAM: 5")
    lenient = Node(operator, replies=Recording(changed, on_mismatch="ask"))
    reply, _ = lenient.call()
    assert reply.text == "PROGRAM: 5" and operator.asked == ["n/r0/s0"]
    assert lenient.calls.replies.reasked == ["n/r0/s0"]


def test_a_batch_puts_a_mismatch_in_the_place_of_its_item() -> None:
    replies = Recording(
        {
            "n/r0/s0": RecordedCall(record=recorded(0)),
            "n/r0/s1": RecordedCall(record=recorded(1, task="Improve")),
        }
    )
    node = Node(Scripted(), replies=replies)

    first, second = asyncio.run(node.calls.call_batch([item(0), item(1)]))

    assert first[0].text == "PROGRAM: 7"
    assert isinstance(second[0], ReplayMismatch)


def test_call_outcomes_come_in_slot_order_with_errors_in_place() -> None:
    async def outcomes():
        async def reply(text):
            return OperatorReply(text=text), 0.0

        async def replies(*texts):
            return [(text, 0.0) for text in texts]

        async def stop():
            raise OperatorError("n: stopped")

        late, bug, batch = (
            asyncio.create_task(reply("late")),
            asyncio.create_task(stop()),
            asyncio.create_task(replies("b0", "b1")),
        )
        tasks = {late: [item(3)], bug: [item(2)], batch: [item(0), item(1)]}
        await asyncio.wait(tasks)
        return call_outcomes([late, bug, batch], tasks), tasks

    pairs, left = asyncio.run(outcomes())

    assert [pair[0].order for pair in pairs] == [0, 1, 2, 3]
    assert [pair[1] for pair in pairs[:2]] == [("b0", 0.0), ("b1", 0.0)]
    assert isinstance(pairs[2][1], OperatorError)
    assert pairs[3][1][0].text == "late"
    assert left == {}  # taken out of the calls in flight
