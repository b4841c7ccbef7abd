"""config.yaml's models as the run's nodes: one node per model of ``llm.models`` (or the legacy
primary/secondary models) when no --operator is given, weight 0 left out in one line, a
``${VAR}`` key named by its variable (never copied), --operator and --nodes over them, and a
wrong entry as one error line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openevolve_task import write_task

from dei_framework.contract.errors import ConfigError
from dei_framework.plugin.manager import load_plugins
from dei_framework.runtime.config.resolve import resolve_config

MODELS = """llm:
  api_base: "http://127.0.0.1:9/v1"
  api_key: "${DEI_TEST_MODEL_KEY}"
  temperature: 0.4
  max_tokens: 900
  models:
    - name: "model-a"
      weight: 0.7
    - name: "model-b"
      weight: 0.3
      temperature: 0.9
      api_base: "http://127.0.0.1:10/v1"
    - name: "model-c"
      weight: 0
database:
  feature_dimensions: ["distance", "magnitude"]
"""


@pytest.fixture(scope="module")
def registry():
    return load_plugins()


def _task(tmp_path: Path, config: str) -> Path:
    return write_task(tmp_path / f"task_{tmp_path.name}", config=config)


def _nodes(registry, task: Path, **flags):
    config = resolve_config(
        {"domain": "python", "domain_option": (f"task={task}",), **flags}, registry
    )
    return config.nodes


def test_each_model_is_a_node_and_weight_zero_is_left_out(
    registry, tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("DEI_TEST_MODEL_KEY", "sk-secret-value")
    nodes = _nodes(registry, _task(tmp_path, MODELS))
    assert [(n.name, n.operator) for n in nodes] == [
        ("node-0", "openai/model-a"),
        ("node-1", "openai/model-b"),
    ]
    assert dict(nodes[0].options) == {
        "api_base": "http://127.0.0.1:9/v1",
        "api_key_env": "DEI_TEST_MODEL_KEY",
        "temperature": 0.4,
        "max_tokens": 900,
    }
    assert nodes[1].options["temperature"] == 0.9  # the model's own over the section's
    assert nodes[1].options["api_base"] == "http://127.0.0.1:10/v1"
    assert "sk-secret-value" not in json.dumps([dict(n.options) for n in nodes])
    lines = capsys.readouterr().err.splitlines()
    assert [line for line in lines if "weight 0" in line] == [
        f"dei-python: note: task_{tmp_path.name}/config.yaml: llm.models: model-c has weight 0 "
        "and is left out (OpenEvolve never calls it)"
    ]


def test_a_written_out_key_is_not_copied(registry, tmp_path: Path, capsys) -> None:
    config = 'llm:\n  api_key: "sk-written-out"\n  models:\n    - name: m\n'
    nodes = _nodes(registry, _task(tmp_path, config))
    assert nodes[0].operator == "openai/m" and "api_key" not in nodes[0].options
    assert "sk-written-out" not in json.dumps(dict(nodes[0].options))
    err = capsys.readouterr().err
    assert "the api_key written in the file is not copied" in err
    assert "sk-written-out" not in err


def test_the_legacy_primary_and_secondary_models(registry, tmp_path: Path) -> None:
    config = (
        "llm:\n  primary_model: big\n  primary_model_weight: 0.8\n"
        "  secondary_model: small\n  secondary_model_weight: 0.0\n"
    )
    assert [n.operator for n in _nodes(registry, _task(tmp_path, config))] == ["openai/big"]


def test_operator_and_nodes_flags_over_the_models(registry, tmp_path: Path, capsys) -> None:
    task = _task(tmp_path, MODELS)
    given = _nodes(registry, task, operators=("python-ast",), nodes=2)
    assert [n.operator for n in given] == ["python-ast", "python-ast"]
    assert (
        "llm.models, llm.api_base, llm.api_key, llm.temperature, llm.max_tokens are not used: "
        "--operator gives the nodes" in capsys.readouterr().err
    )
    cycled = _nodes(registry, task, nodes=5)
    assert [n.operator[len("openai/") :] for n in cycled] == ["model-a", "model-b"] * 2 + [
        "model-a"
    ]
    assert len({n.name for n in cycled}) == 5
    with pytest.raises(ConfigError, match=r"--nodes 1 is fewer than the 2 nodes .* names"):
        _nodes(registry, task, nodes=1)
    flagged = _nodes(registry, task, api_base="http://127.0.0.1:11/v1")
    assert {n.options["api_base"] for n in flagged} == {"http://127.0.0.1:11/v1"}


def test_no_models_keeps_the_offline_default(registry, tmp_path: Path) -> None:
    nodes = _nodes(registry, _task(tmp_path, "prompt:\n  num_top_programs: 1\n"))
    assert {n.operator for n in nodes} == {"python-ast"}


@pytest.mark.parametrize(
    ("models", "says"),
    [
        ('["gpt-4o"]', r"llm\.models\[0\] must be a mapping with a name"),
        ("[{weight: 1}]", r"llm\.models\[0\] needs a name"),
        ("[{name: m, weight: -1}]", r"llm\.models\[0\]\.weight must be a number >= 0"),
        ("[{name: m, weight: 0}]", "every model in llm.models has weight 0"),
        ("[{name: m, max_tokens: many}]", r"llm\.models\[0\]: max_tokens must be a whole number"),
        ('[{name: m, api_base: "not a url"}]', r"api_base must be an http\(s\) URL"),
    ],
)
def test_a_wrong_model_entry_is_one_error_line(registry, tmp_path: Path, models, says) -> None:
    with pytest.raises(ConfigError, match=says):
        _nodes(registry, _task(tmp_path, f"llm:\n  models: {models}\n"))


@pytest.mark.timeout(300)
def test_dei_run_says_a_wrong_entry_in_one_line(cli, tmp_path: Path) -> None:
    task = _task(tmp_path, "llm:\n  models:\n    - name: m\n      weight: heavy\n")
    result = cli(
        "dei-run", "--domain", "python", "--task", str(task), "--out", str(tmp_path / "run"),
        check=False,
    )  # fmt: skip
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: python: task_{tmp_path.name}/config.yaml: llm.models[0].weight must be a "
        "number >= 0, got 'heavy'"
    ]
    assert "Traceback" not in result.stderr
