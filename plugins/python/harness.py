"""Calling a task's evaluator the way OpenEvolve does: ``evaluate(program_path)`` (or the
``evaluate_stage1/2/3`` cascade) in this process, its standard streams captured.

The sandbox (``executes_code``) puts this process in a forked child with its limits, so the
evaluator and the program it loads run in-process here: a crash, a loop or a memory hog ends
that child, not the run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import sys
import tempfile
import traceback
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs

from dei_framework.contract.errors import InvalidProgram

#: Characters of each captured stream kept (the end: where errors are).
STREAM_TAIL = 2000
#: Characters of each non-numeric value of the evaluator's result kept.
ARTIFACT_CHARS = 2000
#: The stages of a cascade, in order.
STAGES = ("evaluate_stage1", "evaluate_stage2", "evaluate_stage3")


@attrs.frozen(kw_only=True)
class Result:
    """What an evaluator said about one program.

    Attributes:
        metrics: Numeric values by name (``combined_score`` among them where given).
        artifacts: Everything else it returned, as text.
        stage: The last stage run (0: no cascade).
    """

    metrics: Mapping[str, float]
    artifacts: Mapping[str, str]
    stage: int = 0


def load_evaluator(path: Path) -> ModuleType:
    """Imports a task's evaluator from its file (its folder first on ``sys.path``, so that it
    can import modules beside it, as OpenEvolve lets it)."""
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = f"dei_python_evaluator_{abs(hash(str(path))):x}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling inside it look their module up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def run(
    module: ModuleType, program_path: str, *, cascade: bool, thresholds: Sequence[float]
) -> Result:
    """Runs the evaluator on the program file (the cascade where it has one).

    Stage 1 runs first; a result whose score is below the first threshold stops there, and
    the program is invalid with that reason. Then ``evaluate_stage2`` and ``evaluate_stage3``
    run where defined, each gated by the next threshold; an evaluator with no stage after the
    first ends with ``evaluate``. Later stages' values override earlier ones'.

    Raises:
        InvalidProgram: The cascade stopped, or the result is not a dict of values.
        Exception: Whatever the evaluator raised.
    """
    stages = [getattr(module, name, None) for name in STAGES]
    if not cascade or stages[0] is None:
        return _result(_call(module, "evaluate", program_path), 0)
    metrics: dict[str, float] = {}
    artifacts: dict[str, str] = {}
    plan = [(index + 1, stage) for index, stage in enumerate(stages) if stage is not None]
    if len(plan) == 1:
        plan.append((2, None))  # the final stage: evaluate
    for position, (number, stage) in enumerate(plan):
        raw = stage(program_path) if stage is not None else _call(module, "evaluate", program_path)
        result = _result(raw, number)
        metrics.update(result.metrics)
        artifacts.update(result.artifacts)
        if position == len(plan) - 1:
            break
        threshold = thresholds[min(position, len(thresholds) - 1)] if thresholds else None
        score = score_of(result.metrics)
        if threshold is not None and score < threshold:
            raise InvalidProgram(
                f"stopped at cascade stage {number}: score {score:.6g} "
                f"is below the threshold {threshold:.6g}"
            )
    return Result(metrics=metrics, artifacts=artifacts, stage=plan[-1][0])


def _call(module: ModuleType, name: str, program_path: str) -> Any:
    function = getattr(module, name, None)
    if not callable(function):
        raise InvalidProgram(f"the task's evaluator has no function {name}(program_path)")
    return function(program_path)


def _result(raw: Any, stage: int) -> Result:
    """An evaluator's answer (a dict, or OpenEvolve's ``EvaluationResult`` shape: ``metrics``
    and ``artifacts``) as plain values."""
    extra: Mapping[str, Any] = {}
    if not isinstance(raw, Mapping) and hasattr(raw, "metrics"):
        raw, extra = raw.metrics, getattr(raw, "artifacts", None) or {}
    if not isinstance(raw, Mapping):
        raise InvalidProgram(f"the evaluator returned {type(raw).__name__}, not a dict")
    metrics: dict[str, float] = {}
    artifacts: dict[str, str] = {}
    for key, value in [*raw.items(), *extra.items()]:
        if isinstance(value, bool):
            metrics[str(key)] = float(value)
        elif isinstance(value, int | float) or _is_numpy_number(value):
            metrics[str(key)] = float(value)
        else:
            artifacts[str(key)] = str(value)[:ARTIFACT_CHARS]
    return Result(metrics=metrics, artifacts=artifacts, stage=stage)


def _is_numpy_number(value: Any) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.number)


def score_of(metrics: Mapping[str, float]) -> float:
    """The fitness: ``combined_score``, or (as OpenEvolve does without one) the mean of the
    numeric values."""
    if "combined_score" in metrics:
        return metrics["combined_score"]
    values = list(metrics.values())
    return sum(values) / len(values) if values else math.nan


def program_line(exc: BaseException, program_path: str) -> int | None:
    """The line of the program file where ``exc`` was raised (its innermost frame there)."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == os.path.abspath(program_path):
            line = frame.lineno
    if line is None and isinstance(exc, SyntaxError) and exc.filename == program_path:
        line = exc.lineno
    return line


@attrs.define
class Streams:
    """The captured standard output and error (their tails), once the capture has ended."""

    stdout: str = ""
    stderr: str = ""


@contextlib.contextmanager
def captured(enabled: bool) -> Iterator[Streams]:
    """Sends file descriptors 1 and 2 to temporary files while the block runs (what the
    evaluator and the program print, from Python or from C), and keeps their tails.

    Disabled, it captures nothing: the descriptors belong to the process, and in the run's
    own process (``--eval-workers 0 --sandbox none``) they are the terminal's.
    """
    streams = Streams()
    if not enabled:
        yield streams
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    files = [tempfile.TemporaryFile(), tempfile.TemporaryFile()]
    saved = [os.dup(1), os.dup(2)]
    # Python-level streams too: sys.stdout may have been replaced by an object that does not
    # write to descriptor 1 (a test runner's capture, say).
    python_streams = sys.stdout, sys.stderr
    try:
        os.dup2(files[0].fileno(), 1)
        os.dup2(files[1].fileno(), 2)
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)
        yield streams
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
                if stream not in python_streams:
                    stream.close()  # the wrapper only: closefd=False keeps the descriptor
        sys.stdout, sys.stderr = python_streams
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        tails = []
        for file, fd in zip(files, saved, strict=True):
            os.close(fd)
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - STREAM_TAIL * 4))
            tails.append(file.read().decode("utf-8", "replace")[-STREAM_TAIL:])
            file.close()
        streams.stdout, streams.stderr = tails
