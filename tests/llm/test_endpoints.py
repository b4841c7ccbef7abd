"""Per-node endpoints: ``--operator MODEL@URL``, and a global ``--api-base`` that would send the
requests of several providers to one server refused (with the per-node form shown).

The runs go through the real console script against loopback OpenAI-compatible servers, so
where each node's requests end up is what the servers counted, not what the config says.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from openai_stub import OpenAIStub, ok

from dei_framework.contract.errors import ConfigError
from dei_framework.runtime.config.checks import split_endpoint
from dei_framework.runtime.config.resolve import build_nodes

README = Path(__file__).resolve().parents[2] / "README.md"
TOY_REPLY = "Sum near two hundred.\nPROGRAM: 50 60 70\n"


def _readme_llm_example() -> list[str]:
    """The README's `dei-run` command with LLM operators of several providers, as argv."""
    text = README.read_text()
    for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        commands = re.sub(r"\\\n\s*", " ", block).splitlines()
        for command in commands:
            if command.startswith("dei-run ") and "anthropic/" in command:
                return shlex.split(command, comments=True)
    raise AssertionError("README.md has no dei-run example with LLM operators")


def _global_form(argv: list[str]) -> tuple[list[str], str]:
    """The same command with its per-node URLs moved to one global --api-base."""
    urls = []
    out = []
    for arg in argv:
        operator, url = split_endpoint(arg)
        if url is not None:
            urls.append(url)
        out.append(operator)
    assert len(urls) == 1, argv
    return [*out, "--api-base", urls[0]], urls[0]


def test_the_readme_example_gives_the_local_server_to_its_node_only() -> None:
    argv = _readme_llm_example()
    assert "--api-base" not in argv
    operators = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--operator"]
    with_url = [spec for spec in operators if split_endpoint(spec)[1] is not None]
    assert [split_endpoint(spec)[0] for spec in with_url] == ["ollama/qwen2.5-coder"]
    assert len({spec.split("/")[0] for spec in operators}) >= 3  # hosted models beside it


def test_the_readme_example_with_a_global_api_base_is_refused(cli, env, tmp_path) -> None:
    argv, url = _global_form(_readme_llm_example())
    result = cli(*argv, "--out", str(tmp_path / "run"), env=env, check=False, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert f"--api-base {url} would send the requests of every LLM node" in errors[0]
    assert "4 providers (anthropic, gemini, ollama, openai)" in errors[0]
    assert f"--operator ollama/qwen2.5-coder@{url}" in errors[0]
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_per_node_servers_each_get_only_their_own_nodes_requests(cli, env, tmp_path) -> None:
    first, second = OpenAIStub(default=ok(TOY_REPLY)).start(), OpenAIStub(default=ok(TOY_REPLY))
    second.start()
    try:
        # Two providers (OpenAI's API and vLLM's), each at its own server: no global URL.
        result = cli(
            "dei-run",
            "--domain",
            "toy",
            "--nodes",
            "2",
            "--budget",
            "8",
            "--rounds",
            "2",
            "--operator",
            f"openai/model-a@{first.base_url}",
            "--operator",
            f"hosted_vllm/model-b@{second.base_url}",
            "--out",
            str(tmp_path / "run"),
            "--progress",
            "quiet",
            "--no-report",
            "--eval-workers",
            "0",
            env=env,
            check=False,
            timeout=300,
        )
    finally:
        first.stop()
        second.stop()
    assert result.returncode == 0, result.stderr
    assert first.by_model == {"model-a": 4} and first.requests == 4
    assert second.by_model == {"model-b": 4} and second.requests == 4


def test_a_global_api_base_beside_per_node_endpoints_reaches_the_others_only() -> None:
    nodes = build_nodes(
        count=None,
        operators=["openai/a", "anthropic/b@https://proxy.example/anthropic", "gp"],
        node_tables=[],
        common_options={"api_base": "http://127.0.0.1:8080/v1"},
    )
    assert [node.operator for node in nodes] == ["openai/a", "anthropic/b", "gp"]
    assert nodes[0].options["api_base"] == "http://127.0.0.1:8080/v1"
    assert nodes[1].options["api_base"] == "https://proxy.example/anthropic"


@pytest.mark.parametrize(
    ("tables", "operators"),
    [([], ["openai/a", "anthropic/b"]), ([{"operator": "openai/a"}, {"operator": "ollama/c"}], [])],
)
def test_a_global_api_base_shared_by_two_providers_is_refused(tables, operators) -> None:
    with pytest.raises(ConfigError, match=r"@http://127\.0\.0\.1:8080/v1 \(or api_base"):
        build_nodes(
            count=None,
            operators=operators,
            node_tables=tables,
            common_options={"api_base": "http://127.0.0.1:8080/v1"},
        )


def test_an_at_sign_of_the_model_string_is_not_an_endpoint() -> None:
    assert split_endpoint("vertex_ai/claude-3-5-sonnet@20240620") == (
        "vertex_ai/claude-3-5-sonnet@20240620",
        None,
    )
    assert split_endpoint("ollama/qwen2.5-coder:32b@http://127.0.0.1:11434") == (
        "ollama/qwen2.5-coder:32b",
        "http://127.0.0.1:11434",
    )


def test_an_experiment_carries_each_operators_endpoint_into_its_conditions() -> None:
    from dei_framework import load_plugins
    from dei_framework.app.cli_experiment import plan_from_flags

    first, second = "http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"
    flags = {
        "domain": "coreware",
        "budget": 16,
        "rounds": 1,
        "conditions": "homo,diverse",
        "operators": (f"openai/a@{first}", f"hosted_vllm/b@{second}"),
    }
    plan = plan_from_flags(flags, load_plugins())
    assert [(n.operator, n.options["api_base"]) for n in plan.base.nodes] == [
        ("openai/a", first),
        ("hosted_vllm/b", second),
    ]
    with pytest.raises(ConfigError, match=rf"--operator openai/a@{first} and name the operator"):
        plan_from_flags(
            {**flags, "conditions": "", "condition": (f"mine=openai/a@{first}",)}, load_plugins()
        )
