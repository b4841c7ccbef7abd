"""``dei experiment --parallel N``: runs fan out over processes, and the experiment's summary is
the one the sequential order gives, also when a fanned-out experiment is resumed."""

from __future__ import annotations

import json
from pathlib import Path

FLAGS = (
    "--domain",
    "toy",
    "--operator",
    "toy-random",
    "--conditions",
    "solo,homo",
    "--nodes",
    "2",
    "--budget",
    "8",
    "--rounds",
    "2",
    "--eval-workers",
    "0",
    "--progress",
    "quiet",
    "--no-report",
)


#: Keys whose values depend on wall-clock timing, not on the seeded search.
WALL = frozenset({"pid", "waits"})


def figures(out: Path) -> dict:
    """The experiment summary's figures: everything but the wall-clock counts (timings, process
    ids, and ``waits``: how many round starts waited for a peer, which depends on the load;
    docs/architecture.md, "Determinism")."""
    summary = json.loads((out / "summary.json").read_text())

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if "seconds" not in k and k not in WALL}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(summary)


def run_archives(out: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(out)): path.read_bytes()
        for path in sorted(out.glob("*/repeat-*/merged_archive.json"))
    }


def test_parallel_runs_give_the_sequential_summary(cli, toy_env, tmp_path) -> None:
    sequential, fanned = tmp_path / "sequential", tmp_path / "fanned"
    cli("dei", "experiment", *FLAGS, "--repeats", "2", "--out", str(sequential), env=toy_env)
    cli(
        "dei",
        "experiment",
        *FLAGS,
        "--repeats",
        "2",
        "--parallel",
        "2",
        "--out",
        str(fanned),
        env=toy_env,
    )
    assert len(run_archives(fanned)) == 2 * 2  # solo and homo, two repeats each
    assert run_archives(fanned) == run_archives(sequential)
    assert figures(fanned) == figures(sequential)


def test_a_fanned_out_experiment_resumes_exactly(cli, toy_env, tmp_path) -> None:
    sequential, fanned = tmp_path / "sequential", tmp_path / "fanned"
    cli("dei", "experiment", *FLAGS, "--repeats", "2", "--out", str(sequential), env=toy_env)
    cli(
        "dei",
        "experiment",
        *FLAGS,
        "--repeats",
        "1",
        "--parallel",
        "2",
        "--out",
        str(fanned),
        env=toy_env,
    )
    cli(
        "dei",
        "experiment",
        "--resume",
        str(fanned),
        "--repeats",
        "2",
        "--parallel",
        "3",
        "--progress",
        "quiet",
        "--no-report",
        env=toy_env,
    )
    assert run_archives(fanned) == run_archives(sequential)
    assert figures(fanned) == figures(sequential)


def test_parallel_below_one_is_refused(cli, toy_env, tmp_path) -> None:
    result = cli(
        "dei",
        "experiment",
        *FLAGS,
        "--parallel",
        "0",
        "--out",
        str(tmp_path / "x"),
        env=toy_env,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == "error: --parallel must be at least 1, got 0"
