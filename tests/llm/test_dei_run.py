"""End-to-end ``dei-run`` with LLM nodes against the loopback OpenAI stub (no network, no key).

Each run goes through the real console script in a subprocess, so everything is exercised:
flag and TOML merging, the ``llm`` plugin's factory, litellm over HTTP, retries, the core's
budget ledger, ``summary.json`` and replay. The Core War domain is used when its plugin is
registered; the toy domain (the core's test distribution) always runs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from openai_stub import ok, status

MODEL = "openai/stub-model"
TOY_REPLY = "Sum near two hundred.\nPROGRAM: 50 60 70\n"


@pytest.fixture(scope="session")
def registered_domains(toy_site) -> set[str]:
    import os

    env = dict(os.environ, PYTHONPATH=str(toy_site))
    out = subprocess.run(["dei", "plugins", "--json"], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        return set()
    return {row["name"] for row in json.loads(out.stdout)["domains"]}


@pytest.fixture(params=["coreware", "toy"])
def domain(request, registered_domains, stub) -> str:
    name = request.param
    if name not in registered_domains:
        pytest.skip(f"domain {name!r} is not registered (its plugin is not in this checkout yet)")
    if name == "toy":
        stub.default = ok(TOY_REPLY)
    return name


def _write_config(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


FAST_RETRIES = "[operator_options]\nretry_base = 0.01\nretry_max = 0.5\n"


def _dei_run(cli, env, domain: str, stub, out: Path, *extra: str, check: bool = True):
    return cli(
        "dei-run",
        "--domain",
        domain,
        "--transport",
        "inmemory",
        "--nodes",
        "2",
        "--operator",
        MODEL,
        "--api-base",
        stub.base_url,
        "--budget",
        "8",
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


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_ledger_equals_what_the_server_served(cli, env, domain, stub, tmp_path):
    stub.script(status(429, retry_after=0.05), status(500))  # two retried attempts
    config = _write_config(tmp_path / "dei.toml", FAST_RETRIES)
    out = tmp_path / "run"
    result = _dei_run(cli, env, domain, stub, out, "--config", config)
    budget = _summary(out)["budget"]
    assert budget["limit"] == 8
    assert budget["calls"] == stub.completed == 8
    assert budget["attempts"] == stub.requests == 10
    assert budget["prompt_tokens"] == stub.prompt_tokens > 0
    assert budget["completion_tokens"] == stub.completion_tokens > 0
    # stub-model has no price: its cost is unknown (null), never a made-up 0.0, and said so.
    assert budget["cost_usd"] is None
    assert budget["unpriced_nodes"] == ["node-0", "node-1"]
    assert result.stderr.count(f"{MODEL} has no known price") == 1
    assert "cost unknown" in result.stderr
    assert set(budget["nodes"]) == {"node-0", "node-1"}
    for usage in budget["nodes"].values():
        assert usage["calls"] == usage["quota"] == 4  # split equally, none over its quota
        assert usage["model"] == MODEL
    assert stub.by_model == {"stub-model": 8}


def test_wrong_key_stops_one_node_only(cli, env, domain, stub, tmp_path):
    stub.api_keys = {"sk-test"}
    env["WRONG_KEY"] = "sk-wrong"
    config = _write_config(
        tmp_path / "dei.toml",
        FAST_RETRIES + f'\n[[node]]\noperator = "{MODEL}"\n\n'
        f'[[node]]\noperator = "{MODEL}"\napi_key_env = "WRONG_KEY"\n',
    )
    out = tmp_path / "run"
    result = _dei_run(cli, env, domain, stub, out, "--config", config, check=False)
    assert "Traceback" not in result.stderr
    summary = _summary(out)
    nodes = summary["nodes"]
    assert nodes["node-0"]["stopped"] is None and nodes["node-0"]["calls"] == 4
    reason = nodes["node-1"]["stopped"]
    assert reason and "\n" not in reason
    assert MODEL in reason and "authentication failed (check WRONG_KEY)" in reason
    assert nodes["node-1"]["calls"] == 0
    assert summary["budget"]["calls"] == stub.completed == 4
    # Never retried: at most the calls already in flight together when the first 401 arrived.
    assert 1 <= stub.statuses[401] <= 2


def test_replay_reproduces_without_network(cli, env, domain, stub, tmp_path):
    out = tmp_path / "run"
    _dei_run(cli, env, domain, stub, out)
    served = stub.requests
    stub.stop()  # nothing listens any more: a replay that called out would fail
    env.pop("OPENAI_API_KEY")
    replay = tmp_path / "replay"
    cli(
        "dei-run",
        "--replay",
        str(out),
        "--out",
        str(replay),
        "--progress",
        "quiet",
        "--no-report",
        env=env,
        timeout=300,
    )
    assert stub.requests == served
    original, again = _summary(out), _summary(replay)
    for field in ("calls", "attempts", "prompt_tokens", "completion_tokens", "cost_usd", "limit"):
        assert again["budget"][field] == original["budget"][field], field
    for node in ("node-0", "node-1"):
        assert (
            again["nodes"][node]["champion"]["text"] == original["nodes"][node]["champion"]["text"]
        )
    assert again["merged"] == original["merged"]
