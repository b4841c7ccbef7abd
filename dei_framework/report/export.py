"""``dei export``: the champions and elites of runs as files in their domain's own format.

A run keeps its programs inside JSON (``nodes/<node>/round-NNN.json``). :func:`export_programs`
writes them out: one file per program, in the format the domain's plugin gives through the
``dei_export_program`` hook (Core War: ``.red`` files), the program text unchanged in a
``.txt`` file when no plugin answers, and one JSON Lines file, ``programs.jsonl``, with every
program's text, origin and file name.

Champions are each node's champion of each finished round; elites are the elites of each
node's last finished round. An experiment directory is exported run by run.

:func:`export_best` writes one program instead: the best of a run's merged archive
(``dei export --best``), ranked by common-ground fitness when the run measured it.

Internal: not public API (the public names are :mod:`dei_framework`'s, among them
:class:`~dei_framework.contract.records.ExportedProgram`); anything here may change in any
release.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import attrs

from dei_framework.contract.errors import ConfigError
from dei_framework.contract.records import ExportedProgram
from dei_framework.contract.registry import PluginRegistry
from dei_framework.runtime.files.run_dir import holds_run
from dei_framework.runtime.files.run_files import read_finished_run, read_run_summary
from dei_framework.runtime.files.run_layout import CONFIG_FILE, MERGED_ARCHIVE_FILE, SUMMARY_FILE

#: What ``--what`` may select.
WHAT = ("champions", "elites", "all")

#: The JSON Lines file written beside the program files.
JSONL_NAME = "programs.jsonl"


def find_runs(directory: Path) -> list[Path]:
    """The run directories in ``directory``: itself if it is a run, else the finished runs
    below it (an interrupted experiment's unfinished repeats are left out).

    Raises:
        ConfigError: ``directory`` holds no run.
    """
    if holds_run(directory):
        return [directory]
    runs = sorted(path.parent for path in directory.rglob(SUMMARY_FILE) if holds_run(path.parent))
    if not runs:
        raise ConfigError(
            f"{directory} holds no run: no config.json, events.jsonl or "
            "nodes/<node>/round-NNN.json below it "
            "(is it the --out directory of dei-run or dei experiment?)"
        )
    return runs


def unfinished_runs(directory: Path) -> list[Path]:
    """The runs below ``directory`` that have not finished (``config.json`` without
    ``summary.json``: an interrupted experiment's repeats), which an export leaves out."""
    if holds_run(directory):
        return []
    return sorted(
        path.parent
        for path in directory.rglob(CONFIG_FILE)
        if not (path.parent / SUMMARY_FILE).exists()
    )


def collect_programs(directory: Path, what: str = "all") -> Iterator[ExportedProgram]:
    """The champions and/or elites of every run in ``directory``, run by run, node by node.

    Every run is read and checked whole
    (:func:`~dei_framework.runtime.files.run_files.read_finished_run`) before its first program
    is given.

    Raises:
        ConfigError: ``what`` is not one of :data:`WHAT`, ``directory`` holds no run, or a
            file of a run is damaged.
    """
    if what not in WHAT:
        raise ConfigError(f"--what must be one of {', '.join(WHAT)}, got {what!r}")
    directory = directory.resolve()
    for run in map(read_finished_run, find_runs(directory)):
        name = _run_name(run.path, directory)
        for node, rounds in run.rounds.items():
            if what in ("champions", "all"):
                for document in rounds:
                    champion = document["champion"]
                    if champion is not None and champion["text"]:
                        yield _program(champion, name, node, document, "champion")
            if what in ("elites", "all") and rounds:
                last = rounds[-1]
                for elite in last["archive"]["elites"]:
                    yield _program(elite, name, node, last, "elite")


def _run_name(run_dir: Path, directory: Path) -> str:
    """The run's folder name, or its path below an experiment directory."""
    return run_dir.name if run_dir == directory else run_dir.relative_to(directory).as_posix()


def _program(
    record: dict[str, Any], run: str, node: str, document: dict[str, Any], kind: str
) -> ExportedProgram:
    fitness = record.get("fitness")
    return ExportedProgram(
        text=str(record.get("text", "")),
        run=run,
        node=node,
        operator=str(record.get("operator") or ""),
        round=int(document.get("round", record.get("round", -1))),
        fitness=None if fitness is None else float(fitness),
        cell=tuple(int(c) for c in record.get("cell") or ()),
        id=str(record.get("id") or ""),
        kind=kind,  # type: ignore[arg-type]
    )


def plain_text(program: ExportedProgram) -> tuple[str, str]:
    """The core's format when no plugin gives one: the program text unchanged, ``.txt``."""
    text = program.text
    return ".txt", text if text.endswith("\n") else text + "\n"


def export_programs(
    directory: Path, out: Path, registry: PluginRegistry, *, what: str = "all"
) -> list[Path]:
    """Writes the programs of the runs in ``directory`` to ``out``; returns the files written.

    One file per program, named by :attr:`ExportedProgram.stem` plus the suffix of its format,
    and ``out/programs.jsonl`` (one JSON object per program: its fields and ``file``).

    Raises:
        ConfigError: Bad ``what``, no run in ``directory``, or ``out`` is a file.
    """
    programs = list(collect_programs(directory, what))
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file, not a directory")
    out.mkdir(parents=True, exist_ok=True)
    directory = directory.resolve()
    domains = {
        _run_name(run_dir, directory): read_run_summary(run_dir / SUMMARY_FILE).domain
        for run_dir in find_runs(directory)
    }
    written: list[Path] = []
    with (out / JSONL_NAME).open("w") as jsonl:
        for program in programs:
            domain = domains.get(program.run, "")
            answer = registry.manager.hook.dei_export_program(domain=domain, program=program)
            suffix, text = answer if answer is not None else plain_text(program)
            path = out / f"{program.stem}{suffix}"
            path.write_text(text)
            written.append(path)
            jsonl.write(
                json.dumps({**program.to_json(), "domain": domain, "file": path.name}) + "\n"
            )
    return written


@attrs.frozen(kw_only=True)
class BestProgram:
    """The best program of a run's merged archive, and what it was ranked by.

    Attributes:
        program: The program (``kind`` ``"elite"``; ``fitness`` the raw fitness its node
            measured).
        score: The fitness it was ranked by.
        basis: ``"common"`` (common-ground fitness: the mean of ``samples`` fresh
            evaluations on the reference set) or ``"raw"`` (the fitness its node measured;
            the run measured no common ground).
        samples: How many evaluations ``score`` is the mean of (1 for ``"raw"``).
    """

    program: ExportedProgram
    score: float
    basis: Literal["common", "raw"]
    samples: int

    @property
    def line(self) -> str:
        """One line saying which program it is and which fitness chose it."""
        where = (
            f"node {self.program.node}, round {self.program.round}, cell {list(self.program.cell)}"
        )
        if self.basis == "common":
            raw = "unmeasured" if self.program.fitness is None else f"{self.program.fitness:.6g}"
            # One evaluation: a deterministic domain (or every other seed failed).
            samples = (
                f"mean of {self.samples} evaluations" if self.samples != 1 else "one evaluation"
            )
            return f"best by common-ground fitness {self.score:.6g} ({samples}; raw {raw}): {where}"
        return f"best by raw fitness {self.score:.6g} (the run has no common ground): {where}"


def best_program(run_dir: Path) -> BestProgram:
    """The best program of one run: the highest fitness in its ``merged_archive.json``.

    Common-ground fitness ranks when the run measured it (raw fitness mixes the search with
    the opponents each node happened to fight, so only common ground compares nodes fairly);
    otherwise raw fitness does. Equal scores keep the first entry of the file, so the choice
    is the same every time.

    Raises:
        ConfigError: ``run_dir`` is not one run (an experiment holds several: name one), or
            it has no merged archive (an unfinished run), or the archive is empty.
    """
    runs = find_runs(run_dir)
    if len(runs) != 1 or runs[0] != run_dir:
        raise ConfigError(
            f"--best takes one run; {run_dir} holds {len(runs)} (give one of their directories)"
        )
    run = read_finished_run(run_dir)
    path = run_dir / MERGED_ARCHIVE_FILE
    entries = [entry for entry in run.merged if entry["text"]]
    common = [e for e in entries if e.get("common_fitness") is not None]
    basis: Literal["common", "raw"] = "common" if common else "raw"
    key = "common_fitness" if common else "fitness"
    ranked = [e for e in (common or entries) if e.get(key) is not None]
    if not ranked:
        raise ConfigError(f"{path} holds no program with a fitness")
    best = max(ranked, key=lambda entry: float(entry[key]))  # max keeps the first of equals
    program = _program(best, run_dir.resolve().name, str(best.get("node") or ""), {}, "elite")
    samples = int(best.get("common_fitness_n") or 1) if common else 1
    return BestProgram(program=program, score=float(best[key]), basis=basis, samples=samples)


def export_best(run_dir: Path, out: Path, registry: PluginRegistry) -> tuple[Path, BestProgram]:
    """Writes the best program of one run (:func:`best_program`) to the file ``out``, in the
    domain's format (the ``dei_export_program`` hook; the text unchanged without one).

    ``out`` is the file written, whatever its suffix; an existing directory gets the file
    inside it, named by the program's stem and the format's suffix.

    Returns:
        The path written and the program with what ranked it.

    Raises:
        ConfigError: As :func:`best_program`.
    """
    best = best_program(run_dir)
    domain = read_run_summary(run_dir / SUMMARY_FILE).domain
    answer = registry.manager.hook.dei_export_program(domain=domain, program=best.program)
    suffix, text = answer if answer is not None else plain_text(best.program)
    path = out / f"{best.program.stem}{suffix}" if out.is_dir() else out
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path, best
