"""OpenEvolve's example layouts: each look-alike of ``openevolve_lookalikes/`` runs unchanged
through ``dei-run --domain python --task DIR`` and keeps elites; the cascade, the computed
features, the stand-in for ``openevolve`` and the file discovery behave as OpenEvolve's."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from dei_python.domain import PythonDomain
from openevolve_layouts import LAYOUTS, LOOKALIKES

#: The run of issue 48.
RUN = ("--operator", "python-ast", "--nodes", "2", "--budget", "12", "--rounds", "2")
FOLDERS = sorted(path.name for path in LOOKALIKES.iterdir() if path.is_dir())


def _domain(name: str, **options: str) -> PythonDomain:
    return PythonDomain({"task": str(LOOKALIKES / name), **options})


def _seed(name: str):
    domain = _domain(name)
    return domain.evaluate(domain.parse(domain.initial_text), [], seed=0)


def test_every_layout_has_a_lookalike_and_every_lookalike_a_layout() -> None:
    used = {layout.lookalike for layout in LAYOUTS}
    assert used == set(FOLDERS)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", FOLDERS)
def test_each_lookalike_runs_unchanged_and_keeps_elites(cli, name: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    task = LOOKALIKES / name
    cli("dei-run", "--domain", "python", "--task", str(task), *RUN, "--out", str(out),
        "--progress", "quiet", "--no-report", timeout=600)  # fmt: skip
    merged = json.loads((out / "summary.json").read_text())["merged"]
    assert merged["coverage"] > 0 and merged["num_elites"] >= 1
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    seeds = [e for e in events if e["event"] == "evaluated" and e["operator"] == "seed"]
    assert seeds and all(e["status"] != "invalid" for e in seeds), seeds


def test_evaluation_result_from_the_stand_in_gives_metrics_and_artifacts() -> None:
    evaluation = _seed("result_cascade")
    # Stage 1 passed its threshold (0.3); stage 2's numbers and artifacts override stage 1's.
    assert evaluation.info["stage"] == 2 and "cascade_stopped" not in evaluation.info
    assert evaluation.info["artifacts"]["stage"] == "full run, 200 iterations"
    assert evaluation.info["artifacts"]["best_x"]  # stage 1's, kept
    assert set(evaluation.info["metrics"]) >= {"runs_successfully", "distance_score"}


def test_the_stand_in_leaves_no_openevolve_behind() -> None:
    before = importlib.util.find_spec("openevolve")
    assert _seed("result_cascade").fitness > 0  # the evaluator imported the stand-in...
    after = importlib.util.find_spec("openevolve")  # ... which is gone once it returned
    assert (after and after.origin) == (before and before.origin)


def test_a_real_openevolve_is_never_shadowed(tmp_path: Path) -> None:
    real = tmp_path / "site" / "openevolve"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("")
    (real / "evaluation_result.py").write_text("class EvaluationResult:\n    REAL = True\n")
    code = (
        "from dei_python import harness\n"
        f"module = harness.load_evaluator(__import__('pathlib').Path({str(tmp_path / 'e.py')!r}))\n"
        "print(module.EvaluationResult.REAL)\n"
    )
    (tmp_path / "e.py").write_text("from openevolve.evaluation_result import EvaluationResult\n")
    env = {"PYTHONPATH": str(tmp_path / "site")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.stdout.strip() == "True", done.stderr


def test_a_program_below_stage_1s_threshold_keeps_its_stage_1_result() -> None:
    evaluation = _seed("phase_configs")  # stage 1 scores 0.8 against the default 0.5...
    assert evaluation.info["stage"] == 2
    domain = _domain("phase_configs")
    small = domain.parse("def construct():\n    return np.array([0.05, 0.05, 0.05, 0.05])\n")
    stopped = domain.evaluate(small, [], seed=0)  # ... 0.4 is below: OpenEvolve keeps it
    assert stopped.fitness == pytest.approx(0.4)
    assert stopped.info["stage"] == 1 and "balance" not in stopped.info["metrics"]
    assert "below the threshold 0.5" in stopped.info["cascade_stopped"]


def test_a_later_stage_that_raises_keeps_the_earlier_result_with_its_traceback() -> None:
    domain = _domain("two_thresholds")
    broken = domain.parse(
        "def smooth(signal, window=3):\n"
        "    if len(signal) > 100:\n"
        "        raise ValueError('too long')\n"
        "    return signal\n"
    )
    evaluation = domain.evaluate(broken, [], seed=0)
    assert evaluation.info["stage"] == 1 and evaluation.info["metrics"]["stage2_passed"] == 0.0
    artifacts = evaluation.info["artifacts"]
    assert artifacts["stage2_stderr"] == "ValueError: too long"
    assert "Traceback" in artifacts["stage2_traceback"] and artifacts["failure_stage"] == "stage2"


def test_computed_diversity_is_the_distance_from_the_initial_program() -> None:
    domain = _domain("computed_diversity")
    assert domain.default_axes == ("complexity", "diversity")
    seed = domain.evaluate(domain.parse(domain.initial_text), [], seed=0)
    assert seed.descriptor["diversity"] == 0.0
    # Comments and spelling do not count; changed code does, more the more it changes.
    same = domain.parse(
        "def configure():\n    'One option index per module.'\n"
        "    loader = 0\n    parser = 1\n    solver = 2\n"
        "    writer = 0\n    return [loader, parser, solver, writer]  # the same\n"
    )
    one = domain.parse(domain.initial_text.replace("writer = 0", "writer = 3"))
    two = domain.parse(domain.initial_text.replace("writer = 0", "writer = 3").replace(
        "loader = 0", "loader = 2"))  # fmt: skip
    values = [domain.evaluate(p, [], seed=0).descriptor["diversity"] for p in (same, one, two)]
    assert values[0] == 0.0 < values[1] < values[2] <= 1.0
    assert domain.evaluate(one, [], seed=0).descriptor["diversity"] == values[1]  # a function


def test_computed_score_is_the_fitness() -> None:
    evaluation = _seed("computed_score")
    assert evaluation.descriptor["score"] == evaluation.fitness > 0
    assert evaluation.descriptor["complexity"] > 0


def test_renamed_files_are_found_and_several_configs_are_named_not_read(capsys) -> None:
    domain = _domain("renamed_files")
    assert domain.task.program_path.name == "init_program.py"
    assert domain.task.config_path is None
    assert "configs/law_a.yaml, configs/law_b.yaml is read" in capsys.readouterr().err
    chosen = _domain("renamed_files", config="configs/law_a.yaml")
    assert chosen.default_axes == ("combined_score", "complexity", "diversity")


def test_a_folder_that_names_its_files_otherwise_is_found_or_refused_clearly(
    tmp_path: Path,
) -> None:
    from dei_python.task import load_task
    from openevolve_task import EVALUATOR, INITIAL

    from dei_framework.contract.errors import ConfigError

    folder = tmp_path / "stub"
    folder.mkdir()
    (folder / "my_program.py").write_text(INITIAL)
    (folder / "best_program.py").write_text(INITIAL)  # OpenEvolve's output: never the seed
    (folder / "evaluator_stub.py").write_text(EVALUATOR)
    task = load_task(folder)
    assert (task.program_path.name, task.evaluator_path.name) == (
        "my_program.py",
        "evaluator_stub.py",
    )
    (folder / "other_program.py").write_text(INITIAL)
    with pytest.raises(ConfigError, match=r"my_program.py, other_program.py\): name it with "
                       r"--domain-option program=FILE"):  # fmt: skip
        load_task(folder)
    rust = tmp_path / "rust"
    rust.mkdir()
    (rust / "initial_program.rs").write_text("fn main() {}\n")
    (rust / "evaluator.py").write_text(EVALUATOR)
    with pytest.raises(ConfigError, match="initial_program.rs is not Python"):
        load_task(rust)
    several = tmp_path / "several"
    (several / "initial_program").mkdir(parents=True)
    (several / "initial_program" / "TSP.cpp").write_text("int main() {}\n")
    (several / "evaluator.py").write_text(EVALUATOR)
    with pytest.raises(ConfigError, match="initial_program' is a folder of several files"):
        load_task(several)


def test_fitness_and_the_cascades_score_are_openevolves() -> None:
    from dei_python.features import fitness
    from dei_python.harness import gate_score

    assert fitness({"combined_score": 0.2, "a": 9.0}) == 0.2
    # Without combined_score: the mean of the numbers that are not features (NaN skipped)...
    assert fitness({"a": 1.0, "b": 3.0, "spread": 50.0}, ["spread"]) == 2.0
    assert fitness({"a": 1.0, "b": float("nan")}) == 1.0
    assert fitness({"spread": 4.0}, ["spread"]) == 4.0  # ... or of all when all are features
    assert fitness({}) == 0.0
    # The cascade compares combined_score, or the mean of the numbers but "error".
    assert gate_score({"a": 0.4, "error": 0.0, "b": 0.8}) == pytest.approx(0.6)
    assert gate_score({"combined_score": 0.1, "a": 1.0}) == 0.1
    assert gate_score({"error": 1.0}) is None
