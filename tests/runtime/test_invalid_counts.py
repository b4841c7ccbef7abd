"""Invalid counts, from flags or a TOML file, are refused by name: one line, no run directory."""

from __future__ import annotations

import subprocess

import attrs
import pytest

from dei_framework.contract.errors import ConfigError
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig

TOY = ["--domain", "toy", "--operator", "toy-random", "--progress", "quiet", "--no-report"]


def _one_line_refusal(args: list[str], env: dict, cwd) -> str:
    result = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("flags", "toml", "message"),
    [
        (["--nodes", "0"], "", "--nodes must be at least 1, got 0"),
        (["--nodes", "-2"], "", "--nodes must be at least 1, got -2"),
        (["--eval-workers", "-3"], "", "--eval-workers must be at least 0, got -3"),
        ([], "budget = true", "--budget must be a whole number, got True"),
        ([], 'budget = "ten"', "--budget must be a whole number, got 'ten'"),
        ([], "budget = 2.5", "--budget must be a whole number, got 2.5"),
        ([], "axes = 5", "--axes takes axis names"),
        ([], 'nodes = "4"', "--nodes must be a whole number, got '4'"),
        ([], 'seed = "x"', "--seed must be a whole number, got 'x'"),
    ],
)
def test_an_invalid_count_is_refused_naming_the_option(
    toy_env, tmp_path, flags, toml, message
) -> None:
    args = ["dei-run", *TOY, *flags, "--out", str(tmp_path / "run")]
    if toml:
        (tmp_path / "run.toml").write_text(toml + "\n")
        args += ["--config", str(tmp_path / "run.toml")]
    assert message in _one_line_refusal(args, toy_env, tmp_path)
    assert not (tmp_path / "run").exists()  # a failed start leaves no directory behind


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--nodes", "0"], "--nodes must be at least 1, got 0"),
        (["--budget", "0"], "--budget must be at least 1, got 0"),
        (["--repeats", "0"], "--repeats must be at least 1, got 0"),
        (["--eval-workers", "-3"], "--eval-workers must be at least 0, got -3"),
    ],
)
def test_an_experiment_refuses_invalid_counts_too(toy_env, tmp_path, flags, message) -> None:
    args = ["dei", "experiment", *TOY, *flags, "--out", str(tmp_path / "experiment")]
    assert message in _one_line_refusal(args, toy_env, tmp_path)
    assert not (tmp_path / "experiment").exists()


def test_a_configuration_changed_in_code_is_checked_as_well() -> None:
    config = RunConfig(domain="toy", nodes=[NodeConfig(name="a", operator="toy-random")], budget=10)
    # What --resume --eval-workers -3 does to the recorded configuration.
    with pytest.raises(ConfigError, match="--eval-workers must be at least 0"):
        attrs.evolve(config, eval_workers=-3)
    with pytest.raises(ConfigError, match="--budget must be a whole number"):
        attrs.evolve(config, budget=True)
    assert attrs.evolve(config, eval_workers=0).eval_workers == 0
