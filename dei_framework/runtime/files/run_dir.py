"""The run directory: resolved config, event log, call record, checkpoints and results.

Layout::

    config.json          the resolved RunConfig
    events.jsonl         one JSON object per line: "evaluated", "received", "round", "node",
                         "received_late" (a peer champion that came after the last round began)
    calls.jsonl          every operator call (failed ones too): request key, prompt and its
                         hash, reply, usage of all its attempts
    checkpoint.json      the state to resume from (written atomically)
    nodes/<node>/round-NNN.json   each finished round's archive and champion
    summary.json         the run's results (written at the end)
    processes/<node>/    one run directory per node process (one process per node: ``dei node``
                         writes it, the ``dei-run`` launcher merges them into the files above)

Appends go through one writer per file; a crash can leave a torn last line, which readers skip
and resume truncates away. Every other file is replaced atomically (write, fsync, rename).

Lines appended during one turn of the event loop reach their file together at the end of that
turn (one write per file, not one per line): before the loop waits for anything, so a crash
loses no more than it did line by line. A checkpoint's offsets, :meth:`RunDir.close` and
:func:`read_jsonl` write out what is pending first.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import hashlib
import json
import math
import os
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from dei_framework.contract.errors import ConfigError, WriteError
from dei_framework.contract.run_summary import RunSummary
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.files import run_layout
from dei_framework.runtime.files.run_files import (
    damaged_line,
    read_checkpoint,
    read_config,
    read_json,
)
from dei_framework.runtime.files.run_layout import (
    CALLS_FILE,
    CHECKPOINT_FILE,
    CONFIG_FILE,
    EVENTS_FILE,
    EXPERIMENT_FILE,
    LOGS,
    RUN_FILES,
    SUMMARY_FILE,
)
from dei_framework.runtime.files.run_lock import held


def write_json_atomic(path: Path, data: Any, *, layout: str = "indent") -> None:
    """Writes JSON so that a crash leaves either the old file or the new one, never a mix.

    ``layout`` is ``"indent"`` (``indent=1``: small files people read), ``"compact"`` (one
    line, for files written often from the event loop, like checkpoints) or ``"records"``
    (objects indented, but each element of a list of objects or lists on one line: archives,
    whose elites are then one line each). ``indent`` uses the standard library's encoder (its
    pure-Python path); the other two encode with orjson, much faster on an archive of
    thousands of elites (and, as :func:`dumps` does, write a number that is not finite as
    null, where ``indent`` raises :class:`ValueError`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # one per writer process
    if layout == "indent":
        text = json.dumps(data, allow_nan=False, default=_json_default, indent=1)
    else:
        text = _records_text(data, 0) if layout == "records" else dumps(data)
    _write_replacing(path, tmp, text)


def _write_replacing(path: Path, tmp: Path, text: str) -> None:
    """Writes ``text`` to ``tmp``, then puts it in the place of ``path``; a write that fails
    (a full disk) leaves no ``tmp`` behind and ``path`` as it was."""
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):  # never created, or its folder is gone
            tmp.unlink()
        raise cannot_write(path, exc) from None


def cannot_write(path: Path, exc: OSError) -> WriteError:
    """The one-line error for a file that could not be written."""
    return WriteError(f"cannot write {path}: {exc.strerror or exc}")


def _json_default(value: Any) -> Any:
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


#: orjson's options for every line: numpy arrays and scalars as numbers.
_ORJSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY


