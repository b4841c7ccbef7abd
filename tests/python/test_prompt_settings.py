"""An OpenEvolve task folder with models and prompt settings, run with no --operator against the
loopback model (real HTTP): each model of llm.models is a node, and the prompts the server
receives hold the top programs, programs of other cells, the parent's artifacts and metrics
and its ancestors, as config.yaml's prompt section asks; include_artifacts: false leaves the
artifacts out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openai_stub import ok
from openevolve_task import write_task

#: Guesses the model's replies hold: distinct distances and magnitudes, so distinct cells.
GUESSES = (0.5, 2.0, 3.5, 5.0, 7.5, -2.0, 9.0)
REPLIES = [f"```python\ndef guess():\n    return {x}\n```" for x in GUESSES]


def _config(url: str, *, artifacts: bool) -> str:
    return f"""llm:
  api_base: "{url}"
  api_key: "${{DEI_TEST_MODEL_KEY}}"
  models:
    - name: "model-a"
      weight: 0.6
    - name: "model-b"
      weight: 0.4
    - name: "model-c"
      weight: 0.0
prompt:
  system_message: "You are finding the maximum of a function."
  num_top_programs: 1
  num_diverse_programs: 1
  include_artifacts: {str(artifacts).lower()}
database:
  feature_dimensions: ["distance", "magnitude"]
  feature_bins: 5
evaluator:
  timeout: 20
"""


def _run(cli, stub, env, tmp_path: Path, *, artifacts: bool) -> list[str]:
    stub.cycle(*(ok(reply) for reply in REPLIES))
    task = write_task(tmp_path / "models_task", config=_config(stub.base_url, artifacts=artifacts))
    out = tmp_path / "run"
    result = cli(
        "dei-run", "--domain", "python", "--task", str(task), "--budget", "16",
        "--rounds", "4", "--seed", "2", "--eval-workers", "2", "--out", str(out),
        "--progress", "quiet", "--no-report",
        env={**env, "DEI_TEST_MODEL_KEY": "sk-loopback"}, timeout=600,
    )  # fmt: skip
    assert "model-c has weight 0 and is left out" in result.stderr
    config = json.loads((out / "config.json").read_text())
    assert [node["operator"] for node in config["nodes"]] == ["openai/model-a", "openai/model-b"]
    assert {node["options"]["api_key_env"] for node in config["nodes"]} == {"DEI_TEST_MODEL_KEY"}
    assert "sk-loopback" not in (out / "config.json").read_text()
    assert stub.completed == 16
    assert {body["model"] for body in stub.bodies} == {"model-a", "model-b"}
    return [body["messages"][1]["content"] for body in stub.bodies]


@pytest.mark.timeout(600)
def test_models_are_nodes_and_the_prompt_shows_what_config_yaml_asks(
    cli, stub, llm_env, tmp_path: Path
) -> None:
    prompts = _run(cli, stub, llm_env, tmp_path, artifacts=True)
    assert any("## The best programs found so far" in p for p in prompts)
    assert any("## Programs from other cells of the archive" in p for p in prompts)
    with_artifacts = [p for p in prompts if "## What the evaluation of the current program" in p]
    assert with_artifacts
    # The evaluator's non-numeric value, and what the evaluation printed on both streams.
    assert all("note: scored on f(x) = -(x - 3)^2" in p for p in with_artifacts)
    assert all("a warning on stderr" in p and "evaluating guess" in p for p in with_artifacts)
    assert any("Its metrics: " in p and "distance " in p for p in prompts)
    history = [p for p in prompts if "## Evolution history" in p]
    assert history and all("1 generation back: score" in p for p in history)
    assert any("its child improved the score by" in p or "worsened" in p for p in history)
    # A program shown as a top one is not also shown as diverse, nor as the parent's block.
    for prompt in prompts:
        assert prompt.count("Top program 1 (") <= 1 and "Top program 2 (" not in prompt


@pytest.mark.timeout(600)
def test_include_artifacts_false_leaves_them_out(cli, stub, llm_env, tmp_path: Path) -> None:
    prompts = _run(cli, stub, llm_env, tmp_path, artifacts=False)
    assert not any("## What the evaluation of the current program" in p for p in prompts)
    assert not any("a warning on stderr" in p for p in prompts)
    assert any("## The best programs found so far" in p for p in prompts)  # the rest stays
