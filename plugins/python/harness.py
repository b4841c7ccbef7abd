"""Calling a task's evaluator the way OpenEvolve does: ``evaluate(program_path)`` (or the
``evaluate_stage1/2/3`` cascade) in this process, its standard streams captured.

The sandbox (``executes_code``) puts this process in a forked child with its limits, so the
evaluator and the program it loads run in-process here: a crash, a loop or a memory hog ends
that child, not the run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import tempfile
import traceback
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
from dei_python import stand_in

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
        artifacts: Everything else it returned (``EvaluationResult.artifacts`` and the dict's
            values that are not numbers), and what a failed later stage of a cascade raised,
            as text.
        stage: The last stage run (0: no cascade).
        stopped: Why the cascade ended before its last stage (empty: it did not).
    """

    metrics: Mapping[str, float]
    artifacts: Mapping[str, str]
    stage: int = 0
    stopped: str = ""


def load_evaluator(path: Path) -> ModuleType:
    """Imports a task's evaluator from its file (its folder first on ``sys.path``, so that it
    can import modules beside it, as OpenEvolve lets it; ``openevolve.evaluation_result``
    from DEI's stand-in when OpenEvolve is not installed)."""
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
        with stand_in.importable():
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def run(
    module: ModuleType, program_path: str, *, cascade: bool, thresholds: Sequence[float]
) -> Result:
    """Runs the evaluator on the program file: ``evaluate``, or OpenEvolve's cascade.

    The cascade (on, and the evaluator has ``evaluate_stage1``) runs as OpenEvolve's does:
    stage 1; then, while the result passes the threshold of its stage (:func:`passes`; the
    n-th of ``thresholds``, and no stage follows where there is none), ``evaluate_stage2``
    and ``evaluate_stage3`` where defined, their numbers merged over the earlier ones' (an
    ``error`` number dropped). A program stopped by a threshold keeps the result it reached.
    ``evaluate`` is not called by a cascade. A later stage that raises ends the cascade with
    the earlier result, ``stageN_passed`` 0 and the exception as artifacts.

    Raises:
        InvalidProgram: The result is not a dict of values (or ``evaluate`` is missing).
        Exception: Whatever ``evaluate`` or stage 1 raised (OpenEvolve scores such a
            program 0; DEI makes it invalid with the reason).
    """
    with stand_in.importable():  # for an evaluator that imports openevolve when it runs
        return _run(module, program_path, cascade=cascade, thresholds=thresholds)


def _run(
    module: ModuleType, program_path: str, *, cascade: bool, thresholds: Sequence[float]
) -> Result:
    stages = [getattr(module, name, None) for name in STAGES]
    if not cascade or not callable(stages[0]):
        return _result(_call(module, "evaluate", program_path), 0)
    result = _result(stages[0](program_path), 1)
    for number in (2, 3):
        stage = stages[number - 1]
        if not callable(stage) or len(thresholds) < number - 1:
            return result
        threshold = thresholds[number - 2]
        if not passes(result.metrics, threshold):
            score = gate_score(result.metrics)
            shown = "none" if score is None else f"{score:.6g}"
            return attrs.evolve(
                result,
                stopped=f"stage {number - 1}'s score {shown} is below the threshold "
                f"{threshold:.6g}",
            )
        try:
            later = _result(stage(program_path), number)
        except Exception as exc:  # noqa: BLE001 - OpenEvolve keeps the earlier stages' result
            return _failed(result, number, exc)
        result = _merged(result, later)
    return result


def _merged(earlier: Result, later: Result) -> Result:
    metrics = {k: v for k, v in earlier.metrics.items() if k != "error"}
    metrics.update((k, v) for k, v in later.metrics.items() if k != "error")
    return Result(
        metrics=metrics, artifacts={**earlier.artifacts, **later.artifacts}, stage=later.stage
    )


def _failed(earlier: Result, number: int, exc: Exception) -> Result:
    """The earlier stages' result, marked with stage ``number``'s failure (OpenEvolve's keys)."""
    trace = "".join(traceback.format_exception(exc))[-ARTIFACT_CHARS:]
    return Result(
        metrics={**earlier.metrics, f"stage{number}_passed": 0.0},
        artifacts={
            **earlier.artifacts,
            f"stage{number}_stderr": f"{type(exc).__name__}: {exc}"[:ARTIFACT_CHARS],
            f"stage{number}_traceback": trace,
            "failure_stage": f"stage{number}",
        },
        stage=earlier.stage,
        stopped=f"stage {number} raised {type(exc).__name__}: {exc}"[:ARTIFACT_CHARS],
    )


def _call(module: ModuleType, name: str, program_path: str) -> Any:
    function = getattr(module, name, None)
    if not callable(function):
        raise InvalidProgram(f"the task's evaluator has no function {name}(program_path)")
    return function(program_path)


def _result(raw: Any, stage: int) -> Result:
    """An evaluator's answer (a dict, or OpenEvolve's ``EvaluationResult`` shape: ``metrics``
    and ``artifacts``) as plain values: numbers are metrics, anything else an artifact."""
    extra: Mapping[str, Any] = {}
    if not isinstance(raw, Mapping) and hasattr(raw, "metrics"):
        raw, extra = raw.metrics, getattr(raw, "artifacts", None) or {}
    elif isinstance(raw, Mapping) and isinstance(raw.get("artifacts"), Mapping):
        # A dict carrying its artifacts under "artifacts" (as some of OpenEvolve's examples
        # return them): each is an artifact of its own.
        extra = raw["artifacts"]
        raw = {key: value for key, value in raw.items() if key != "artifacts"}
    if not isinstance(raw, Mapping) or not isinstance(extra, Mapping):
        raise InvalidProgram(f"the evaluator returned {type(raw).__name__}, not a dict")
    metrics: dict[str, float] = {}
    artifacts: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, bool | int | float) or _is_numpy_number(value):
            metrics[str(key)] = float(value)
        else:
            artifacts[str(key)] = _text(value)
    artifacts.update((str(key), _text(value)) for key, value in extra.items())
    return Result(metrics=metrics, artifacts=artifacts, stage=stage)


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value)[:ARTIFACT_CHARS]


def _is_numpy_number(value: Any) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.number)


def gate_score(metrics: Mapping[str, float]) -> float | None:
    """The score a cascade threshold is compared with, as OpenEvolve compares it:
    ``combined_score``, or else the mean of the numbers other than ``error`` (``None``
    without any)."""
    if "combined_score" in metrics:
        return metrics["combined_score"]
    values = [value for key, value in metrics.items() if key != "error"]
    return sum(values) / len(values) if values else None


def passes(metrics: Mapping[str, float], threshold: float) -> bool:
    """Whether a stage's result goes on to the next stage (its score at least ``threshold``)."""
    score = gate_score(metrics)
    return score is not None and score >= threshold


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