def dumps(data: Any) -> str:
    """One compact JSON line (NaN and infinities are not JSON: they are written as null).

    orjson writes it (a run logs a line per evaluation: the standard library's encoder took
    a large share of a cheap domain's run); a record orjson refuses (keys that are not
    strings, integers beyond 64 bits) is written by the standard library's encoder instead.
    Numbers are the same either way, but may be spelled differently (``1e-05``/``1e-5``).
    """
    try:
        return orjson.dumps(data, default=_json_default, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError:
        return json.dumps(_finite(data), separators=(",", ":"), default=_json_default)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _records_text(value: Any, depth: int) -> str:
    """``value`` in the ``"records"`` layout of :func:`write_json_atomic`."""
    if isinstance(value, dict) and value and all(type(key) is str for key in value):
        pad = " " * (depth + 1)
        items = ",\n".join(
            f"{pad}{dumps(key)}: {_records_text(item, depth + 1)}" for key, item in value.items()
        )
        return "{\n" + items + "\n" + " " * depth + "}"
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], (dict, list, tuple)):
        pad = " " * (depth + 1)
        return "[\n" + ",\n".join(pad + dumps(item) for item in value) + "\n" + " " * depth + "]"
    return dumps(value)


def read_jsonl(path: Path, *, limit: int | None = None) -> Iterator[dict[str, Any]]:
    """Yields the JSON objects of a JSON-lines file, skipping a torn last line.

    A torn last line (one the writer never ended, as a crash mid-write leaves) is left out;
    any other line that is not a JSON object is damage.

    Args:
        path: The file (missing means empty).
        limit: Read only the first ``limit`` bytes (a checkpoint's offset).

    Raises:
        ConfigError: A whole line is not a JSON object (naming the file and its byte offset).
    """
    _flush_pending(path)
    if not path.exists():
        return
    with open(path, "rb") as handle:
        data = handle.read() if limit is None else handle.read(limit)
    whole = data[: data.rfind(b"\n") + 1]  # the torn last line, if any, left out
    lines = whole.splitlines()
    try:  # every line an object (nearly always): one parse for the file, not one per line
        records = json.loads(b"[" + b",".join(lines) + b"]")
    except ValueError:  # a damaged line (or one not UTF-8): found below, line by line
        records = None
    if (
        records is not None
        and len(records) == len(lines)
        and all(type(record) is dict for record in records)
    ):
        yield from records
        return
    position = 0
    for line in lines:
        yield log_record(path, position, line)
        position += len(line) + 1


def log_record(path: Path, position: int, line: bytes) -> dict[str, Any]:
    """One whole line of a log as its record.

    Raises:
        ConfigError: The line is not a JSON object (naming the file and ``position``).
    """
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or not UTF-8
        record = None
    if not isinstance(record, dict):
        raise damaged_line(path, position, "a JSON object")
    return record


def holds_run(path: Path) -> bool:
    """Whether ``path`` is a run directory, started, interrupted or finished: it has its
    configuration, its event log or a round file. The one rule ``dei export``, ``dei report``
    and ``dei watch`` go by."""
    return (
        (path / CONFIG_FILE).is_file()
        or (path / EVENTS_FILE).is_file()
        or bool(run_layout.round_paths(path))
    )


def holds_experiment(path: Path) -> bool:
    """Whether ``path`` is an experiment directory: its plan, or (the plan lost) a summary
    that says it is one.

    Raises:
        ConfigError: Its summary (read when there is no plan) is damaged.
    """
    if (path / EXPERIMENT_FILE).is_file():
        return True
    summary_path = path / SUMMARY_FILE
    if not summary_path.is_file():
        return False
    summary = read_json(summary_path)
    return summary.get("kind") == "experiment" or "conditions" in summary


