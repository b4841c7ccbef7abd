"""Money and attempt caps, the cost ledger and exact replay, over real HTTP.

The loopback server prices tokens and, like a hosted provider, bills some failed attempts: a
500 whose body reports usage and a malformed 200 (usage, no choices). The ledger must equal the
server's own count for every billed attempt, and a money cap must hold by the server's count.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from dei_llm.operator import LLMOperator, LLMOptions
from openai_stub import billed_status, empty_choices, ok, status

from dei_framework.contract.errors import BudgetExhausted, ConfigError
from dei_framework.contract.operators import OperatorRequest, TransientOperatorFailure
from dei_framework.contract.price import Price
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.budget.usage import NodeCaps

MODEL = "openai/stub-model"
TOY_REPLY = "Sum near two hundred.\nPROGRAM: 50 60 70\n"
#: USD per million prompt and completion tokens: dear, so that a few calls reach a cap.
PRICE = (2000.0, 6000.0)
FAST_RETRIES = "[operator_options]\nretry_base = 0.01\nretry_max = 0.2\nmax_tokens = 40\n"


def failing_three_of_four(stub) -> None:
    """3 of every 4 requests fail retryably; two of those three are billed, like the success."""
    stub.price = PRICE
    stub.cycle(
        status(503),
        billed_status(500, completion_tokens=11),
        empty_choices(),
        ok(TOY_REPLY, completion_tokens=9),
    )


def _request(key: str, meter=None) -> OperatorRequest:
    return OperatorRequest(
        key=key,
        kind="new",
        meter=meter,
        messages=[{"role": "system", "content": "Toy."}, {"role": "user", "content": "Write"}],
    )


def _operator(stub, **options) -> LLMOperator:
    # A generous per-attempt timeout: on a loaded machine a 5 s one expired before the request
    # left, and the ledger then held an attempt the server never saw (these tests count them).
    defaults = {
        "api_base": stub.base_url,
        "retry_base": 0.01,
        "retry_max": 0.1,
        "timeout": 60,
        "max_tokens": 40,
        "price": list(PRICE),
    }
    return LLMOperator(MODEL, LLMOptions.from_mapping({**defaults, **options}), node="node-0")


# --- the operator and the ledger --------------------------------------------------------------


def test_every_billed_attempt_is_in_the_ledger(stub):
    failing_three_of_four(stub)
    ledger = BudgetLedger(quotas={"node-0": 3})
    op = _operator(stub)

    async def main():
        replies = []
        for i in range(3):
            meter = ledger.reserve("node-0")
            reply = await op.propose(_request(f"node-0/r0/s{i}", meter))
            meter.commit(reply)
            replies.append(reply)
        return replies

    replies = asyncio.run(main())
    usage = ledger.usage["node-0"]
    assert stub.requests == 12 and stub.billed_attempts == 9  # 3 calls x (1 unbilled + 3 billed)
    assert usage.calls == 3 and usage.attempts == 12
    assert usage.prompt_tokens == stub.billed_prompt_tokens
    assert usage.completion_tokens == stub.billed_completion_tokens == 3 * (11 + 7 + 9)
    assert usage.cost_usd == pytest.approx(stub.billed_usd, rel=1e-12)
    assert usage.unreported_attempts == 3  # the 503s reported nothing
    # A reply carries the usage of all its call's attempts, so a replay can restore the ledger.
    assert sum(r.completion_tokens for r in replies) == stub.billed_completion_tokens
    assert sum(r.cost_usd for r in replies) == pytest.approx(stub.billed_usd, rel=1e-12)


def test_a_failed_call_still_counts_what_it_was_billed(stub):
    stub.price = PRICE
    stub.cycle(billed_status(500, prompt_tokens=5, completion_tokens=3))
    ledger = BudgetLedger(quotas={"node-0": 1})
    op = _operator(stub, max_retries=2)

    async def main():
        meter = ledger.reserve("node-0")
        with pytest.raises(TransientOperatorFailure) as failure:
            await op.propose(_request("node-0/r0/s0", meter))
        meter.release(attempts=failure.value.attempts)

    asyncio.run(main())
    usage = ledger.usage["node-0"]
    assert usage.calls == 0 and usage.attempts == 3 == stub.billed_attempts
    assert (usage.prompt_tokens, usage.completion_tokens) == (15, 9)
    assert stub.billed_usd > 0
    assert usage.cost_usd == pytest.approx(stub.billed_usd, rel=1e-12)


def test_money_cap_refuses_attempts_that_could_break_it_under_concurrency(stub):
    stub.price = PRICE
    stub.default = ok(TOY_REPLY, completion_tokens=9)
    op = _operator(stub, concurrency=8)
    worst = Price.parse(PRICE).cost(2 * 8 + 16 + len("Toy.Write"), 40)
    cap = 5.5 * worst
    ledger = BudgetLedger(quotas={"node-0": None}, caps={"node-0": NodeCaps(cost_usd=cap)})

    async def one(i: int) -> str:
        try:
            meter = ledger.reserve("node-0")
        except BudgetExhausted:
            return "refused"
        try:
            reply = await op.propose(_request(f"node-0/r0/s{i}", meter))
        except BudgetExhausted:
            meter.release(attempts=0)
            return "refused"
        meter.commit(reply)
        return "done"

    async def main():
        return await asyncio.gather(*(one(i) for i in range(40)))

    outcomes = asyncio.run(main())
    usage = ledger.usage["node-0"]
    assert stub.billed_usd <= cap
    assert usage.cost_usd == pytest.approx(stub.billed_usd, rel=1e-12)
    assert outcomes.count("done") == stub.completed > 5  # actual costs settle below the worst
    assert "refused" in outcomes and "money cap" in usage.exhausted
    assert usage.in_flight == 0 and usage.reserved_usd == pytest.approx(0, abs=1e-12)


def test_unknown_price_is_unknown_not_zero(stub, capsys):
    stub.default = ok("x", prompt_tokens=3, completion_tokens=2)
    op = LLMOperator("openai/stub-model-unpriced", LLMOptions(api_base=stub.base_url))
    again = LLMOperator("openai/stub-model-unpriced", LLMOptions(api_base=stub.base_url))
    assert op.price is None and not op.priced and not again.priced
    assert capsys.readouterr().err.count("has no known price") == 1  # one warning per model
    ledger = BudgetLedger(quotas={"node-0": 1})

    async def main():
        meter = ledger.reserve("node-0")
        meter.commit(await op.propose(_request("node-0/r0/s0", meter)))

    asyncio.run(main())
    assert ledger.to_json()["cost_usd"] is None
    assert ledger.to_json()["nodes"]["node-0"]["cost_usd"] is None
    assert ledger.unpriced() == ["node-0"]


def test_price_options_are_checked():
    assert LLMOptions.from_mapping({"price": "0.4,1.6"}).price == Price(0.4, 1.6)
    prices = LLMOptions.from_mapping({"prices": {MODEL: [1, 2]}}).prices
    assert prices[MODEL] == Price(1.0, 2.0)
    assert prices[MODEL].cost(1_000_000, 500_000) == 2.0
    for bad in ("cheap", [1], [1, -2], "1,2,3"):
        with pytest.raises(ConfigError, match="USD per million"):
            LLMOptions.from_mapping({"price": bad})


def test_attempt_caps_per_call_and_per_node(stub):
    stub.cycle(status(503))
    ledger = BudgetLedger(
        quotas={"node-0": None}, caps={"node-0": NodeCaps(attempts=5)}, attempts_per_call=2
    )
    op = _operator(stub, max_retries=6)

    async def main():
        outcomes = []
        for i in range(4):
            try:
                meter = ledger.reserve("node-0")
            except BudgetExhausted as exc:
                outcomes.append(str(exc))
                continue
            try:
                await op.propose(_request(f"node-0/r0/s{i}", meter))
            except BudgetExhausted as exc:
                meter.release(attempts=0)
                outcomes.append(str(exc))
        return outcomes

    outcomes = asyncio.run(main())
    assert stub.requests == ledger.usage["node-0"].attempts == 5
    assert "cap of 2 attempt(s)" in outcomes[0]
    assert any("attempt cap of 5 reached" in o for o in outcomes)


# --- dei-run end to end -----------------------------------------------------------------------


def _dei_run(cli, env, stub, out: Path, *extra: str, nodes: int = 2, check: bool = True):
    return cli(
        "dei-run",
        "--domain",
        "toy",
        "--transport",
        "inmemory",
        "--nodes",
        str(nodes),
        "--operator",
        MODEL,
        "--api-base",
        stub.base_url,
        "--rounds",
        "2",
        "--seed",
        "1",
        "--out",
        str(out),
        "--progress",
        "quiet",
        "--no-report",
        "--eval-workers",
        "0",
        *extra,
        env=env,
        check=check,
        timeout=300,
    )


def _config(tmp_path: Path, text: str = FAST_RETRIES) -> str:
    path = tmp_path / "dei.toml"
    path.write_text(text)
    return str(path)


def test_max_cost_holds_by_the_servers_count(cli, env, stub, tmp_path):
    failing_three_of_four(stub)
    out = tmp_path / "run"
    cap = 4.0
    result = _dei_run(
        cli,
        env,
        stub,
        out,
        "--budget",
        "200",
        "--max-cost-usd",
        str(cap),
        "--price",
        f"{MODEL}={PRICE[0]},{PRICE[1]}",
        "--config",
        _config(tmp_path),
    )
    summary = json.loads((out / "summary.json").read_text())
    budget = summary["budget"]
    assert stub.billed_usd <= cap  # the server's own count
    assert budget["cost_usd"] == pytest.approx(stub.billed_usd, rel=1e-9)
    assert budget["prompt_tokens"] == stub.billed_prompt_tokens
    assert budget["completion_tokens"] == stub.billed_completion_tokens
    assert budget["attempts"] == stub.requests
    assert budget["calls"] == stub.completed < 200  # money, not calls, ended the run
    assert budget["unpriced_nodes"] == []
    # An attempt's worst case here is under $0.40 (a toy prompt of < 60 bytes and 40 completion
    # tokens at $2000/$6000 per million): each node stopped only when that no longer fitted.
    for name, node in summary["nodes"].items():
        assert "money cap of $2 reached" in node["stopped"]
        assert cap / 2 - 0.4 < budget["nodes"][name]["cost_usd"] <= cap / 2
    assert "Traceback" not in result.stderr and "has no known price" not in result.stderr
    # Failed calls are recorded with what they were billed, so the record accounts for it all.
    calls = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    assert sum(c["usage"]["cost_usd"] for c in calls) == pytest.approx(stub.billed_usd, rel=1e-9)
    assert all(c["messages_sha256"].startswith("sha256:") for c in calls)


def test_money_cap_with_an_unpriced_model_is_refused_up_front(cli, env, stub, tmp_path):
    result = _dei_run(
        cli, env, stub, tmp_path / "run", "--budget", "8", "--max-cost-usd", "1", check=False
    )
    assert result.returncode == 1
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("error: --max-cost-usd:")
    assert f"{MODEL} has no known price" in line and f"--price {MODEL}=IN,OUT" in line
    assert "Traceback" not in result.stderr
    assert stub.requests == 0


def test_compute_axis_tokens_splits_tokens_equally(cli, env, stub, tmp_path):
    stub.default = ok(TOY_REPLY, completion_tokens=9)
    out = tmp_path / "run"
    _dei_run(
        cli,
        env,
        stub,
        out,
        "--compute-axis",
        "tokens",
        "--budget",
        "2000",
        "--iterations",
        "50",
        "--config",
        _config(tmp_path),
    )
    summary = json.loads((out / "summary.json").read_text())
    budget = summary["budget"]
    assert summary["compute_axis"] == budget["axis"] == "tokens"
    assert budget["limit"] == 2000
    assert budget["spent"] == budget["prompt_tokens"] + budget["completion_tokens"]
    assert budget["spent"] == stub.billed_prompt_tokens + stub.billed_completion_tokens <= 2000
    for node in budget["nodes"].values():
        assert node["share"] == 1000 and node["spent"] <= 1000
        # The node went on until the next call's worst case no longer fitted its share.
        assert node["exhausted_cap"] == "token"
    for node in summary["nodes"].values():
        assert "token budget of 1000 reached" in node["stopped"]
        assert node["calls"] < 100  # the tokens, not the calls, ended the node


def _experiment(cli, env, stub, out: Path, *extra: str, check: bool = True):
    return cli(
        "dei",
        "experiment",
        "--domain",
        "toy",
        "--operator",
        MODEL,
        "--api-base",
        stub.base_url,
        "--conditions",
        "solo,homo",
        "--nodes",
        "2",
        "--rounds",
        "2",
        "--seed",
        "1",
        "--out",
        str(out),
        "--progress",
        "quiet",
        "--eval-workers",
        "0",
        *extra,
        env=env,
        check=check,
        timeout=600,
    )


def test_an_experiment_on_the_tokens_axis_gives_every_condition_the_same_tokens(
    cli, env, stub, tmp_path
):
    stub.default = ok(TOY_REPLY, completion_tokens=9)
    out = tmp_path / "experiment"
    _experiment(
        cli,
        env,
        stub,
        out,
        "--compute-axis",
        "tokens",
        "--budget",
        "2000",
        "--iterations",
        "60",
        "--config",
        _config(tmp_path),
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["compute_axis"] == "tokens" and summary["budget"] == 2000
    assert summary["equal_compute"] is True
    spent = 0
    for name, nodes, bound in (("solo", 1, 120), ("homo", 2, 60)):
        condition = summary["conditions"][name]["budget"]
        assert condition["axis"] == "tokens" and condition["equal_compute"] is True
        run_dir = out / name / "repeat-0"
        config = json.loads((run_dir / "config.json").read_text())
        # Solo's one node has twice a Homo node's tokens, so twice its call bound.
        assert config["iterations"] == bound and config["budget"] == 2000
        run = json.loads((run_dir / "summary.json").read_text())["budget"]
        assert run["limit"] == 2000 and run["spent"] <= 2000
        shares = [node["share"] for node in run["nodes"].values()]
        assert shares == [2000 // nodes] * nodes
        assert all(node["exhausted_cap"] == "token" for node in run["nodes"].values())
        spent += run["spent"]
    # Every token the server billed is in some run's ledger, and no more.
    assert spent == stub.billed_prompt_tokens + stub.billed_completion_tokens
    assert "**2000 tokens** (prompt + completion)" in (out / "report.md").read_text()


def test_a_call_bound_that_ends_nodes_before_their_tokens_is_reported_as_unequal(
    cli, env, stub, tmp_path
):
    stub.default = ok(TOY_REPLY, completion_tokens=9)  # 13 or 14 tokens a call
    out = tmp_path / "experiment"
    _experiment(
        cli,
        env,
        stub,
        out,
        "--compute-axis",
        "tokens",
        "--budget",
        "2000",
        "--iterations",
        "20",
        "--config",
        _config(tmp_path),
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["equal_compute"] is False
    for name in ("solo", "homo"):
        run = json.loads((out / name / "repeat-0" / "summary.json").read_text())["budget"]
        assert run["spent"] < 2000 - 14 * len(run["nodes"])  # tokens left: calls ran out first
        assert all(node["exhausted_cap"] is None for node in run["nodes"].values())
    assert "Equal compute **does not hold**" in (out / "report.md").read_text()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ("--compute-axis", "tokens", "--budget", "2000"),
            "--compute-axis tokens needs --iterations",
        ),
        (
            ("--compute-axis", "tokens", "--iterations", "20"),
            "--compute-axis tokens needs --budget",
        ),
        (
            ("--compute-axis", "tokens", "--budget", "2001", "--iterations", "20"),
            "--budget 2001 tokens does not split equally across the 2 nodes of condition 'homo'",
        ),
        (("--budget", "40", "--iterations", "20"), "not --iterations (the call bound of"),
    ],
)
def test_a_tokens_experiment_without_a_whole_split_is_refused(
    cli, env, stub, tmp_path, extra, message
):
    result = _experiment(cli, env, stub, tmp_path / "experiment", *extra, check=False)
    assert result.returncode == 1
    assert message in result.stderr.strip().splitlines()[-1], result.stderr
    assert "Traceback" not in result.stderr and stub.requests == 0


# --- exact replay -----------------------------------------------------------------------------


#: Half the calls write new programs, whose prompts the tests below leave unchanged.
HALF_NEW = "new_fraction = 0.5\n"


def _recorded_calls(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]


def _change_mutation_prompts(out: Path) -> None:
    config = json.loads((out / "config.json").read_text())
    config["domain_options"] = {**config["domain_options"], "improve": "Refine"}
    (out / "config.json").write_text(json.dumps(config))


def test_replay_of_changed_prompts_stops_at_the_first_mismatch(cli, env, stub, tmp_path):
    stub.default = ok(TOY_REPLY)
    out = tmp_path / "run"
    _dei_run(
        cli, env, stub, out, "--budget", "12", "--config", _config(tmp_path, HALF_NEW), nodes=1
    )
    calls = _recorded_calls(out)
    first = min(
        (c for c in calls if c["kind"] == "mutate"),
        key=lambda c: (c["round"], int(c["key"].rsplit("s", 1)[1])),
    )
    _change_mutation_prompts(out)
    served = stub.requests
    result = cli(
        "dei-run",
        "--replay",
        str(out),
        "--out",
        str(tmp_path / "replay"),
        "--progress",
        "quiet",
        "--no-report",
        env=env,
        check=False,
    )
    assert result.returncode == 1
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: replay: call {first['key']} has different messages"), line
    assert "--reask-mismatched" in line and "Traceback" not in result.stderr
    assert stub.requests == served


def test_reask_mismatched_asks_only_the_changed_calls(cli, env, stub, tmp_path):
    stub.default = ok(TOY_REPLY)
    out = tmp_path / "run"
    _dei_run(
        cli, env, stub, out, "--budget", "12", "--config", _config(tmp_path, HALF_NEW), nodes=1
    )
    _change_mutation_prompts(out)
    served = stub.requests
    again = tmp_path / "replay"
    cli(
        "dei-run",
        "--replay",
        str(out),
        "--out",
        str(again),
        "--progress",
        "quiet",
        "--no-report",
        "--reask-mismatched",
        env=env,
    )
    replayed = _recorded_calls(again)
    from_record = [c for c in replayed if c.get("replayed")]
    asked = [c for c in replayed if not c.get("replayed")]
    assert from_record and asked
    assert all(c["kind"] == "new" for c in from_record)
    assert stub.requests - served == len(asked)


def test_experiment_checks_equal_compute_on_the_chosen_axis():
    from dei_framework.experiment.summary import equal_on_axis

    def run(calls, limit, caps):
        return {
            "budget": {
                "calls": calls,
                "limit": limit,
                "nodes": {f"node-{i}": {"exhausted_cap": cap} for i, cap in enumerate(caps)},
            }
        }

    assert equal_on_axis("calls", [run(8, 8, [None]), run(8, 8, [None, None])], 8)
    assert not equal_on_axis("calls", [run(8, 8, [None]), run(6, 8, [None])], 8)
    # On tokens, equal means every node spent its share up to the last attempt that fitted.
    assert equal_on_axis("tokens", [run(5, 2000, ["token"]), run(9, 2000, ["token", "token"])], 0)
    assert not equal_on_axis("tokens", [run(5, 2000, ["token", None])], 0)  # one stopped early
    assert not equal_on_axis("cost", [run(5, 1.0, ["cost"]), run(5, 2.0, ["cost"])], 0)
