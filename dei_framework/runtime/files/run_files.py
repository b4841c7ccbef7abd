"""Reading a run's files: one loader that checks what it reads and turns any damage into one
:class:`~dei_framework.contract.errors.ConfigError` naming the file and what is wrong with it.

Every command that reads a run directory (``dei-run --resume`` and ``--replay``, ``dei node
--resume``, ``dei merge``, ``dei report``, ``dei export``, ``dei experiment --resume``) reads
its JSON files through :func:`read_json` and the readers built on it: the recorded
configuration (:func:`read_config`), the checkpoint (:func:`read_checkpoint`), round files
(:func:`read_round`), summaries (:func:`read_run_summary`, :func:`read_finished_summary`,
:func:`read_experiment_summary`), the merged archive (:func:`read_merged_archive`) and a
finished run as a whole (:func:`read_finished_run`). The logs' lines are read by
:func:`dei_framework.runtime.files.run_dir.read_jsonl` (and checked against the checkpoint by
:mod:`dei_framework.runtime.files.checkpoints`), which refuse a damaged line through
:func:`damaged_line`.

A file is missing, not UTF-8, not JSON, JSON of another type, a record without a field it
must have, or a field of the wrong type; a finished run's files disagree with each other (a
round file missing, a summary counting other calls than the run's last checkpoint). Nothing
here writes: a refused command changes nothing.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import json
import numbers
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from dei_framework.contract.errors import ConfigError, DEIError
from dei_framework.contract.payloads import ExperimentSummary
from dei_framework.contract.run_summary import RunSummary
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.files import run_layout
from dei_framework.runtime.files.run_layout import (
    CHECKPOINT_FILE,
    MERGED_ARCHIVE_FILE,
    SUMMARY_FILE,
)


def damaged(path: Path, cause: str) -> ConfigError:
    """The error for a damaged file: ``"<path> is damaged: <cause>"``."""
    return ConfigError(f"{path} is damaged: {cause}")


def damaged_line(path: Path, position: int, what: str) -> ConfigError:
    """The error for a log line that is not a record: the file and the line's byte offset."""
    return ConfigError(f"{path} is damaged at byte {position}: the line is not {what}")


