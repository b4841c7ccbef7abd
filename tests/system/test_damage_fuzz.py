"""Seeded damage to every file a command reads, in a run, a node-process run and an experiment:
each command a user would run on the damaged directory ends with one ``error:`` line naming
the file, a non-zero status and no traceback, and leaves every file as it was.

Three finished directories are made once per module (an in-process run, a run whose nodes ran
as ``dei node`` processes and were merged, an experiment, and that experiment with one repeat
interrupted before its summary), and each case damages one file of a copy: cut at a seeded
offset, seeded bytes made invalid UTF-8, deleted, emptied, replaced by ``null`` or by JSON of
another type, or given wrong counts (a log line dropped or doubled, a summary that counts more
than its logs hold, a round number out of range, a key from another version).

Damage that a command recovers from by design is asserted as such (status 0): a torn last
line (what a crash mid-write leaves) is cut back by ``--resume``, and a checkpoint that is
missing or ``null`` (a kill before the first checkpoint) resumes from the start, serving the
recorded replies. These are listed in :data:`RECOVERED`.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from dei_framework.runtime.files.run_layout import LOCK_FILE

#: The seed every damage is drawn from: the cases are the same on every run of the suite.
SEED = 37

TOY = ["--domain", "toy", "--operator", "toy-random", "--eval-workers", "0", "--progress", "quiet"]

NODE_CONFIG = """\
domain = "toy"
sharing = "none"
budget = 24
rounds = 2
eval_workers = 0
[[node]]
name = "node-0"
operator = "toy-random"
[[node]]
name = "node-1"
operator = "toy-random"
"""


@pytest.fixture(scope="module")
def env(toy_site: Path) -> dict[str, str]:
    """Subprocess environment that sees the toy plugin (module-scoped, as the runs are)."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(toy_site), os.environ.get("PYTHONPATH")])),
    }


