"""The ``python`` domain: an OpenEvolve task folder, evolved as it is.

A program is the task's initial program with its evolve block replaced (the canonical text is
the whole program, so an elite is a runnable file). :meth:`PythonDomain.parse` takes the block
from a reply and checks the assembled program's syntax, never running it;
:meth:`PythonDomain.evaluate` writes the program to a file and calls the task's
``evaluate(program_path)`` in this process, which the sandbox makes a forked child with the
run's limits (``executes_code``). The result's ``combined_score`` is the fitness; the features
the task names are the descriptor; the rest of the result and what the evaluation printed go to
``Evaluation.info``, and an evaluation that fails carries its reason and the end of its
standard error to the next mutation of the lineage.

The objective is static: the initial program is a seed program (``seed_programs``, not an
opponent; the ``continual`` lifecycle), opponents and seeds are ignored (an OpenEvolve
evaluator takes neither).
"""

from __future__ import annotations

import ast
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

import attrs
from dei_python import features, harness, prompt
from dei_python.blocks import Scaffold, check_syntax, reply_block, split
from dei_python.diffs import apply_edits, is_diff
from dei_python.features import COMPLEXITY
from dei_python.task import DEFAULT_TASK, DEFAULT_TIMEOUT, Task, load_task, warn_ignored

from dei_framework.contract.descriptors import AxisSpec, LearnedAxis, UniformAxis
from dei_framework.contract.domain import Domain, Evaluation, Program, PromptNeeds
from dei_framework.contract.errors import ConfigError, InvalidProgram
from dei_framework.contract.records import Candidate, Message

#: Every domain option and its default (``--domain-option KEY=VALUE``; ``--task DIR``).
DEFAULT_OPTIONS: Mapping[str, Any] = {
    "task": "",  # the task folder; empty: the bundled bin-packing task
    # Empty: found in the folder (dei_python.task.load_task says how).
    "program": "",
    "evaluator": "",
    "config": "",
    "axes": "",  # name:low:high:bins,... (fixed bounds); empty: config.yaml's, bounds learned
    # The QD-score offset: below every score of most tasks (scores in [0, 1], or minus a
    # fraction as bin packing's); a task scoring lower sets its own.
    "fitness_floor": -1.0,
}
#: The system message when config.yaml gives none.
DEFAULT_SYSTEM = (
    "You are an expert Python programmer improving one function of a program "
    "scored by an automatic evaluator."
)
#: Characters of the end of standard error a failed evaluation's reason carries.
FEEDBACK_STDERR = 600


@attrs.frozen(kw_only=True)
class Feature:
    """One descriptor axis: a feature of the evaluator's result (or ``complexity``).

    Attributes:
        name: The feature's name.
        bins: Bins along it.
        low: Its fixed lower bound; ``None`` (with ``high``): the grid learns the bounds
            from the values seen (:class:`~dei_framework.contract.descriptors.LearnedAxis`).
        high: Its fixed upper bound, or ``None``.
    """

    name: str
    bins: int
    low: float | None = None
    high: float | None = None

    def axis(self) -> UniformAxis | LearnedAxis:
        """The descriptor axis: fixed bounds when given, else learned."""
        if self.low is None or self.high is None:
            return LearnedAxis(self.name, self.bins)
        return UniformAxis(self.name, self.low, self.high, self.bins)


def parse_axes(text: str) -> tuple[Feature, ...]:
    """``name:low:high:bins,...`` as features.

    Raises:
        ConfigError: A malformed entry, bounds in the wrong order or bins below 1.
    """
    features = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        parts = entry.split(":")
        try:
            name, low, high, bins = parts[0], float(parts[1]), float(parts[2]), int(parts[3])
            if len(parts) != 4 or not name:
                raise ValueError
        except (IndexError, ValueError):
            raise ConfigError(f"python: axes entry {entry!r}: write NAME:LOW:HIGH:BINS") from None
        if not low < high or bins < 1:
            raise ConfigError(
                f"python: axes entry {entry!r}: LOW must be below HIGH and BINS at least 1"
            )
        features.append(Feature(name=name, low=low, high=high, bins=bins))
    if len({feature.name for feature in features}) != len(features):
        raise ConfigError(f"python: axes {text!r} names a feature twice")
    return tuple(features)


