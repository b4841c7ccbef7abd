"""The money cap of a run with one process per node over real AXL, under a failure storm.

Four ``dei node`` processes (``dei-run --transport axl``) share ``--max-cost-usd X``: three
call a loopback OpenAI-compatible server that fails three requests in four (two of those
billed, as hosted providers bill some failures), one runs a free offline operator. The server's
own count of what it billed must stay within ``X``; the free node, once finished, hands the
money it did not spend to the three others, which then spend beyond their ``X / 4``
(docs/llm.md, "The money cap of nodes in processes of their own").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from midway import events
from openai_stub import OpenAIStub, billed_status, empty_choices, ok, status, stub
from test_axl_processes import axl_env, finish, launch

pytestmark = pytest.mark.axl
__all__ = ["axl_env", "stub"]  # the fixtures

MODEL = "openai/stub-model"
PRICE = (2000.0, 6000.0)  # USD per million tokens: dear, so that a few calls reach the cap
CAP = 6.0
REPLY = "Sum near two hundred.\nPROGRAM: 50 60 70\n"


def _config(path: Path, api_base: str, cheap_base: str) -> Path:
    # One call at a time, each success 5 s: the three spend their money over ~30 s, while the
    # cheap node's 40 calls end after ~10 s (its gossip mesh has formed by then: a node that
    # ends within a few seconds of its start may have no peer to tell).
    nodes = "".join(
        f'[[node]]\nname = "{name}"\noperator = "{MODEL}"\napi_base = "{base}"\nconcurrency = 1\n'
        for name, base in (("d", cheap_base), ("a", api_base), ("b", api_base), ("c", api_base))
    )
    path.write_text(
        f'domain = "toy"\ntransport = "axl"\nbudget = 160\nrounds = 2\nseed = 1\n'
        f"eval_workers = 0\nmax_cost_usd = {CAP}\n{nodes}"
        "[operator_options]\nretry_base = 0.01\nretry_max = 0.2\nmax_tokens = 40\n"
        f"timeout = 60\nprice = [{PRICE[0]}, {PRICE[1]}]\n"
        "[transport_options]\nheartbeat = 0.2\n"
    )
    return path


def test_four_node_processes_stay_within_the_money_cap_under_a_failure_storm(
    axl_env, stub, tmp_path
) -> None:
    stub.price = PRICE
    # 3 of every 4 requests fail; the 500 and the empty 200 are billed, like the success.
    stub.cycle(
        status(503),
        billed_status(500, completion_tokens=11),
        empty_choices(),
        ok(REPLY, completion_tokens=9, delay=5.0),
    )
    env = dict(axl_env, OPENAI_API_KEY="sk-test", LITELLM_LOCAL_MODEL_COST_MAP="True")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env.pop(name, None)
    # The fourth node's server answers every request, at one token each way, after 0.25 s.
    cheap = OpenAIStub(default=ok(REPLY, prompt_tokens=1, completion_tokens=1, delay=0.25))
    cheap.price = PRICE
    cheap.start()
    out = tmp_path / "run"
    try:
        code, _, stderr = finish(
            launch(_config(tmp_path / "run.toml", stub.base_url, cheap.base_url), out, env)
        )
    finally:
        cheap.stop()
    assert code == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    summary = json.loads((out / "summary.json").read_text())
    budget = summary["budget"]
    # The server's own count: within the ensemble's cap, and all of it in the ledger.
    assert stub.billed_usd + cheap.billed_usd <= CAP
    assert budget["cost_usd"] == pytest.approx(stub.billed_usd + cheap.billed_usd, rel=1e-9)
    assert budget["attempts"] == stub.requests + cheap.requests
    # The cheap node made its 40 calls and handed what it did not spend to the others ...
    assert budget["nodes"]["d"]["calls"] == 40
    handed = [e for e in events(out / "processes" / "d") if e.get("event") == "money_handed"]
    left = CAP / 4 - budget["nodes"]["d"]["cost_usd"]
    assert len(handed) == 1 and handed[0]["usd"] == pytest.approx(left) and left > 1.0
    assert sorted(handed[0]["to"]) == ["a", "b", "c"]
    received: dict[str, float] = {}
    for name in "abc":
        for e in events(out / "processes" / name):
            if e.get("event") == "money_received":
                received[name] = received.get(name, 0.0) + e["usd"]
    assert {
        e["from"]
        for name in "abc"
        for e in events(out / "processes" / name)
        if e.get("event") == "money_received"
    } >= {"d"}
    # ... and money, not calls, ended the three: a node's cap is its X / 4 plus what it was
    # handed, and some spent beyond X / 4 (an attempt's worst case here is under $0.40).
    for name in "abc":
        node = budget["nodes"][name]
        assert "money cap" in (summary["nodes"][name].get("stopped") or ""), summary["nodes"][name]
        assert node["cost_usd"] <= CAP / 4 + received.get(name, 0.0) + 1e-9
    assert any(budget["nodes"][name]["cost_usd"] > CAP / 4 for name in "abc"), budget
