"""Tokens, cost and attempts on the watch page come from the run's ledger: an LLM run against
the loopback OpenAI-compatible stub (litellm over real HTTP), watched while it runs."""

from __future__ import annotations

import json
import subprocess
import time

from openai_stub import OpenAIStub, ok, status

from dei_framework.app.watch.run import WatchedRun

REPLY = "Sum near two hundred.\nPROGRAM: 50 60 70\n"


def test_usage_is_live_during_the_run_and_matches_the_provider_at_the_end(toy_env, tmp_path):
    stub = OpenAIStub().start()
    stub.default = ok(REPLY, prompt_tokens=30, completion_tokens=7, delay=0.25)
    stub.script(status(429, retry_after=0.05), status(500))  # two failed attempts first
    env = dict(toy_env, OPENAI_API_KEY="sk-test", LITELLM_LOCAL_MODEL_COST_MAP="True")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env.pop(name, None)
    config = tmp_path / "run.toml"
    config.write_text(
        "checkpoint_seconds = 0.3\n[operator_options]\nretry_base = 0.01\nretry_max = 0.2\n"
    )
    out = tmp_path / "run"
    run = subprocess.Popen(
        [
            "dei-run",
            "--domain",
            "toy",
            "--operator",
            "openai/stub-model",
            "--nodes",
            "2",
            "--budget",
            "24",
            "--rounds",
            "2",
            "--api-base",
            stub.base_url,
            "--eval-workers",
            "0",
            "--progress",
            "quiet",
            "--no-report",
            "--config",
            str(config),
            "--out",
            str(out),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        watched = WatchedRun(out)
        live = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and run.poll() is None:
            state = watched.state(seconds=None)
            tokens = state["run"]["usage"].get("prompt_tokens", 0)
            finished = (out / "summary.json").exists()
            if state["run"]["status"] == "running" and tokens and not finished:
                live = state
                break
            time.sleep(0.1)
        assert run.wait(timeout=300) == 0, run.stderr.read()
    finally:
        stub.stop()
    assert live is not None, "never saw usage while the run was going"
    assert live["run"]["usage"]["prompt_tokens"] < 24 * 30  # a snapshot, not the total
    final = watched.state(seconds=None)
    usage = final["run"]["usage"]
    assert final["run"]["status"] == "finished"
    assert usage["calls"] == final["run"]["calls"] == 24
    assert usage["prompt_tokens"] == stub.prompt_tokens == 24 * 30
    assert usage["completion_tokens"] == stub.completion_tokens == 24 * 7
    assert usage["attempts"] == 24 + 2  # the two failed attempts show
    summary = json.loads((out / "summary.json").read_text())
    for node in final["nodes"]:
        assert node["usage"]["attempts"] == summary["budget"]["nodes"][node["name"]]["attempts"]
        assert node["operator"] == "openai/stub-model"
    assert sum(n["usage"]["attempts"] - n["usage"]["calls"] for n in final["nodes"]) == 2