class PythonDomain(Domain):
    """An OpenEvolve task folder (see the module docstring).

    Args:
        options: See :data:`DEFAULT_OPTIONS`.
    """

    name = "python"
    lifecycle = "continual"
    executes_code = True
    # evaluate(program_path) receives no seed: the task's evaluator is deterministic or brings
    # its own, so common ground scores each program once.
    deterministic = True
    eval_timeout = DEFAULT_TIMEOUT

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        options = dict(options or {})
        unknown = sorted(set(options) - set(DEFAULT_OPTIONS))
        if unknown:
            raise ConfigError(
                f"python: unknown option(s) {', '.join(unknown)}; known: "
                f"{', '.join(sorted(DEFAULT_OPTIONS))}"
            )
        self._options = {**DEFAULT_OPTIONS, **options}
        folder = str(self._options["task"] or DEFAULT_TASK)
        self.task: Task = load_task(
            folder,
            program=str(self._options["program"]),
            evaluator=str(self._options["evaluator"]),
            config=str(self._options["config"]),
        )
        warn_ignored(self.task)
        _check_evaluator(self.task)
        try:
            self.scaffold: Scaffold = split(self.task.initial_program)
        except InvalidProgram as exc:
            raise ConfigError(f"python: {self.task.program_path}: {exc}") from None
        try:
            self.fitness_floor = float(self._options["fitness_floor"])
        except (TypeError, ValueError):
            raise ConfigError("python: fitness_floor must be a number") from None
        config = self.task.config
        if config.timeout is not None:
            self.eval_timeout = config.timeout
        self.features = self._features(str(self._options["axes"] or ""))
        self.default_axes = tuple(feature.name for feature in self.features)
        # Evaluations in another process (a sandbox child, a worker) capture the streams
        # and work in a scratch folder; in this one they would take the terminal's.
        self._home_pid = os.getpid()
        self._module: ModuleType | None = None
        try:
            self.initial_text = self.parse(self.task.initial_program).text
        except InvalidProgram as exc:  # the task's own program: the user's to fix, not a lineage's
            raise ConfigError(f"python: {self.task.program_path}: {exc}") from None
        # What the prompt shows besides the parent (config.yaml's prompt section; evaluation
        # info is kept for the metrics of the parent and its ancestors even without artifacts).
        self.prompt_needs = PromptNeeds(
            top=config.top_programs,
            diverse=config.diverse_programs,
            info=True,
            history=prompt.HISTORY,
        )
        # The reference set of the computed diversity (dei_python.features): the seed.
        self._references = (features.tokens(self.scaffold.block),)

    def _features(self, axes: str) -> tuple[Feature, ...]:
        """The ``axes`` option's features (fixed bounds), else config.yaml's (learned, as
        OpenEvolve learns them: a feature's range is seldom known before the run)."""
        if axes:
            return parse_axes(axes)
        config = self.task.config
        return tuple(Feature(name=name, bins=config.bins[name]) for name in config.features)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_module"] = None  # a module does not pickle; each process imports its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        # Imported once where the domain lands (a sandbox's warm process, a worker), before
        # any child is forked from it, instead of once per candidate; an evaluator that
        # fails to import says so at the first evaluation instead.
        try:
            self._evaluator()
        except Exception:  # noqa: BLE001 - reported by evaluate
            self._module = None

    def options(self) -> dict[str, Any]:
        return {**self._options, "task": str(self.task.folder)}

    # -- programs ------------------------------------------------------------------------

    def parse(self, reply: str) -> Program:
        """The program a reply makes: the scaffold with the reply's block (never run).

        Raises:
            InvalidProgram: No usable block, or a syntax error (its program and block lines).
        """
        block = reply_block(reply, self.scaffold)
        text = self.scaffold.join(block)
        check_syntax(text, attrs.evolve(self.scaffold, block=block))
        return Program(text=text)

    def resolve_reply(self, reply: str, *, parent: Candidate | None) -> str:
        """A reply written as SEARCH/REPLACE edits, applied to the parent's block (the
        initial program's for a new program): the whole program, for :meth:`parse`. Any other
        reply is returned as it is.

        Raises:
            InvalidProgram: An edit that does not apply, with why (:mod:`dei_python.diffs`).
        """
        if not is_diff(reply):
            return reply
        base = parent.text if parent is not None else self.initial_text
        try:
            scaffold = split(base)
        except InvalidProgram:  # not one of this task's programs: there is nothing to edit
            raise InvalidProgram(
                "the parent has no single evolve block to apply edits to"
            ) from None
        return self.scaffold.join(apply_edits(reply, scaffold))

    def seed_programs(self) -> Sequence[str]:
        """The task's initial program: a seed, evaluated once and offered to the archive (not
        an opponent: the objective is static, and common ground needs no reference set)."""
        return (self.initial_text,)

    def evaluate(self, program: Program, opponents: Sequence[Program], *, seed: int) -> Evaluation:
        """The task's evaluator on the program, written to ``program.py`` in a fresh folder."""
        module = self._evaluator()
        away = os.getpid() != self._home_pid
        with tempfile.TemporaryDirectory(prefix="dei-python-") as folder:
            path = os.path.join(folder, "program.py")
            with open(path, "w", encoding="utf-8") as file:
                file.write(program.text)
            error: str | None = None
            result: harness.Result | None = None
            cwd = os.getcwd() if away else None
            with harness.captured(away) as streams:
                try:
                    if cwd is not None:  # what the evaluator writes lands in the scratch
                        os.chdir(folder)
                    result = harness.run(
                        module,
                        path,
                        cascade=self.task.config.cascade,
                        thresholds=self.task.config.thresholds,
                    )
                except InvalidProgram as exc:
                    error = str(exc)
                except MemoryError:  # the sandbox reports it as the memory limit's doing
                    raise
                except (Exception, SystemExit) as exc:  # the program's doing, or the evaluator's
                    error = self._describe(exc, path, program.text)
                finally:
                    if cwd is not None:
                        os.chdir(cwd)
        if error is not None or result is None:
            tail = streams.stderr.strip()[-FEEDBACK_STDERR:]
            raise InvalidProgram(f"{error}" + (f"\nstderr (end):\n{tail}" if tail else ""))
        return self._evaluation(program, result, streams)

    def _describe(self, exc: BaseException, path: str, text: str) -> str:
        line = harness.program_line(exc, path)
        what = f"{type(exc).__name__}: {exc}"
        if line is None:
            return f"the evaluation raised {what}"
        where = f"line {line}"
        block_line = line - self.scaffold.head_lines
        if self.scaffold.head and 1 <= block_line <= prompt.block_of(text).count("\n"):
            where += f" (line {block_line} of the evolve block)"
        return f"{where}: {what}"

    def _evaluation(
        self, program: Program, result: harness.Result, streams: harness.Streams
    ) -> Evaluation:
        metrics = result.metrics
        names = [feature.name for feature in self.features]
        score = features.fitness(metrics, names)
        if not math.isfinite(score):
            raise InvalidProgram(
                f"the evaluator's combined_score is {score!r}, not a finite number"
            )
        try:
            descriptor = {name: self._feature(name, program, metrics, score) for name in names}
        except InvalidProgram as exc:
            if not result.stopped:
                raise
            raise InvalidProgram(f"the cascade stopped ({result.stopped}) and {exc}") from None
        info: dict[str, Any] = {
            "metrics": {
                key: value if math.isfinite(value) else None for key, value in metrics.items()
            }
        }
        if result.artifacts:
            info["artifacts"] = dict(result.artifacts)
        if result.stage:
            info["stage"] = result.stage
        if result.stopped:
            info["cascade_stopped"] = result.stopped
        if streams.stdout:
            info["stdout"] = streams.stdout
        if streams.stderr:
            info["stderr"] = streams.stderr
        return Evaluation(fitness=score, descriptor=descriptor, info=info)

    def _feature(
        self, name: str, program: Program, metrics: Mapping[str, float], score: float
    ) -> float:
        """A feature's value: the evaluator's, else one DEI computes (dei_python.features)."""
        if name in metrics:
            value = metrics[name]
        elif name == COMPLEXITY:
            value = float(len(prompt.block_of(program.text)))
        elif name == features.DIVERSITY:
            value = features.diversity(prompt.block_of(program.text), self._references)
        elif name == features.SCORE:
            value = score
        else:
            raise InvalidProgram(
                f"the evaluator returned no feature {name!r} (it returned "
                f"{', '.join(sorted(metrics)) or 'no number'}; DEI computes only "
                f"{', '.join(features.COMPUTED)})"
            )
        if not math.isfinite(value):
            raise InvalidProgram(f"the evaluator's feature {name!r} is {value!r}")
        return value

    def _evaluator(self) -> ModuleType:
        if self._module is None:
            self._module = harness.load_evaluator(self.task.evaluator_path)
        return self._module

    def descriptor_axes(self) -> Sequence[AxisSpec]:
        return [AxisSpec(name=f.name, axis=f.axis()) for f in self.features]

    # -- prompts -------------------------------------------------------------------------

    def messages(
        self,
        kind: str,
        *,
        parent: Candidate | None = None,
        others: Sequence[Candidate] = (),
        feedback: str | None = None,
        inspirations: Sequence[Candidate] = (),
    ) -> list[Message]:
        """The program, its block marked as the only part to change, what its evaluation
        returned, its ancestors, and elites for ideas (:mod:`dei_python.prompt`)."""
        config = self.task.config
        return prompt.messages(
            system=config.system_message or DEFAULT_SYSTEM,
            shown=parent.text if parent is not None else self.initial_text,
            parent=parent,
            others=others,
            feedback=feedback,
            inspirations=inspirations,
            top=config.top_programs,
            artifacts=config.artifacts,
            artifact_bytes=config.artifact_bytes,
            diffs=config.diffs,
        )


def _check_evaluator(task: Task) -> None:
    """Refuses an evaluator without ``evaluate`` (read, not run: nothing is imported here)."""
    try:
        tree = ast.parse(task.evaluator_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
        raise ConfigError(
            f"python: cannot read the evaluator {task.evaluator_path}: {exc}"
        ) from None
    names = {
        node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    names |= {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    names |= {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    if "evaluate" not in names and "evaluate_stage1" not in names:
        raise ConfigError(
            f"python: the evaluator {task.evaluator_path} defines no evaluate(program_path)"
        )
