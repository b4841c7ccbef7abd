"""Dead providers fail fast and loudly: `dei-run` against real sockets that refuse, reject or
do not resolve, and the exit statuses that tell a failed or incomplete run from a finished one.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from openai_stub import ok, status

TOY_REPLY = "Sum near two hundred.\nPROGRAM: 50 60 70\n"


def _dei_run(cli, env, out: Path, *extra: str):
    started = time.monotonic()
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
        "--out",
        str(out),
        "--progress",
        "lines",
        "--no-report",
        "--eval-workers",
        "0",
        *extra,
        env=env,
        check=False,
        timeout=120,
    )
    return result, time.monotonic() - started


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    return errors[0]


def test_connection_refused_ends_at_once_naming_the_url(cli, env, tmp_path) -> None:
    url = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
    result, seconds = _dei_run(
        cli, env, tmp_path / "run", "--operator", "openai/stub-model", "--api-base", url
    )
    assert result.returncode == 1
    assert seconds < 60
    error = _one_error_line(result.stderr)
    assert "no operator call completed" in error
    assert f"openai/stub-model at {url}: connection refused" in error
    assert "InternalServerError" not in error and "500" not in error
    # Shown live, when the node stops, not only at the end.
    assert "[node-0] stopped: openai/stub-model at http://127.0.0.1:9/v1" in result.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    for node in summary["nodes"].values():
        assert node["calls"] == 0 and "connection refused" in node["stopped"]
        # Not transient: never retried.
        assert node["operator_status"]["retries"] == 0, (node["operator_status"], result.stderr)


def test_a_host_that_does_not_resolve_ends_at_once(cli, env, tmp_path) -> None:
    # ``.invalid`` never resolves (RFC 6761): the lookup fails whatever the network.
    url = "http://dei-test.invalid/v1"
    result, seconds = _dei_run(
        cli, env, tmp_path / "run", "--operator", "openai/stub-model", "--api-base", url
    )
    assert result.returncode == 1 and seconds < 60
    error = _one_error_line(result.stderr)
    assert f"at {url}: DNS lookup failed for dei-test.invalid" in error


def test_a_missing_key_ends_at_once_naming_the_variable(cli, env, tmp_path) -> None:
    env.pop("OPENAI_API_KEY")
    result, seconds = _dei_run(cli, env, tmp_path / "run", "--operator", "openai/gpt-4o-mini")
    assert result.returncode == 1 and seconds < 60
    error = _one_error_line(result.stderr)
    assert "openai/gpt-4o-mini" in error and "no API key: set OPENAI_API_KEY" in error
    assert "InternalServerError" not in error


@pytest.mark.parametrize(
    ("code", "cause"),
    [
        (401, "authentication failed (check OPENAI_API_KEY)"),
        (403, "permission denied"),
        (404, "model not found"),
    ],
)
def test_a_rejecting_server_stops_every_node_without_retrying(
    cli, env, stub, tmp_path, code, cause
) -> None:
    stub.default = status(code)
    result, seconds = _dei_run(
        cli, env, tmp_path / "run", "--operator", "openai/stub-model", "--api-base", stub.base_url
    )
    assert result.returncode == 1, result.stderr
    assert seconds < 110  # a hang guard: most of it is importing litellm on a loaded machine
    error = _one_error_line(result.stderr)
    assert f"openai/stub-model at {stub.base_url}: {cause}" in error
    # Never retried: at most the calls in flight together when the first refusal came.
    assert stub.requests <= 2 * 4


def test_some_nodes_stopping_early_is_a_distinct_exit_status(cli, env, stub, tmp_path) -> None:
    stub.default = ok(TOY_REPLY)
    stub.api_keys = {"sk-test"}
    env["WRONG_KEY"] = "sk-wrong"
    config = tmp_path / "dei.toml"
    config.write_text(
        '[[node]]\noperator = "openai/stub-model"\n\n'
        '[[node]]\noperator = "openai/stub-model"\napi_key_env = "WRONG_KEY"\n'
    )
    result, _ = _dei_run(
        cli, env, tmp_path / "run", "--api-base", stub.base_url, "--config", str(config)
    )
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    assert "warning: node node-1 stopped early: openai/stub-model" in result.stderr
    assert "incomplete run: 1 of 2 nodes stopped early (exit status 3)" in result.stderr
    assert "summary:" in result.stdout


def test_transient_failures_are_shown_live_with_their_cause(cli, env, stub, tmp_path) -> None:
    stub.default = ok(TOY_REPLY)
    stub.script(status(503), status(503))
    config = tmp_path / "dei.toml"
    config.write_text("[operator_options]\nretry_base = 0.01\nretry_max = 0.1\n")
    result, _ = _dei_run(
        cli,
        env,
        tmp_path / "run",
        "--operator",
        "openai/stub-model",
        "--api-base",
        stub.base_url,
        "--config",
        str(config),
    )
    assert result.returncode == 0, result.stderr
    live = [line for line in result.stderr.splitlines() if "failed attempts so far" in line]
    assert live and "(503)" in live[0], result.stderr


@pytest.mark.parametrize(
    ("extra", "cause"),
    [
        ((), "openai/gpt-4o-mini: no API key: set OPENAI_API_KEY (or the api_key_env option)"),
        (
            ("--api-base", "http://127.0.0.1:9"),
            "openai/gpt-4o-mini at http://127.0.0.1:9: connection refused (is the server running? "
            "check --api-base): 127.0.0.1:9: ",
        ),
    ],
)
def test_the_headline_mistakes_are_named_before_litellm_is_imported(
    cli, env, tmp_path, extra, cause
) -> None:
    # A litellm that cannot be imported: the run must find the mistake without it (importing
    # the real one costs seconds of CPU before any error could be reported).
    poisoned = tmp_path / "poisoned" / "litellm"
    poisoned.mkdir(parents=True)
    (poisoned / "__init__.py").write_text('raise ImportError("litellm was imported")\n')
    env["PYTHONPATH"] = os.pathsep.join([str(poisoned.parent), env["PYTHONPATH"]])
    env.pop("OPENAI_API_KEY")
    result = cli(
        "dei-run",
        "--domain",
        "coreware",
        "--operator",
        "openai/gpt-4o-mini",
        "--budget",
        "40",
        "--rounds",
        "1",
        "--out",
        str(tmp_path / "run"),
        "--progress",
        "lines",
        "--eval-workers",
        "0",
        *extra,
        env=env,
        check=False,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert "litellm was imported" not in result.stderr
    error = _one_error_line(result.stderr)
    assert error.startswith(f"error: no operator call completed: {cause}"), error
    assert "InternalServerError" not in error and "object at 0x" not in error


def test_a_server_answering_only_500s_ends_the_run_naming_the_status(cli, env, stub, tmp_path):
    # Failed calls go back to the budget and are made again: the default bound on failed
    # attempts in a row is what ends the run (fast retries only to keep the test short).
    stub.default = status(500)
    config = tmp_path / "dei.toml"
    config.write_text("[operator_options]\nretry_base = 0.01\nretry_max = 0.05\n")
    result, _ = _dei_run(
        cli,
        env,
        tmp_path / "run",
        "--operator",
        "openai/stub-model",
        "--api-base",
        stub.base_url,
        "--config",
        str(config),
    )
    assert result.returncode == 1, result.stderr
    error = _one_error_line(result.stderr)
    assert error.startswith("error: no operator call completed: "), error
    url = f"{stub.base_url}/chat/completions"
    for node in ("node-0", "node-1"):
        assert f"{node}: HTTP 500 × 20 from {url} (openai/stub-model)" in error, error
    # At most the bound per node plus the attempts already out when it was reached.
    assert stub.statuses[500] == stub.requests <= 2 * (20 + 4)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["budget"]["calls"] == 0


def test_a_cap_reached_with_no_completed_call_names_the_last_failure(cli, env, stub, tmp_path):
    stub.default = status(500)
    config = tmp_path / "dei.toml"
    config.write_text("[operator_options]\nretry_base = 0.01\nretry_max = 0.05\n")
    result, _ = _dei_run(
        cli,
        env,
        tmp_path / "run",
        "--operator",
        "openai/stub-model",
        "--api-base",
        stub.base_url,
        "--config",
        str(config),
        "--max-attempts-per-node",
        "5",
    )
    assert result.returncode == 1, result.stderr
    error = _one_error_line(result.stderr)
    assert "InternalServerError (500)" in error, error
