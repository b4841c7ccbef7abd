"""Tests of the LLM operator against the loopback OpenAI stub, over real HTTP through litellm."""

from __future__ import annotations

import asyncio
import time

import pytest
from dei_llm.operator import LLMOperator, LLMOptions, import_litellm
from openai_stub import DEFAULT_TEXT, malformed_json, ok, slow, status

from dei_framework.contract.errors import ConfigError, OperatorError
from dei_framework.contract.operators import (
    OperatorRequest,
    OperatorSettings,
    TransientOperatorFailure,
)
from dei_framework.runtime.budget.ledger import BudgetLedger

MODEL = "openai/stub-model"


def _request(key: str = "node-0/0/0") -> OperatorRequest:
    return OperatorRequest(
        key=key,
        kind="new",
        messages=[
            {"role": "system", "content": "You write Redcode warriors."},
            {"role": "user", "content": "Write a new warrior."},
        ],
    )


def _operator(stub, **options) -> LLMOperator:
    defaults = {"api_base": stub.base_url, "retry_base": 0.01, "timeout": 5}
    return LLMOperator(MODEL, LLMOptions.from_mapping({**defaults, **options}), node="node-0")


def _run(coro):
    return asyncio.run(coro)


def test_reply_text_usage_and_request(stub):
    stub.script(ok("MOV 0, 1", prompt_tokens=17, completion_tokens=5))
    op = _operator(stub, temperature=0.3, max_tokens=99)
    reply = _run(op.propose(_request()))
    assert reply.text == "MOV 0, 1"
    assert (reply.prompt_tokens, reply.completion_tokens, reply.attempts) == (17, 5, 1)
    assert reply.cost_usd is None  # stub-model has no price: unknown, never a made-up 0
    assert reply.model == "stub-model"
    body = stub.bodies[-1]
    assert body["model"] == "stub-model"
    assert body["messages"][0] == {"role": "system", "content": "You write Redcode warriors."}
    assert body["temperature"] == 0.3 and body["max_tokens"] == 99
    assert op.label == MODEL and op.offline is False
    assert op.status()["calls"] == 1 and op.status()["errors"] == 0


def test_default_stub_reply_is_a_fenced_warrior(stub):
    reply = _run(_operator(stub).propose(_request()))
    assert reply.text == DEFAULT_TEXT
    assert "```redcode" in reply.text


def test_defaults_follow_the_paper():
    options = LLMOptions.from_mapping({})
    assert (options.temperature, options.max_tokens, options.timeout) == (1.0, 2048, 120.0)
    assert (options.concurrency, options.max_retries) == (4, 6)


def test_429_with_retry_after_then_success(stub):
    stub.script(status(429, retry_after=0.3), ok("MOV 0, 1", 10, 4))
    op = _operator(stub)
    started = time.monotonic()
    reply = _run(op.propose(_request()))
    waited = time.monotonic() - started
    assert reply.attempts == 2 and reply.text == "MOV 0, 1"
    assert waited >= 0.3  # Retry-After honoured although retry_base is 0.01
    assert stub.statuses[429] == 1 and stub.completed == 1
    status_ = op.status()
    assert status_["retries"] == 1 and status_["errors"] == 1
    assert "429" in status_["last_error"]


def test_retry_after_is_capped(stub):
    stub.script(status(429, retry_after=30), ok())
    import_litellm()  # its first import takes seconds: not part of the wait measured here
    started = time.monotonic()
    reply = _run(_operator(stub, retry_max=0.2).propose(_request()))
    assert reply.attempts == 2
    assert time.monotonic() - started < 5


def test_500s_are_retried(stub):
    stub.script(status(500), status(502), status(503), ok())
    reply = _run(_operator(stub).propose(_request()))
    assert reply.attempts == 4
    assert stub.requests == 4 and stub.completed == 1


def test_retries_used_up_is_a_transient_failure(stub):
    stub.default = status(500)
    op = _operator(stub, max_retries=2)
    with pytest.raises(TransientOperatorFailure) as info:
        _run(op.propose(_request()))
    assert info.value.attempts == 3  # first attempt + 2 retries
    assert stub.requests == 3  # neither litellm nor the OpenAI SDK retried on their own
    assert MODEL in str(info.value)
    assert op.status() | {"last_error": ""} == {
        "calls": 0,
        "errors": 3,
        "retries": 2,
        "transient_failures": 1,
        "in_flight": 0,
        "last_error": "",
    }