def _ok(args: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
    result = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{args}: {result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> dict[str, Path]:
    """The finished directories every case copies: ``run``, ``nodes``, ``experiment`` and
    ``interrupted`` (the experiment with its homo repeat stopped before its summary)."""
    root = tmp_path_factory.mktemp("pristine")
    run = root / "run"
    _ok(
        ["dei-run", *TOY, "--nodes", "2", "--budget", "24", "--rounds", "2", "--out", str(run)], env
    )
    nodes = root / "nodes"
    (root / "nodes.toml").write_text(NODE_CONFIG)
    for name in ("node-0", "node-1"):
        _ok(
            [
                "dei",
                "node",
                "--config",
                str(root / "nodes.toml"),
                "--name",
                name,
                "--out",
                str(nodes),
                "--progress",
                "quiet",
            ],
            env,
        )
    _ok(["dei", "merge", str(nodes)], env)
    experiment = root / "experiment"
    _ok(
        [
            "dei",
            "experiment",
            *TOY,
            "--conditions",
            "solo,homo",
            "--nodes",
            "2",
            "--budget",
            "8",
            "--rounds",
            "2",
            "--out",
            str(experiment),
        ],
        env,
    )
    interrupted = root / "interrupted"
    shutil.copytree(experiment, interrupted)
    # As a kill after the repeat's last checkpoint and before its results leaves it.
    for name in (
        "homo/repeat-0/summary.json",
        "homo/repeat-0/merged_archive.json",
        "summary.json",
        "report.md",
    ):
        (interrupted / name).unlink()
    shutil.rmtree(interrupted / "plots", ignore_errors=True)
    return {"run": run, "nodes": nodes, "experiment": experiment, "interrupted": interrupted}


# --- damage -------------------------------------------------------------------------------------

#: A damage: the file's bytes and a seeded generator in, the new bytes out (``None``: deleted).
Damage = Callable[[bytes, random.Random], "bytes | None"]


def _cut(data: bytes, rng: random.Random) -> bytes:
    """Cut at a seeded offset inside the file (never its whole length)."""
    return data[: rng.randrange(1, len(data) - 1)]


def _invalid_utf8(data: bytes, rng: random.Random) -> bytes:
    """One to three seeded bytes before the last line's end made 0xFF (never valid UTF-8, so
    never a file that still reads as it did)."""
    damaged = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        damaged[rng.randrange(0, len(data) - 1)] = 0xFF
    return bytes(damaged)


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _drop_line(data: bytes, rng: random.Random) -> bytes:
    """One seeded whole line taken out (a log missing a record)."""
    lines = _lines(data)
    del lines[rng.randrange(len(lines))]
    return b"".join(lines)


def _double_line(data: bytes, rng: random.Random) -> bytes:
    """One seeded whole line written twice (a log doubled)."""
    lines = _lines(data)
    index = rng.randrange(len(lines))
    lines.insert(index, lines[index])
    return b"".join(lines)


def _line_replaced(value: bytes) -> Damage:
    def damage(data: bytes, rng: random.Random) -> bytes:
        lines = _lines(data)
        lines[rng.randrange(len(lines))] = value + b"\n"
        return b"".join(lines)

    return damage


def _torn_tail(data: bytes, rng: random.Random) -> bytes:
    """Half a line appended, as a crash in the middle of a write leaves."""
    last = _lines(data)[-1]
    return data + last[: rng.randrange(1, len(last) - 1)]


def _replaced(text: str) -> Damage:
    return lambda data, rng: text.encode()


def _edited(change: Callable[[dict], None]) -> Damage:
    """The JSON object changed in place (a hand edit, or a file of another version)."""

    def damage(data: bytes, rng: random.Random) -> bytes:
        document = json.loads(data)
        change(document)
        return json.dumps(document, indent=1).encode()

    return damage


def _set(*path: str | int, value: object) -> Damage:
    def change(document: dict) -> None:
        for key in path[:-1]:
            document = document[key]
        document[path[-1]] = value

    return _edited(change)


def _first_node_counts_more(document: dict) -> None:
    """A node summary that counts one call more than its logs hold."""
    node = next(iter(document["nodes"].values()))
    node["calls"] += 1
    next(iter(document["budget"]["nodes"].values()))["calls"] += 1
    document["budget"]["calls"] += 1


def _first_elite_drops_its_cell(document: dict) -> None:
    del document["archive"]["elites"][0]["cell"]


def _first_entry_not_an_object(document: list) -> None:
    document[0] = "not an elite"


GENERIC: dict[str, Damage] = {
    "deleted": lambda data, rng: None,
    "empty": _replaced(""),
    "cut": _cut,
    "invalid-utf8": _invalid_utf8,
}
JSON_TYPES: dict[str, Damage] = {
    "null": _replaced("null"),
    "a list": _replaced("[1, 2, 3]"),
    "a string": _replaced('"text"'),
    "a number": _replaced("1e400"),
}
LOG: dict[str, Damage] = {
    "line dropped": _drop_line,
    "line doubled": _double_line,
    "line null": _line_replaced(b"null"),
    "line a list": _line_replaced(b"[1, 2, 3]"),
    "line of another kind": _line_replaced(b'{"unknown": true}'),
}
SPECIFIC: dict[str, dict[str, Damage]] = {
    "config": {
        "key from another version": _set("frobnicate", value=1),
        "rounds a string": _set("rounds", value="three"),
        "no nodes": _set("nodes", value=[]),
    },
    "checkpoint": {
        "offset huge": _set("offsets", "events.jsonl", value=10**30),
        "offset negative": _set("offsets", "calls.jsonl", value=-4),
        "node state empty": _edited(lambda d: d["nodes"].update(dict.fromkeys(d["nodes"], {}))),
    },
    "summary": {
        "counts more calls": _edited(_first_node_counts_more),
        "nodes a list": _set("nodes", value=[]),
    },
    "experiment-summary": {"conditions a list": _set("conditions", value=[])},
    "round": {
        "round huge": _set("round", value=10**30),
        "round of another file": _set("round", value=0),
        "archive a number": _set("archive", value=5),
        "an elite without a cell": _edited(_first_elite_drops_its_cell),
    },
    "merged": {"an entry not an object": _edited(_first_entry_not_an_object)},
    "plan": {
        "repeats a string": _set("repeats", value="two"),
        "key from another version": _set("frobnicate", value=1),
    },
}


LOGS = ("events", "calls")


def _damages(kind: str) -> dict[str, Damage]:
    """Every damage a file of ``kind`` can meet."""
    if kind in LOGS:
        return {**GENERIC, **LOG, "torn tail": _torn_tail}
    return {**GENERIC, **JSON_TYPES, **SPECIFIC.get(kind, {})}


def _chosen(kind: str, turn: int) -> list[str]:
    """The damages the ``turn``-th target of ``kind`` meets: a window of the common ones, moved
    on at every target of the kind so that they meet them all between them, and the damages
    particular to the kind (two of a round file's, in turn)."""
    common = [name for name in _damages(kind) if name not in SPECIFIC.get(kind, {})]
    width = 5 if kind in LOGS else 3
    chosen = [common[(turn * width + i) % len(common)] for i in range(width)]
    specific = list(SPECIFIC.get(kind, {}))
    if kind == "round":
        specific = [specific[(turn * 2 + i) % len(specific)] for i in range(2)]
    return chosen + specific


# --- commands -----------------------------------------------------------------------------------

#: The commands a user runs on each directory, by name: argument lists with ``{dir}`` for the
#: damaged directory and ``{out}`` for a fresh directory outside it.
COMMANDS: dict[str, list[str]] = {
    "resume": ["dei-run", "--resume", "{dir}", "--progress", "quiet", "--no-report"],
    "replay": [
        "dei-run",
        "--replay",
        "{dir}",
        "--out",
        "{out}",
        "--progress",
        "quiet",
        "--no-report",
    ],
    "report": ["dei", "report", "{dir}"],
    "export": ["dei", "export", "{dir}", "--out", "{out}"],
    "export-best": ["dei", "export", "--best", "{dir}", "--out", "{out}"],
    "merge": ["dei", "merge", "{dir}", "--no-report"],
    "node-resume": ["dei", "node", "--resume", "{dir}", "--name", "node-0", "--progress", "quiet"],
    "experiment-resume": [
        "dei",
        "experiment",
        "--resume",
        "{dir}",
        "--progress",
        "quiet",
        "--no-report",
    ],
}

#: Per directory: each file damaged, its kind, and the commands that read it.
TARGETS: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    "run": [
        ("config.json", "config", ("resume", "replay")),
        ("checkpoint.json", "checkpoint", ("resume", "replay")),
        ("events.jsonl", "events", ("resume", "replay")),
        ("calls.jsonl", "calls", ("resume", "replay")),
        ("nodes/node-1/round-001.json", "round", ("resume", "report", "export")),
        ("summary.json", "summary", ("report", "export")),
        ("merged_archive.json", "merged", ("report", "export-best")),
    ],
    "nodes": [
        ("config.json", "config", ("merge",)),
        ("processes/node-0/config.json", "config", ("node-resume",)),
        ("processes/node-0/checkpoint.json", "checkpoint", ("node-resume",)),
        ("processes/node-0/events.jsonl", "events", ("merge", "node-resume")),
        ("processes/node-0/calls.jsonl", "calls", ("merge", "node-resume")),
        ("processes/node-0/nodes/node-0/round-001.json", "round", ("merge", "node-resume")),
        ("processes/node-0/summary.json", "summary", ("merge",)),
    ],
    "experiment": [
        ("summary.json", "experiment-summary", ("report",)),
        ("solo/repeat-0/summary.json", "summary", ("experiment-resume", "report", "export")),
        ("homo/repeat-0/nodes/node-0/round-001.json", "round", ("report", "export")),
    ],
    "interrupted": [
        ("experiment.json", "plan", ("experiment-resume", "report")),
        ("homo/repeat-0/config.json", "config", ("experiment-resume",)),
        ("homo/repeat-0/checkpoint.json", "checkpoint", ("experiment-resume",)),
        ("homo/repeat-0/events.jsonl", "events", ("experiment-resume",)),
        ("homo/repeat-0/calls.jsonl", "calls", ("experiment-resume",)),
        ("homo/repeat-0/nodes/node-1/round-001.json", "round", ("experiment-resume",)),
    ],
}

#: (damage, command) pairs recovered by design (status 0), each as the docs promise it:
#:
#: - a torn last line is what a crash mid-write leaves: resume cuts it, replay skips it;
#: - no checkpoint (or ``null``) is a kill before the first one: resume starts over, serving
#:   the replies ``calls.jsonl`` holds;
#: - a run's summary is the result the run computes at its end: an experiment resumes a repeat
#:   without one, ``dei export`` leaves it out (with a warning line), ``dei merge`` takes a
#:   node process without one from its last checkpoint (marked stopped), and ``dei report``
#:   recomputes a missing experiment summary.
RECOVERED = {
    ("torn tail", "resume"),
    ("torn tail", "node-resume"),
    ("torn tail", "experiment-resume"),
    ("torn tail", "replay"),
    ("checkpoint deleted", "resume"),
    ("checkpoint deleted", "node-resume"),
    ("checkpoint deleted", "experiment-resume"),
    ("checkpoint null", "resume"),
    ("checkpoint null", "node-resume"),
    ("checkpoint null", "experiment-resume"),
    ("summary deleted", "experiment-resume"),
    ("summary deleted", "export"),
    ("summary deleted", "merge"),
    ("experiment-summary deleted", "report"),
}


@attrs.frozen
class Case:
    """One damaged file of one directory, and the command run on it."""

    directory: str
    target: str
    kind: str
    damage: str
    command: str

    @property
    def recovered(self) -> bool:
        return (self.damage, self.command) in RECOVERED or (
            f"{self.kind} {self.damage}",
            self.command,
        ) in RECOVERED

    def __str__(self) -> str:
        return f"{self.directory}:{self.target}:{self.damage}:{self.command}"


def _cases() -> list[Case]:
    """The chosen damages of every target (:func:`_chosen`), each with one of the commands
    that read the target, in turn."""
    cases = []
    turns: dict[str, int] = {}  # per kind, the targets of that kind so far
    for directory, targets in TARGETS.items():
        for target, kind, commands in targets:
            turn = turns[kind] = turns.get(kind, -1) + 1
            for index, damage in enumerate(_chosen(kind, turn)):
                cases.append(Case(directory, target, kind, damage, commands[index % len(commands)]))
    return cases


CASES = _cases()


def _hashes(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != LOCK_FILE
    }


@pytest.mark.parametrize("case", CASES, ids=str)
def test_damage_ends_in_one_line_and_changes_nothing(case: Case, pristine, env, tmp_path):
    directory = tmp_path / case.directory
    shutil.copytree(pristine[case.directory], directory)
    path = directory / case.target
    # One generator per case, seeded by its name: a case draws the same offsets whichever
    # cases run before it.
    rng = random.Random(f"{SEED}:{case}")
    damaged = _damages(case.kind)[case.damage](path.read_bytes(), rng)
    if damaged is None:
        path.unlink()
    else:
        path.write_bytes(damaged)
    before = _hashes(directory)
    out = tmp_path / "out"
    args = [arg.format(dir=directory, out=out) for arg in COMMANDS[case.command]]
    result = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in result.stderr, result.stderr
    if case.recovered:  # at most warnings on the way
        assert result.returncode == 0, result.stderr
        assert all(line.startswith("warning: ") for line in result.stderr.splitlines())
        return
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: "), (
        f"status {result.returncode}, stderr:\n{result.stderr}"
    )
    assert case.target.split("/")[-1] in lines[0], lines[0]  # it names the file
    assert _hashes(directory) == before  # nothing changed, nothing written
    assert not out.exists()


def test_the_cases_cover_every_command_and_every_kind_of_damage() -> None:
    assert 80 <= len(CASES) <= 130
    assert {case.command for case in CASES} == set(COMMANDS)
    assert {case.directory for case in CASES} == set(TARGETS)
    for kind in ("config", "checkpoint", "events", "calls", "round", "summary"):
        met = {case.damage for case in CASES if case.kind == kind}
        assert met == set(_damages(kind)), (kind, set(_damages(kind)) - met)
    assert any(case.recovered for case in CASES)