class RunDir:
    """Reads and writes one run directory.

    Args:
        path: The directory (created if missing).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._handles: dict[str, Any] = {}
        # Lines appended but not written yet, by file name (see the module docstring).
        self._pending: dict[str, list[str]] = {}
        self._flush_loop: asyncio.AbstractEventLoop | None = None  # where a flush is scheduled
        self._keys: dict[str, str] = {}
        # Per append-only file: the SHA-256 of its bytes so far, and how many bytes that is
        # (checkpoints record it: a resume finds a log changed before its offset).
        self._digests: dict[str, tuple[Any, int]] = {}
        # The write that failed (a full disk): lines are lost, so nothing more is written.
        self._failure: WriteError | None = None

    # --- paths ----------------------------------------------------------------------------------

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG_FILE

    @property
    def events_path(self) -> Path:
        return self.path / EVENTS_FILE

    @property
    def calls_path(self) -> Path:
        return self.path / CALLS_FILE

    @property
    def checkpoint_path(self) -> Path:
        return self.path / CHECKPOINT_FILE

    @property
    def summary_path(self) -> Path:
        return self.path / SUMMARY_FILE

    def process_path(self, node: str) -> Path:
        """The directory of ``node``'s own process (one process per node)."""
        return run_layout.process_dir(self.path, node)

    def round_path(self, node: str, round_index: int) -> Path:
        return run_layout.round_path(self.path, node, round_index)

    # --- appends --------------------------------------------------------------------------------

    def _append(self, name: str, lines: list[str]) -> None:
        if self._failure is not None:  # a write failed (in a flush the loop ran): stop here
            raise self._failure
        if not lines:
            return
        pending = self._pending.get(name)
        if pending is None:
            pending = self._pending[name] = []
            _WRITERS[self._key(name)] = self
        pending.extend(lines)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop: nothing to gather lines with
            self.flush()
            return
        if self._flush_loop is not loop:  # (a loop that closed before its turn ended: again)
            self._flush_loop = loop
            loop.call_soon(self._flush_soon)

    def _flush_soon(self) -> None:
        """:meth:`flush` at the end of the event loop's turn; a write that fails is kept (the
        loop would only log it) and raised by the next append, flush or close."""
        with contextlib.suppress(WriteError):
            self.flush()

    def _key(self, name: str) -> str:
        """The file's key in the module's table of pending writers (its absolute path)."""
        key = self._keys.get(name)
        if key is None:
            key = self._keys[name] = _key(self.path / name)
        return key

    def flush(self) -> None:
        """Writes the appended lines that are still pending to their files.

        Raises:
            WriteError: A file could not be written (a full disk). Lines were lost: every
                later append, flush or checkpoint offset raises the same error, so that no
                checkpoint ever covers a log with lines missing (``--resume`` cuts the logs
                back to the last checkpoint written before).
        """
        if self._failure is not None:
            raise self._failure
        self._flush_loop = None
        pending, self._pending = self._pending, {}
        for name, lines in pending.items():
            _WRITERS.pop(self._key(name), None)
            lines.append("")  # the last line's newline
            data = "\n".join(lines).encode()
            try:
                handle = self._handles.get(name)
                if handle is None:
                    handle = self._handles[name] = open(self.path / name, "ab")
                digest, size = self._digest(name)
                handle.write(data)
                handle.flush()
            except OSError as exc:
                self._failure = cannot_write(self.path / name, exc)
                raise self._failure from None
            digest.update(data)
            self._digests[name] = (digest, size + len(data))

    def _digest(self, name: str) -> tuple[Any, int]:
        """The running SHA-256 of an append-only file and the bytes it covers, computed from
        the file the first time (a resumed run's logs, as the resume left them)."""
        known = self._digests.get(name)
        path = self.path / name
        size = path.stat().st_size if path.exists() else 0
        if known is None or known[1] != size:
            data = path.read_bytes() if size else b""
            known = self._digests[name] = (hashlib.sha256(data), len(data))
        return known

    def log_events(self, events: list[Mapping[str, Any]]) -> None:
        """Appends events to ``events.jsonl``."""
        self._append(EVENTS_FILE, [dumps(event) for event in events])

    def log_calls(self, calls: list[Mapping[str, Any]]) -> None:
        """Appends call records to ``calls.jsonl``."""
        self._append(CALLS_FILE, [dumps(call) for call in calls])

    def replace_jsonl(self, name: str, records: list[Mapping[str, Any]]) -> None:
        """Replaces a JSON-lines file atomically (a merge of node processes' logs)."""
        self.close()
        path = self.path / name
        tmp = path.with_name(f".{name}.tmp")
        _write_replacing(path, tmp, "".join(dumps(record) + "\n" for record in records))

    def offsets(self) -> dict[str, int]:
        """Current sizes of the append-only files (stored in checkpoints), pending lines
        written out first."""
        self.flush()
        return {name: self._digest(name)[1] for name in LOGS}

    def digests(self) -> dict[str, str]:
        """``sha256:<hex>`` of each append-only file's bytes (stored in checkpoints beside the
        offsets), pending lines written out first."""
        self.flush()
        return {name: f"sha256:{self._digest(name)[0].hexdigest()}" for name in LOGS}

    def truncate(self, offsets: Mapping[str, int]) -> None:
        """Cuts the append-only files back to a checkpoint's offsets (used by resume); lines
        still pending are written first (and cut with the rest)."""
        self.close()
        for name, size in offsets.items():
            path = self.path / name
            if path.exists() and path.stat().st_size > size:
                with open(path, "r+b") as handle:
                    handle.truncate(size)

    def close(self) -> None:
        """Writes out pending lines and closes the append-only files.

        Raises:
            WriteError: A file could not be written (now or before); the files are closed.
        """
        try:
            self.flush()
        finally:
            for name, handle in self._handles.items():
                try:
                    handle.close()
                except OSError as exc:  # what its buffer held is lost: as a failed flush
                    if self._failure is None:
                        self._failure = cannot_write(self.path / name, exc)
            self._handles.clear()
            self._digests.clear()  # the files may change hands now (truncated, replaced)
        if self._failure is not None:
            raise self._failure

    # --- whole files ----------------------------------------------------------------------------

    def write_config(self, config: Mapping[str, Any]) -> None:
        write_json_atomic(self.config_path, config)

    def read_config(self) -> RunConfig:
        """The run's recorded configuration.

        Raises:
            ConfigError: There is none (not a run directory), or it is damaged.
        """
        if not self.config_path.exists():
            raise ConfigError(f"{self.path} is not a run directory (no config.json)")
        return read_config(self.config_path)

    def write_checkpoint(self, state: Mapping[str, Any]) -> None:
        write_json_atomic(self.checkpoint_path, state, layout="compact")

    def read_checkpoint(self) -> dict[str, Any] | None:
        """The run's checkpoint
        (:func:`~dei_framework.runtime.files.run_files.read_checkpoint`): ``None`` when there is
        none.

        Raises:
            ConfigError: It is damaged or not of a checkpoint's shape.
        """
        return read_checkpoint(self.checkpoint_path)

    def write_round(self, node: str, round_index: int, data: Mapping[str, Any]) -> None:
        write_json_atomic(self.round_path(node, round_index), data, layout="records")

    def discard(self) -> None:
        """Removes a run that never started: the files a run writes, then every folder left
        empty, this one included. Anything else found in the directory is kept."""
        self._pending.clear()
        self.close()
        lock = held(self.path)
        if lock is not None:  # its lock file would keep the directory: a failed start leaves none
            lock.release(remove=True)
        for name in RUN_FILES:
            (self.path / name).unlink(missing_ok=True)
        nodes = self.path / run_layout.NODES_DIR
        for identity in nodes.glob(f"*/{run_layout.IDENTITY_FILE}"):
            identity.unlink()
        for folder in [*nodes.glob("*/"), nodes, self.path]:
            with contextlib.suppress(OSError):  # not empty (or already gone): keep it
                folder.rmdir()

    def write_summary(self, summary: RunSummary) -> None:
        write_json_atomic(self.summary_path, summary.to_json())


#: Run directories with lines pending, by file path: a reader of the file writes them first.
_WRITERS: weakref.WeakValueDictionary[str, RunDir] = weakref.WeakValueDictionary()


def _key(path: Path) -> str:
    return os.path.abspath(path)


def _flush_pending(path: Path) -> None:
    writer = _WRITERS.get(_key(path))
    if writer is not None:
        writer.flush()


@atexit.register
def _flush_all() -> None:
    """Pending lines of a run directory nobody closed reach their files at exit."""
    for writer in list(_WRITERS.values()):
        with contextlib.suppress(OSError, WriteError):
            writer.flush()