def test_slow_reply_beyond_timeout_is_retried(stub):
    # The first reply comes long after the timeout; every later one at once. On a loaded
    # machine even a prompt reply may miss a short timeout, so the count is "at least two"
    # (the first attempt always times out) and every later attempt can only succeed.
    stub.script(slow(4.0))
    stub.default = ok("MOV 0, 1")
    op = _operator(stub, timeout=1.0)
    reply = _run(op.propose(_request()))
    assert reply.attempts >= 2 and reply.text == "MOV 0, 1"
    assert "Timeout" in op.status()["last_error"] or "timed out" in op.status()["last_error"]


def test_slow_replies_end_in_transient_failure(stub):
    stub.default = slow(1.0)
    op = _operator(stub, timeout=0.3, max_retries=1)
    with pytest.raises(TransientOperatorFailure) as info:
        _run(op.propose(_request()))
    assert info.value.attempts == 2
    # The timeout is hard: every request the stub received found its client gone when the
    # reply was ready, and none was delivered (not a wall-clock bound, which a loaded machine
    # breaks; on one, the second attempt may time out before the stub has even read it).
    deadline = time.monotonic() + 30
    while stub.abandoned < stub.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stub.completed == 0 and 1 <= stub.abandoned == stub.requests <= 2


def test_malformed_json_is_retried(stub):
    stub.script(malformed_json(), ok("MOV 0, 1"))
    reply = _run(_operator(stub).propose(_request()))
    assert reply.attempts == 2 and reply.text == "MOV 0, 1"


@pytest.mark.parametrize(
    ("code", "cause", "hint"),
    [
        (401, "authentication failed", "OPENAI_API_KEY"),
        (403, "permission denied", ""),
        (404, "model not found", "--api-base"),
        (400, "request rejected", ""),
    ],
)
def test_fatal_statuses_stop_without_retry(stub, code, cause, hint):
    stub.default = status(code)
    op = _operator(stub)
    with pytest.raises(OperatorError) as info:
        _run(op.propose(_request()))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{MODEL} at {stub.base_url}: {cause}")
    assert hint in message
    assert stub.requests == 1  # no retry
    assert op.status()["retries"] == 0 and op.status()["errors"] == 1


def test_wrong_key_message(stub, monkeypatch):
    stub.api_keys = {"sk-right"}
    with pytest.raises(OperatorError, match=r"authentication failed \(check OPENAI_API_KEY\)"):
        _run(_operator(stub).propose(_request()))
    with pytest.raises(OperatorError, match=r"authentication failed \(check the api_key option"):
        _run(_operator(stub, api_key="sk-wrong").propose(_request()))
    reply = _run(_operator(stub, api_key="sk-right").propose(_request()))
    assert reply.attempts == 1


def test_concurrency_is_respected(stub):
    stub.default = ok("MOV 0, 1", 3, 2, delay=0.05)
    op = _operator(stub, concurrency=3)
    assert op.max_in_flight == 3

    async def main():
        return await asyncio.gather(*(op.propose(_request(f"n/0/{i}")) for i in range(32)))

    replies = _run(main())
    assert len(replies) == 32 and all(r.text == "MOV 0, 1" for r in replies)
    assert stub.completed == 32
    assert stub.max_in_flight == 3  # saturated, never exceeded


def test_ledger_matches_what_the_server_served(stub):
    """Driving the core's ledger the way the core does: reserve, then commit or release."""
    stub.script(ok(), status(429, retry_after=0.05), ok(), status(500), status(500), status(500))
    ledger = BudgetLedger(quotas={"node-0": 6}, models={"node-0": MODEL})
    op = _operator(stub, max_retries=2)

    async def one(i: int):
        ledger.reserve("node-0")
        try:
            reply = await op.propose(_request(f"node-0/0/{i}"))
        except TransientOperatorFailure as exc:
            ledger.release("node-0", attempts=exc.attempts)
        else:
            ledger.commit("node-0", reply)

    async def main():
        for i in range(4):
            await one(i)

    _run(main())
    usage = ledger.usage["node-0"]
    assert usage.calls == stub.completed == 3
    assert usage.prompt_tokens == stub.prompt_tokens
    assert usage.completion_tokens == stub.completion_tokens
    assert usage.attempts == stub.requests == 7


