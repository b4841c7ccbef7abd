"""The python domain on OpenEvolve task folders: config.yaml, features as axes, the evaluator
called on the program file, its failures as reasons with lines, and its streams captured."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from dei_python.domain import PythonDomain
from dei_python.task import DEFAULT_TIMEOUT
from openevolve_task import INITIAL, write_task

from dei_framework.contract.errors import ConfigError, InvalidProgram


def _domain(task: Path, **options) -> PythonDomain:
    return PythonDomain({"task": str(task), **options})


def _away(domain: PythonDomain) -> PythonDomain:
    """The domain as a sandbox child holds it: in another process than the one that built it
    (so it captures the streams and works in its scratch folder)."""
    clone = pickle.loads(pickle.dumps(domain))
    clone._home_pid = -1
    return clone


def test_config_yaml_gives_axes_bins_timeout_and_system_message(task: Path, capsys) -> None:
    domain = _domain(task)
    assert domain.default_axes == ("distance", "magnitude")
    assert [spec.axis.count for spec in domain.descriptor_axes()] == [5, 5]
    assert domain.eval_timeout == 12.0
    assert domain.messages("new")[0]["content"] == "You are finding the maximum of a function."
    warned = capsys.readouterr().err.splitlines()
    ignored = ["max_iterations", "checkpoint_interval", "database.num_islands"]
    assert len(warned) == len(ignored)  # one line per ignored key, nothing else
    for line, key in zip(warned, ignored, strict=True):
        assert f"config.yaml: {key} is ignored" in line
    _domain(task)
    assert capsys.readouterr().err == ""  # once per process


def test_the_axes_option_overrides_config_yaml(task: Path) -> None:
    domain = _domain(task, axes="magnitude:0:1:4,complexity:0:200:8")
    assert domain.default_axes == ("magnitude", "complexity")
    evaluation = domain.evaluate(domain.parse(domain.initial_text), [], seed=0)
    assert evaluation.descriptor == {
        "magnitude": 0.1,
        "complexity": float(len(domain.scaffold.block)),
    }
    with pytest.raises(ConfigError, match="NAME:LOW:HIGH:BINS"):
        _domain(task, axes="magnitude:0:1")


def test_without_feature_dimensions_the_grid_is_openevolves_default(tmp_path: Path) -> None:
    domain = _domain(write_task(tmp_path / "bare", config=None))
    assert domain.default_axes == ("complexity", "diversity")
    assert [feature.bins for feature in domain.features] == [10, 10]
    assert domain.eval_timeout == DEFAULT_TIMEOUT
    # feature_bins applies to the default features too; their bounds are learned.
    binned = _domain(write_task(tmp_path / "binned", config="database:\n  feature_bins: 7\n"))
    assert [(f.name, f.bins, f.low) for f in binned.features] == [
        ("complexity", 7, None),
        ("diversity", 7, None),
    ]
    initial = binned.evaluate(binned.parse(binned.initial_text), [], seed=0)
    assert initial.descriptor == {"complexity": float(len(binned.scaffold.block)), "diversity": 0.0}


def test_the_evaluators_dict_becomes_fitness_descriptor_and_info(task: Path) -> None:
    domain = _away(_domain(task))
    program = domain.parse("```python\ndef guess():\n    return 2.5\n```")
    kept = INITIAL.replace('    """The current guess."""\n    return 1.0', "    return 2.5")
    assert program.text == kept  # the scaffold as the task wrote it
    evaluation = domain.evaluate(program, [], seed=0)
    assert evaluation.fitness == -0.25
    assert evaluation.descriptor == {"distance": 0.05, "magnitude": 0.25}
    assert evaluation.info["artifacts"] == {"note": "scored on f(x) = -(x - 3)^2"}
    assert evaluation.info["stdout"] == "evaluating guess 2.5\n"
    assert evaluation.info["stderr"] == "a warning on stderr\n"


def test_an_exception_in_the_block_is_invalid_with_its_line(task: Path) -> None:
    domain = _away(_domain(task))
    program = domain.parse("def guess():\n    x = 1\n    return x / 0\n")
    with pytest.raises(InvalidProgram) as caught:
        domain.evaluate(program, [], seed=0)
    message = str(caught.value)
    assert message.startswith("line 7 (line 3 of the evolve block): ZeroDivisionError")
    assert "a warning on stderr" not in message  # it failed before printing


def test_a_missing_feature_and_a_nan_score_are_invalid(tmp_path: Path) -> None:
    evaluator = (
        "def evaluate(program_path):\n"
        "    return {'combined_score': float('nan'), 'distance': 0.5}\n"
    )
    domain = _domain(write_task(tmp_path / "nan", evaluator=evaluator))
    with pytest.raises(InvalidProgram, match="combined_score is nan"):
        domain.evaluate(domain.parse(domain.initial_text), [], seed=0)
    evaluator = "def evaluate(program_path):\n    return {'combined_score': 1.0, 'distance': 0.5}\n"
    domain = _domain(write_task(tmp_path / "missing", evaluator=evaluator))
    with pytest.raises(InvalidProgram, match="no feature 'magnitude'"):
        domain.evaluate(domain.parse(domain.initial_text), [], seed=0)


def test_an_evaluation_result_shape_is_read(tmp_path: Path) -> None:
    evaluator = """