def describe(value: Any) -> str:
    """What a JSON value is, for a message (``"null"``, ``"a list"``, ``"the number 5"``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Number):
        text = repr(value)
        return f"the number {text if len(text) <= 20 else text[:17] + '...'}"
    if isinstance(value, str):
        return f"the string {value[:20]!r}" + ("..." if len(value) > 20 else "")
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def read_json(path: Path, *, expect: type = dict, nullable: bool = False) -> Any:
    """A JSON file's content, checked to be of type ``expect`` (``dict``: an object), or
    ``null`` when ``nullable``.

    Raises:
        ConfigError: The file is missing, unreadable, empty, not UTF-8, not JSON, or not of
            type ``expect``.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path} is missing") from None
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read: {exc.strerror or exc}") from None
    if not data.strip():
        raise damaged(path, "it is empty")
    try:
        value = json.loads(data)
    except UnicodeDecodeError as exc:
        raise damaged(path, f"not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise damaged(
            path, f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except (ValueError, RecursionError) as exc:  # numbers too long, nesting too deep
        raise damaged(path, f"not JSON ({exc})") from None
    if not isinstance(value, expect) and not (nullable and value is None):
        wanted = {dict: "a JSON object", list: "a JSON list"}.get(expect, expect.__name__)
        raise damaged(path, f"it holds {describe(value)}, not {wanted}")
    return value


def field(
    path: Path,
    document: Mapping[str, Any],
    key: str,
    expect: type | tuple[type, ...],
    where: str = "",
) -> Any:
    """``document[key]``, checked to be of type ``expect`` (a bool is no number here).

    Args:
        path: The file, for the message.
        document: The object holding the field.
        key: The field.
        expect: Its type or types (``type(None)`` lets it be null).
        where: Where ``document`` lies in the file, for the message (``"nodes.node-0."``).

    Raises:
        ConfigError: The field is missing or of another type.
    """
    if key not in document:
        raise damaged(path, f"{where}{key} is missing")
    value = document[key]
    wanted = expect if isinstance(expect, tuple) else (expect,)
    numeric = any(t in (int, float) for t in wanted)
    if not isinstance(value, wanted) or (numeric and isinstance(value, bool)):
        raise damaged(path, f"{where}{key} is {describe(value)}")
    return value


# --- the configuration ----------------------------------------------------------------------------


def read_config(path: Path) -> RunConfig:
    """A run's recorded configuration (``config.json``).

    Raises:
        ConfigError: The file is missing or damaged (naming it and the field).
    """
    return config_from_json(path, read_json(path))


def config_from_json(path: Path, data: Any, where: str = "") -> RunConfig:
    """The :class:`RunConfig` a recorded configuration holds, every field's JSON type checked
    against the field's (a key of another version, a string where a count belongs, ...).

    Args:
        path: The file it was read from, for the message.
        data: The recorded configuration.
        where: Where it lies in the file (``"base."`` in an experiment's plan).

    Raises:
        ConfigError: It is not a configuration this version wrote.
    """
    if not isinstance(data, dict):
        raise damaged(path, f"{where or 'the configuration'} is {describe(data)}, not an object")
    _check_fields(path, data, RunConfig, where)
    nodes = data.get("nodes")
    if not isinstance(nodes, list):
        raise damaged(path, f"{where}nodes is {describe(nodes)}, not a list")
    for index, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise damaged(path, f"{where}nodes[{index}] is {describe(node)}, not an object")
        _check_fields(path, node, NodeConfig, f"{where}nodes[{index}].")
    try:
        return RunConfig.from_json(data)
    except DEIError as exc:
        raise damaged(path, str(exc)) from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise damaged(path, f"{type(exc).__name__}: {exc}") from None


def _check_fields(path: Path, data: Mapping[str, Any], cls: type, where: str) -> None:
    """Every key of ``data`` is a field of ``cls``, each value of the field's JSON type, and
    every field without a default is there."""
    hints = typing.get_type_hints(cls)
    fields = {field.name: field for field in attrs.fields(cls)}
    for key, value in data.items():
        if key not in fields:
            raise damaged(path, f"unknown key {where}{key} (a file of another version?)")
        if not _matches(value, hints[key]):
            raise damaged(path, f"{where}{key} is {describe(value)}")
    for name, attribute in fields.items():
        if attribute.default is attrs.NOTHING and name not in data:
            raise damaged(path, f"{where}{name} is missing")


def _matches(value: Any, hint: Any) -> bool:
    """Whether a JSON value can stand for a field of type ``hint`` (tuples are lists in JSON;
    a record of another class is an object)."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return any(_matches(value, arm) for arm in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is tuple:
        (item, *_) = typing.get_args(hint) or (Any,)
        return isinstance(value, list) and all(_matches(v, item) for v in value)
    if origin in (Mapping, dict) or hint in (Mapping, dict):
        return isinstance(value, dict)
    if attrs.has(hint):
        return isinstance(value, dict)
    return True


# --- the checkpoint -------------------------------------------------------------------------------


def read_checkpoint(path: Path) -> dict[str, Any] | None:
    """A run's checkpoint, or ``None`` when there is none (missing, or ``null``: a run
    killed before its first checkpoint).

    Raises:
        ConfigError: It is damaged or not of a checkpoint's shape (``nodes`` and ``offsets``,
            each node's state an object).
    """
    path = Path(path)
    if not path.exists():
        return None
    checkpoint = read_json(path, nullable=True)
    if checkpoint is None:
        return None
    if not all(isinstance(checkpoint.get(key), dict) for key in ("nodes", "offsets")):
        raise damaged(
            path,
            "not a checkpoint (no nodes and offsets); remove it to resume from "
            "the start (paid replies are kept)",
        )
    for name, state in checkpoint["nodes"].items():
        if not isinstance(state, dict):
            raise damaged(path, f"nodes.{name} is {describe(state)}, not a node's state")
    return checkpoint


# --- results --------------------------------------------------------------------------------------


def read_round(path: Path) -> dict[str, Any]:
    """A finished round's file (``nodes/<node>/round-NNN.json``): its archive, champion and
    statistics, checked to be the round its name says.

    Raises:
        ConfigError: The file is missing or damaged.
    """
    document = read_json(path)
    number = field(path, document, "round", int)
    match = run_layout.ROUND_NAME.fullmatch(Path(path).name)
    if match is not None and number != int(match.group(1)):
        raise damaged(path, f"it holds round {number}, not the round its name says")
    archive = field(path, document, "archive", dict)
    field(path, archive, "space", list, "archive.")
    elites = field(path, archive, "elites", list, "archive.")
    for index, elite in enumerate(elites):
        _check_program(path, elite, f"archive.elites[{index}]")
    champion = field(path, document, "champion", (dict, type(None)))
    if champion is not None:
        _check_program(path, champion, "champion")
    return document


def _check_program(path: Path, record: Any, where: str) -> None:
    """An elite or champion record: an object with its text, cell and fitness."""
    if not isinstance(record, dict):
        raise damaged(path, f"{where} is {describe(record)}, not an object")
    field(path, record, "text", str, f"{where}.")
    cell = field(path, record, "cell", list, f"{where}.")
    if not all(isinstance(c, int) and not isinstance(c, bool) for c in cell):
        raise damaged(path, f"{where}.cell is not a list of whole numbers")
    field(path, record, "fitness", (int, float, type(None)), f"{where}.")


def read_run_summary(path: Path) -> RunSummary:
    """A run's ``summary.json``, checked: its nodes, its budget, and that they agree (each
    node's calls as its budget entry counts them, the run's calls their sum).

    Raises:
        ConfigError: The file is missing, damaged, or not a run's summary.
    """
    summary = read_json(path)
    nodes = field(path, summary, "nodes", dict)
    field(path, summary, "merged", dict)
    budget = field(path, summary, "budget", dict)
    budget_nodes = field(path, budget, "nodes", dict, "budget.")
    total = field(path, budget, "calls", int, "budget.")
    for name, node in nodes.items():
        if not isinstance(node, dict):
            raise damaged(path, f"nodes.{name} is {describe(node)}, not an object")
        calls = field(path, node, "calls", int, f"nodes.{name}.")
        field(path, node, "rounds_completed", int, f"nodes.{name}.")
        entry = budget_nodes.get(name)
        if not isinstance(entry, dict):
            raise damaged(path, f"budget.nodes.{name} is {describe(entry)}, not an object")
        if field(path, entry, "calls", int, f"budget.nodes.{name}.") != calls:
            raise damaged(
                path,
                f"node {name} made {calls} calls by nodes.{name} but "
                f"{entry['calls']} by budget.nodes.{name}",
            )
    counted = sum(
        entry.get("calls", 0) for entry in budget_nodes.values() if isinstance(entry, dict)
    )
    if total != counted:
        raise damaged(path, f"budget.calls is {total} but its nodes' calls add up to {counted}")
    try:
        return RunSummary.from_json(summary)
    except (KeyError, TypeError, ValueError) as exc:  # a key missing, or of another shape
        raise damaged(path, f"it is not a run's summary ({type(exc).__name__}: {exc})") from None


def read_experiment_summary(path: Path) -> ExperimentSummary:
    """An experiment's ``summary.json``, checked: its conditions, each with its runs.

    Raises:
        ConfigError: The file is missing, damaged, or not an experiment's summary.
    """
    summary = read_json(path)
    conditions = field(path, summary, "conditions", dict)
    for name, condition in conditions.items():
        if not isinstance(condition, dict):
            raise damaged(path, f"conditions.{name} is {describe(condition)}, not an object")
        field(path, condition, "merged", dict, f"conditions.{name}.")
        for index, run in enumerate(field(path, condition, "runs", list, f"conditions.{name}.")):
            if not isinstance(run, dict) or not isinstance(run.get("dir"), str):
                raise damaged(path, f"conditions.{name}.runs[{index}] is not a run's entry")
    return summary


def read_merged_archive(path: Path) -> list[dict[str, Any]]:
    """A run's ``merged_archive.json``: one object per kept elite.

    Raises:
        ConfigError: The file is missing or damaged.
    """
    entries = read_json(path, expect=list)
    for index, entry in enumerate(entries):
        _check_program(path, entry, f"entry {index}")
        if "common_fitness" in entry:
            field(path, entry, "common_fitness", (int, float, type(None)), f"entry {index}.")
    return entries


@attrs.frozen(kw_only=True)
class FinishedRun:
    """A finished run's results, read and checked together by :func:`read_finished_run`.

    Attributes:
        path: The run directory.
        summary: Its ``summary.json``.
        rounds: Per node of the summary, its round files' contents, round 0 first.
        merged: Its ``merged_archive.json``.
    """

    path: Path
    summary: RunSummary
    rounds: dict[str, list[dict[str, Any]]]
    merged: list[dict[str, Any]]


def read_finished_summary(run_dir: Path) -> RunSummary:
    """A finished run's ``summary.json`` (:func:`read_run_summary`), checked against the run's
    last checkpoint when it has one: every node's calls are those the checkpoint counts.

    Raises:
        ConfigError: The run has not finished (no ``summary.json``), or the summary or the
            checkpoint is damaged or they disagree.
    """
    run_dir = Path(run_dir)
    summary_path = run_dir / SUMMARY_FILE
    if not summary_path.exists():
        raise ConfigError(
            f"{run_dir} has no summary.json: the run has not finished "
            f"(continue it with dei-run --resume {run_dir})"
        )
    summary = read_run_summary(summary_path)
    checkpoint = read_checkpoint(run_dir / CHECKPOINT_FILE)
    if checkpoint is not None:
        for name, entry in summary.budget["nodes"].items():
            usage = (checkpoint["nodes"].get(name) or {}).get("usage") or {}
            if usage.get("calls") != entry["calls"]:
                raise ConfigError(
                    f"{summary_path} counts {entry['calls']} calls of node {name} but the run's "
                    f"last checkpoint ({run_dir / CHECKPOINT_FILE}) counts "
                    f"{usage.get('calls')!r}: one of them is damaged"
                )
    return summary


def read_finished_run(run_dir: Path) -> FinishedRun:
    """A finished run's summary (:func:`read_finished_summary`), round files and merged
    archive, checked against each other: every round the summary says a node finished has its
    file.

    Raises:
        ConfigError: The run has not finished (no ``summary.json``), or a file is missing,
            damaged or disagrees with the others (naming it).
    """
    run_dir = Path(run_dir)
    summary = read_finished_summary(run_dir)
    rounds: dict[str, list[dict[str, Any]]] = {}
    for name, node in summary.nodes.items():
        node_rounds = []
        for index in range(node.rounds_completed):
            path = run_layout.round_path(run_dir, name, index)
            if not path.exists():
                raise ConfigError(
                    f"{path} is missing: {run_dir / SUMMARY_FILE} says node "
                    f"{name} finished {node.rounds_completed} rounds"
                )
            node_rounds.append(read_round(path))
        rounds[name] = node_rounds
    merged = read_merged_archive(run_dir / MERGED_ARCHIVE_FILE)
    return FinishedRun(path=run_dir, summary=summary, rounds=rounds, merged=merged)