def test_replies_are_deterministic_to_serialise(stub):
    import attrs

    stub.default = ok("MOV 0, 1", 7, 3)
    op = _operator(stub)
    first = attrs.asdict(_run(op.propose(_request())))
    second = attrs.asdict(_run(op.propose(_request())))
    assert first == second
    assert first == {
        "text": "MOV 0, 1",
        "prompt_tokens": 7,
        "completion_tokens": 3,
        "cost_usd": None,
        "attempts": 1,
        "model": "stub-model",
    }


def test_known_price_gives_a_cost(stub):
    stub.default = ok("MOV 0, 1", 1000, 1000)
    # The stub answers whatever model it is asked for; litellm prices gpt-4o-mini.
    op = LLMOperator("openai/gpt-4o-mini", LLMOptions(api_base=stub.base_url, retry_base=0.01))
    reply = _run(op.propose(_request()))
    # gpt-4o-mini at litellm's bundled price: $0.15 and $0.60 per million tokens.
    assert reply.cost_usd == pytest.approx(1000 * 0.15e-6 + 1000 * 0.60e-6)


@pytest.mark.parametrize(
    ("options", "pattern"),
    [
        ({"temperature": "hot"}, "temperature must be a number"),
        ({"concurrency": 0}, "concurrency must be at least 1"),
        ({"max_tokens": 1.5}, "max_tokens must be a number"),
        ({"api_base": ""}, "api_base must be a non-empty string"),
        ({"params": 3}, "params must be a table"),
    ],
)
def test_bad_options(options, pattern):
    with pytest.raises(ConfigError, match=pattern):
        LLMOptions.from_mapping(options)


def test_options_from_settings_ignore_other_keys():
    settings = OperatorSettings(
        spec=MODEL,
        node="node-1",
        options={"temperature": 0.5, "concurrency": "2", "budget": 8, "operator": MODEL},
    )
    op = LLMOperator.from_settings(MODEL, settings)
    assert op.options.temperature == 0.5 and op.max_in_flight == 2 and op.node == "node-1"


def test_api_key_env_option(stub, monkeypatch):
    stub.api_keys = {"sk-node"}
    monkeypatch.setenv("NODE_KEY", "sk-node")
    monkeypatch.setenv("WRONG_KEY", "sk-wrong")
    reply = _run(_operator(stub, api_key_env="NODE_KEY").propose(_request()))
    assert reply.attempts == 1
    with pytest.raises(OperatorError, match=r"authentication failed \(check WRONG_KEY\)"):
        _run(_operator(stub, api_key_env="WRONG_KEY").propose(_request()))
    monkeypatch.delenv("NODE_KEY")
    with pytest.raises(ConfigError, match="NODE_KEY is not set"):
        LLMOptions.from_mapping({"api_key_env": "NODE_KEY"})
    assert "sk-" not in repr(LLMOptions.from_mapping({"api_key": "sk-secret"}))


def test_fatal_error_is_sticky(stub):
    """Calls queued behind a wrong key fail at once, without reaching the server."""
    stub.default = status(401, retry_after=None)
    stub.script(status(401, retry_after=None))
    op = _operator(stub, concurrency=1)

    async def main():
        return await asyncio.gather(
            *(op.propose(_request(f"n/0/{i}")) for i in range(5)), return_exceptions=True
        )

    results = _run(main())
    assert all(isinstance(r, OperatorError) for r in results)
    assert len({str(r) for r in results}) == 1
    assert stub.requests == 1


def test_a_call_waiting_to_retry_stops_once_another_finds_the_provider_unusable(stub):
    """One call's 500 is worth a retry; by the time it would retry, the call beside it has
    found a wrong key: no further request, the same one-line error for both."""
    stub.script(status(500, retry_after=None), status(401, retry_after=None))
    stub.default = status(401, retry_after=None)
    op = _operator(stub, concurrency=2, retry_base=0.5, retry_max=0.5)

    async def main():
        return await asyncio.gather(
            *(op.propose(_request(f"n/0/{i}")) for i in range(2)), return_exceptions=True
        )

    results = _run(main())
    assert all(isinstance(r, OperatorError) for r in results), results
    assert len({str(r) for r in results}) == 1
    assert stub.requests == 2


def _refused_as_litellm_reports_it() -> Exception:
    """A refused connection as litellm raises it: a 500 whose context holds the socket error."""
    import litellm

    try:
        try:
            raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")
        except ConnectionRefusedError:
            raise litellm.InternalServerError(  # noqa: B904 - litellm chains it implicitly
                message="Connection error.", llm_provider="openai", model="stub-model"
            )
    except litellm.InternalServerError as exc:
        return exc