class EvaluationResult:
    def __init__(self, metrics, artifacts):
        self.metrics, self.artifacts = metrics, artifacts

def evaluate(program_path):
    return EvaluationResult({"combined_score": 0.5, "distance": 0.1, "magnitude": 0.2},
                            {"log": "ran 3 cases"})
"""
    domain = _domain(write_task(tmp_path / "result", evaluator=evaluator))
    evaluation = domain.evaluate(domain.parse(domain.initial_text), [], seed=0)
    assert evaluation.fitness == 0.5
    assert evaluation.info["artifacts"] == {"log": "ran 3 cases"}


def test_parse_never_runs_the_program(task: Path, tmp_path: Path) -> None:
    canary = tmp_path / "ran"
    domain = _domain(task)
    domain.parse(f"open({str(canary)!r}, 'w').write('x')\ndef guess():\n    return 1.0\n")
    assert not canary.exists()


def test_bad_task_folders_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        _domain(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="defines no evaluate"):
        _domain(write_task(tmp_path / "noeval", evaluator="def score(path):\n    return {}\n"))
    with pytest.raises(ConfigError, match="EVOLVE-BLOCK-END is missing"):
        _domain(
            write_task(
                tmp_path / "nomarker", initial="# EVOLVE-BLOCK-START\ndef guess():\n    return 1\n"
            )
        )
    with pytest.raises(
        ConfigError,
        match=r"initial_program.py: line 5 \(line 1 of the evolve "
        r"block\): ",
    ):
        _domain(
            write_task(tmp_path / "broken", initial=INITIAL.replace("def guess():", "def guess(:"))
        )
    with pytest.raises(ConfigError, match="unknown option"):
        _domain(tmp_path, typo=1)


def test_the_domain_pickles_without_its_module(task: Path) -> None:
    domain = _domain(task)
    domain.evaluate(domain.parse(domain.initial_text), [], seed=0)
    clone = pickle.loads(pickle.dumps(domain))
    assert clone.evaluate(clone.parse(clone.initial_text), [], seed=0).fitness == -4.0


def test_openevolves_exploitation_keys_point_to_the_tournament_selector(
    tmp_path: Path, capsys
) -> None:
    config = "database:\n  exploitation_ratio: 0.7\n  elite_selection_ratio: 0.1\n"
    _domain(write_task(tmp_path / "exploit", config=config))
    warned = capsys.readouterr().err.splitlines()
    assert len(warned) == 2 and all("--selector tournament" in line for line in warned)
