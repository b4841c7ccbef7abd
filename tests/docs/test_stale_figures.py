"""scripts/stale_figures.py lists a deterministic figure set once one of its inputs changes after
the commit its JSON records, and only then (on a throwaway git repository)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_checker():
    spec = importlib.util.spec_from_file_location(
        "stale_figures", ROOT / "scripts" / "stale_figures.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


stale_figures = load_checker()


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def write(repo: Path, path: str, text: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)


def figure_json(commit: str) -> str:
    command = "python benchmarks/gossip_sim.py --seed 1 --json"
    record = {
        "script": "docs/figures/gossip_sim.py",
        "git": {"commit": commit},
        "commands": [command],
    }
    return json.dumps(record)


def test_a_set_is_stale_once_an_input_changes_after_its_commit(tmp_path, capsys):
    repo = tmp_path
    git(repo, "init", "-q")
    for path in (
        "docs/figures/gossip_sim.py",
        "docs/figures/figurelib.py",
        "benchmarks/gossip_sim.py",
        "benchmarks/other.py",
        "dei_framework/core.py",
        "docs/guide.md",
    ):
        write(repo, path, "original\n")
    generated_at = commit_all(repo, "code")
    write(repo, "docs/figures/gossip_sim.json", figure_json(generated_at))
    commit_all(repo, "figures")
    # The JSON's own commit, a doc page and a benchmark the set does not run are not inputs.
    write(repo, "docs/guide.md", "edited\n")
    write(repo, "benchmarks/other.py", "edited\n")
    commit_all(repo, "docs")
    assert stale_figures.stale_sets(repo) == {}
    assert stale_figures.main([], root=repo) == 0
    assert "none" in capsys.readouterr().out

    write(repo, "benchmarks/gossip_sim.py", "edited\n")
    write(repo, "dei_framework/core.py", "edited\n")
    commit_all(repo, "code changed")
    assert stale_figures.stale_sets(repo) == {
        "gossip_sim": ["benchmarks/gossip_sim.py", "dei_framework/core.py"]
    }
    assert stale_figures.main([], root=repo) == 0  # informational: never fails CI
    out = capsys.readouterr().out
    assert "gossip_sim: python docs/figures/gossip_sim.py" in out and "dei_framework/core.py" in out


def test_a_commit_missing_from_the_history_counts_as_stale(tmp_path):
    git(tmp_path, "init", "-q")
    write(tmp_path, "docs/figures/gossip_sim.json", figure_json("0" * 40))
    commit_all(tmp_path, "figures")
    assert stale_figures.stale_sets(tmp_path) == {"gossip_sim": None}


def test_every_deterministic_set_exists_and_the_check_runs_here(capsys):
    figures = ROOT / "docs" / "figures"
    assert all((figures / f"{name}.py").is_file() for name in stale_figures.DETERMINISTIC)
    assert stale_figures.main([]) == 0
    assert capsys.readouterr().out.startswith("stale figures:")