class _ScriptedLitellm:
    """Stands in for the litellm module: ``acompletion`` runs ``behaviour``, counting calls."""

    def __init__(self, behaviour) -> None:
        self.behaviour = behaviour
        self.calls = 0
        self.started: asyncio.Event | None = None

    async def acompletion(self, **kwargs):
        self.calls += 1
        assert self.started is not None
        self.started.set()
        return await self.behaviour()


def _cancel_once_started(op: LLMOperator, fake: _ScriptedLitellm) -> None:
    async def main():
        fake.started = asyncio.Event()
        task = asyncio.create_task(op.propose(_request()))
        await fake.started.wait()
        task.cancel()  # the node stops while the call is out
        with pytest.raises(asyncio.CancelledError):
            await task

    _run(main())


def test_a_call_cancelled_just_as_its_connection_is_refused_ends_cancelled(stub):
    """The cancellation and the failed reply meet in one turn of the event loop. (With
    asyncio.wait_for, Python 3.11 dropped the cancellation and re-raised the failure with its
    context overwritten: the refused connection looked transient and was retried.)"""
    refused = _refused_as_litellm_reports_it()

    async def refuse():
        await asyncio.sleep(0)
        raise refused

    fake = _ScriptedLitellm(refuse)
    op = _operator(stub)
    op._litellm = fake
    _cancel_once_started(op, fake)
    assert fake.calls == 1 and op.status()["retries"] == 0


def test_a_cancellation_a_library_turns_into_an_error_is_not_retried(stub):
    """An HTTP library that answers a cancellation with a 'connection error' (retryable
    for us) must not make a stopping node send the request again."""
    import litellm

    async def swallow_cancellation():
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            raise litellm.APIConnectionError(  # noqa: B904
                message="Connection error.", llm_provider="openai", model="stub-model"
            )

    fake = _ScriptedLitellm(swallow_cancellation)
    op = _operator(stub)
    op._litellm = fake
    _cancel_once_started(op, fake)
    assert fake.calls == 1 and op.status()["retries"] == 0


def test_missing_key_is_fatal_without_reaching_the_server(stub, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    op = LLMOperator(
        "openai/stub-model", LLMOptions(api_base="http://10.255.255.1:9/v1", retry_base=0.01)
    )
    with pytest.raises(OperatorError, match=r"no API key: set OPENAI_API_KEY"):
        _run(op.propose(_request()))
    assert op.status()["retries"] == 0


def test_local_openai_compatible_server_needs_no_key(stub, monkeypatch):
    """llama.cpp / MLX style: ``openai/<model>`` at a loopback api_base, no key set."""
    monkeypatch.delenv("OPENAI_API_KEY")
    reply = _run(_operator(stub).propose(_request()))
    assert reply.attempts == 1 and stub.completed == 1


def test_a_pending_first_call_is_announced(stub, monkeypatch, capsys):
    import dei_llm.operator as operator_module

    monkeypatch.setattr(operator_module, "FIRST_REPLY_NOTICE", 0.2)
    stub.script(ok("MOV 0, 1", delay=1.0), ok("MOV 0, 1", delay=1.0))
    op = _operator(stub)
    _run(op.propose(_request()))
    waiting = [line for line in capsys.readouterr().err.splitlines() if "waiting" in line]
    assert waiting == [
        f"[node-0] waiting for the first reply of {MODEL} at {stub.base_url} "
        "(0 s so far; timeout 5 s per attempt)"
    ]
    _run(op.propose(_request("node-0/0/1")))  # a later call is not the first: no line
    assert "waiting" not in capsys.readouterr().err


def test_error_lines_carry_no_object_reprs(stub):
    op = _operator(stub)
    exc = ConnectionError(
        "Cannot connect to host 127.0.0.1:9 ssl:<ssl.SSLContext object at 0x7f3a2c1d5e40> "
        "[Connect call failed ('127.0.0.1', 9)]"
    )
    described = op._describe(exc)
    assert described == (
        "ConnectionError: Cannot connect to host 127.0.0.1:9 [Connect call failed ('127.0.0.1', 9)]"
    )


def test_a_server_that_only_fails_ends_the_node_naming_status_url_and_count(stub):
    # Calls that run out of retries are given back to the budget and made again: without a
    # bound across calls, a server answering 500 to everything would be asked for ever.
    stub.default = status(500)
    op = _operator(stub, max_retries=2, max_consecutive_failures=7)
    for index in range(2):  # two calls given back: 6 failed attempts in a row
        with pytest.raises(TransientOperatorFailure):
            _run(op.propose(_request(f"node-0/0/{index}")))
    with pytest.raises(OperatorError) as info:
        _run(op.propose(_request("node-0/0/2")))
    assert str(info.value) == (
        f"node-0: HTTP 500 × 7 from {stub.base_url}/chat/completions ({MODEL})"
    )
    assert stub.requests == 7
    with pytest.raises(OperatorError):  # sticky: later calls do not reach the server
        _run(op.propose(_request("node-0/0/3")))
    assert stub.requests == 7


def test_a_reply_ends_the_streak_of_failures(stub):
    stub.script(status(500), status(503), ok(), status(500), status(500), ok())
    op = _operator(stub, max_consecutive_failures=3)
    assert _run(op.propose(_request())).attempts == 3
    assert _run(op.propose(_request("node-0/0/1"))).attempts == 3  # 2 in a row, not 4


def test_failing_without_a_reply_for_too_long_ends_the_node(stub):
    stub.default = status(502)
    op = _operator(
        stub,
        max_retries=100,
        max_consecutive_failures=0,
        max_seconds_without_reply=0.3,
        retry_base=0.05,
        retry_max=0.05,
    )
    with pytest.raises(OperatorError) as info:
        _run(op.propose(_request()))
    message = str(info.value)
    assert message.startswith("node-0: no completed call in ")
    assert message.endswith(
        f" s: HTTP 502 × {stub.requests} from {stub.base_url}/chat/completions ({MODEL})"
    )


def test_progress_says_which_failure_is_retried_instead_of_waiting(stub, monkeypatch, capsys):
    import dei_llm.operator as operator_module

    monkeypatch.setattr(operator_module, "FIRST_REPLY_NOTICE", 0.1)
    stub.default = status(500)
    op = _operator(stub, max_retries=30, max_consecutive_failures=12, retry_base=0.2, retry_max=0.2)
    with pytest.raises(OperatorError):
        _run(op.propose(_request()))
    lines = capsys.readouterr().err.splitlines()
    retrying = [line for line in lines if "retrying after" in line]
    assert retrying, lines
    assert all(line.startswith("[node-0] retrying after HTTP 500 (") for line in retrying)
    assert retrying[-1].endswith(f"): no reply yet from {MODEL} at {stub.base_url}")
    counts = [int(line.split("(", 1)[1].split(")", 1)[0]) for line in retrying]
    assert counts == sorted(set(counts)) and counts[-1] < 12  # new news only, never repeated


def test_rate_limits_count_towards_the_time_bound_only(stub):
    # A 429 says "later", not "broken": a burst of them longer than the count bound is waited
    # out (an exhausted quota, 429 for ever, is ended by the time bound instead).
    stub.script(*[status(429, retry_after=0.01)] * 5, ok())
    op = _operator(stub, max_consecutive_failures=3)
    assert _run(op.propose(_request())).attempts == 6
    stub.default = status(429, retry_after=0.01)
    op = _operator(stub, max_retries=100, max_consecutive_failures=3, max_seconds_without_reply=0.2)
    with pytest.raises(OperatorError, match=r"no completed call in \d+ s: HTTP 429 × \d+ from"):
        _run(op.propose(_request("node-0/0/1")))


def test_litellms_placeholder_request_url_is_never_reported_as_where_a_request_went(monkeypatch):
    import dei_llm.operator as operator_module
    import httpx

    # No api_base: the preflight would ask the real provider's model list; no test may.
    monkeypatch.setattr(operator_module, "preflight", lambda *args, **kwargs: None)

    class Failure(Exception):
        def __init__(self, url: str) -> None:
            super().__init__("stub")
            self.response = httpx.Response(500, request=httpx.Request("POST", url))

    op = LLMOperator(MODEL, LLMOptions.from_mapping({}), node="node-0")
    for placeholder in (
        "https://litellm.ai",
        "https://api.openai.com/v1",
        "https://cloud.google.com/vertex-ai/",
    ):
        assert op._request_url(Failure(placeholder)) is None
    real = "https://api.openai.com/v1/chat/completions"
    assert op._request_url(Failure(real)) == real
