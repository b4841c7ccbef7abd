"""An OpenEvolve task folder, read as it is: its initial program, its evaluator and an
optional config file (``initial_program.py``, ``evaluator.py`` and ``config.yaml``, or the
files :func:`load_task` finds in their place).

Only the keys of the config file that map onto DEI are read (the system message and what the
prompt shows, the feature dimensions and their bins, the evaluator's timeout and cascade,
``diff_based_evolution``: what form of reply the prompt asks for; the models, which
:mod:`dei_python.models` makes the nodes of); every other key is named in
one warning line, with the DEI flag that does its job where there is one, so that nothing is
ignored silently. Reading a task never runs its code.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from dei_framework.contract.errors import ConfigError

#: The bundled tasks, in OpenEvolve's layout.
TASKS = Path(__file__).resolve().parent / "tasks"
#: The task a run gets when it names none.
DEFAULT_TASK = TASKS / "bin_packing"
#: Seconds per evaluation when ``config.yaml`` gives no ``evaluator.timeout``.
DEFAULT_TIMEOUT = 30.0
#: Bins per feature when ``config.yaml`` gives no ``database.feature_bins``.
DEFAULT_BINS = 10
#: OpenEvolve's grid when ``database.feature_dimensions`` is absent (both computed by DEI,
#: dei_python.features).
DEFAULT_FEATURES = ("complexity", "diversity")
#: OpenEvolve's cascade thresholds when ``evaluator.cascade_thresholds`` is absent.
DEFAULT_THRESHOLDS = (0.5, 0.75, 0.9)

#: OpenEvolve's prompt defaults: top programs, diverse programs, artifacts, their bytes.
DEFAULT_TOP = 3
DEFAULT_DIVERSE = 2
DEFAULT_ARTIFACT_BYTES = 20 * 1024
#: The ``llm`` keys that make the run's nodes (:mod:`dei_python.models`).
LLM_KEYS = (
    "models",
    "primary_model",
    "primary_model_weight",
    "secondary_model",
    "secondary_model_weight",
    "api_base",
    "api_key",
    "temperature",
    "max_tokens",
    "timeout",
    "retries",
)

#: Keys of config.yaml that have a DEI counterpart outside the domain: the hint in their
#: warning line.
_HINTS: Mapping[str, str] = {
    "max_iterations": "the call budget is --budget",
    "random_seed": "the run seed is --seed",
    "checkpoint_interval": "checkpoint_seconds in a --config file",
    "llm.top_p": "params in a --config file's [operator_options]",
    "llm.evaluator_models": "DEI's evaluator is the task's evaluate() alone",
    "database.num_islands": "islands are nodes: --nodes",
    "database.migration_interval": "a round is a migration interval: --rounds",
    "database.population_size": "the archive is the grid; its size is the axes' bins",
    # OpenEvolve's knobs for sampling the best programs: DEI's fitness-aware parent choice.
    "database.exploitation_ratio": "parents that exploit: --selector tournament",
    "database.elite_selection_ratio": "parents that exploit: --selector tournament",
    "evaluator.parallel_evaluations": "use --eval-workers",
}
#: The keys read, by section (a section's other keys are named one by one).
_READ: Mapping[str, tuple[str, ...]] = {
    "prompt": (
        "system_message",
        "num_top_programs",
        "num_diverse_programs",
        "include_artifacts",
        "max_artifact_bytes",
    ),
    "evaluator": ("timeout", "cascade_evaluation", "cascade_thresholds"),
    "database": ("feature_dimensions", "feature_bins"),
    # Read by dei_python.models when no --operator is given (the nodes of the run).
    "llm": LLM_KEYS,
}
#: Warnings already printed in this process (a domain is built more than once per run).
_WARNED: set[tuple[str, str]] = set()


@attrs.frozen(kw_only=True)
class TaskConfig:
    """What DEI reads from a task's ``config.yaml``.

    Attributes:
        system_message: The prompt's system message (``prompt.system_message``), or empty.
        features: Feature names (``database.feature_dimensions``), in order; OpenEvolve's
            default, :data:`DEFAULT_FEATURES`, when the key is absent.
        bins: Bins per feature (``database.feature_bins``: one number or one per feature).
        timeout: Seconds per evaluation (``evaluator.timeout``), or ``None``.
        cascade: Whether ``evaluate_stage1`` (when the evaluator has it) gates the rest
            (``evaluator.cascade_evaluation``, default true as in OpenEvolve).
        thresholds: Score each stage must reach to go on (``evaluator.cascade_thresholds``).
        diffs: Whether the prompt asks for SEARCH/REPLACE edits instead of the whole block
            (``diff_based_evolution``; replies in either form are accepted all the same).
        top_programs: Best elites by fitness the prompt shows (``prompt.num_top_programs``).
        diverse_programs: Elites of other cells the prompt shows
            (``prompt.num_diverse_programs``).
        artifacts: Whether the prompt shows the parent's artifacts, what its evaluation
            printed (``prompt.include_artifacts``).
        artifact_bytes: Bytes of artifacts shown at most (``prompt.max_artifact_bytes``).
        llm: The ``llm`` section as written (:mod:`dei_python.models` makes the nodes of it;
            it is checked only when it does).
        ignored: Ignored keys, each with why (``section.key``, the reason).
    """

    system_message: str = ""
    features: tuple[str, ...] = DEFAULT_FEATURES
    bins: Mapping[str, int] = attrs.field(
        factory=lambda: dict.fromkeys(DEFAULT_FEATURES, DEFAULT_BINS)
    )
    timeout: float | None = None
    cascade: bool = True
    thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS
    diffs: bool = False
    top_programs: int = DEFAULT_TOP
    diverse_programs: int = DEFAULT_DIVERSE
    artifacts: bool = True
    artifact_bytes: int = DEFAULT_ARTIFACT_BYTES
    llm: Mapping[str, Any] = attrs.field(factory=dict)
    ignored: tuple[tuple[str, str], ...] = ()


@attrs.frozen(kw_only=True)
class Task:
    """A task folder.

    Attributes:
        folder: The folder, resolved.
        program_path: The initial program (found as :func:`load_task` says).
        evaluator_path: The evaluator (likewise).
        initial_program: The initial program's text.
        config: What the config file says, or the defaults without one.
        config_path: The config file read, or ``None``.
        unread_configs: Config files found but not read, several being there to choose from
            (named in a warning line).
    """

    folder: Path
    program_path: Path
    evaluator_path: Path
    initial_program: str
    config: TaskConfig
    config_path: Path | None = None
    unread_configs: tuple[Path, ...] = ()


def load_task(
    folder: str | Path = DEFAULT_TASK, *, program: str = "", evaluator: str = "", config: str = ""
) -> Task:
    """Reads a task folder; ``program``, ``evaluator`` and ``config`` name the files (in the
    folder, or paths elsewhere), each found in the folder when empty, as OpenEvolve's
    examples name them (their README lines pass these paths to ``openevolve-run.py``):

    - the initial program: ``initial_program.py``, else the one ``*program*.py`` file (not
      ``best_program*``; ``init_program.py``, say);
    - the evaluator: ``evaluator.py``, else the one ``evaluat*.py`` file;
    - the config: ``config.yaml`` or ``config.yml``, else the one ``config*.yaml`` /
      ``config*.yml`` file or file of ``configs/``; none when there are several (a warning
      names them) or none.

    Raises:
        ConfigError: The folder or a file is missing or ambiguous, the initial program is not
            Python, or the config is not YAML or has a mapped key of the wrong type.
    """
    root = Path(folder).expanduser().resolve()
    if not root.is_dir():
        raise ConfigError(f"python: task folder {str(folder)!r} does not exist")
    program_path = _given(root, program, "initial program") or _program(root)
    evaluator_path = _given(root, evaluator, "evaluator") or _evaluator(root)
    config_path, unread = (_given(root, config, "config"), ()) if config else _config(root)
    try:
        text = program_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"python: cannot read {str(program_path)!r}: {exc}") from None
    return Task(
        folder=root,
        program_path=program_path,
        evaluator_path=evaluator_path,
        initial_program=text,
        config=read_config(config_path) if config_path is not None else TaskConfig(),
        config_path=config_path,
        unread_configs=unread,
    )


def _given(root: Path, name: str, what: str) -> Path | None:
    if not name:
        return None
    path = (root / name).resolve()
    if not path.is_file():
        raise ConfigError(f"python: the task's {what} {str(path)!r} does not exist")
    return path


def _one(root: Path, what: str, option: str, preferred: str, found: list[Path]) -> Path:
    """``preferred`` in the folder, else the one file found; a clear error otherwise."""
    if (root / preferred).is_file():
        return (root / preferred).resolve()
    if len(found) == 1:
        return found[0].resolve()
    which = ", ".join(path.name for path in found) if found else f"no {preferred}"
    raise ConfigError(
        f"python: cannot tell the task's {what} in {str(root)!r} ({which}): "
        f"name it with --domain-option {option}=FILE"
    )


def _program(root: Path) -> Path:
    found = [
        path
        for path in sorted(root.glob("*program*.py"))
        if path.is_file() and not path.name.startswith("best_program")
    ]
    other = sorted(root.glob("initial_program.*"))
    if not found and (root / "initial_program").is_dir():
        # OpenEvolve's multi-file examples (tsp_tour_minimization: C++ and Python files) keep
        # the program as a folder that a script of their own joins into one text.
        raise ConfigError(
            f"python: the task's initial program {str(root / 'initial_program')!r} is a folder "
            "of several files: the python domain evolves one Python file; name it with "
            "--domain-option program=FILE"
        )
    if not found and not (root / "initial_program.py").is_file() and other:
        raise ConfigError(
            f"python: the task's initial program {other[0].name} is not Python: the python "
            "domain evolves Python programs"
        )
    return _one(root, "initial program", "program", "initial_program.py", found)


def _evaluator(root: Path) -> Path:
    found = [path for path in sorted(root.glob("evaluat*.py")) if path.is_file()]
    return _one(root, "evaluator", "evaluator", "evaluator.py", found)


def _config(root: Path) -> tuple[Path | None, tuple[Path, ...]]:
    for name in ("config.yaml", "config.yml"):
        if (root / name).is_file():
            return (root / name).resolve(), ()
    found = [
        path
        for pattern in ("config*.yaml", "config*.yml", "configs/*.yaml", "configs/*.yml")
        for path in sorted(root.glob(pattern))
        if path.is_file()
    ]
    if len(found) == 1:
        return found[0].resolve(), ()
    return None, tuple(found)


def read_config(path: Path) -> TaskConfig:
    """The parts of an OpenEvolve ``config.yaml`` that map onto DEI.

    Raises:
        ConfigError: Not YAML, not a mapping, or a mapped key of the wrong type.
    """
    import yaml  # PyYAML comes with litellm, a dependency of the framework

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"python: cannot read {str(path)!r}: {exc}") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"python: {str(path)!r} is not a mapping of keys")
    ignored: list[tuple[str, str]] = []
    for key, value in data.items():
        if key in _READ and isinstance(value, Mapping):
            ignored += [
                (f"{key}.{sub}", _HINTS.get(f"{key}.{sub}", ""))
                for sub in value
                if sub not in _READ[key]
            ]
        elif key not in _READ and key != "diff_based_evolution":
            ignored.append((str(key), _HINTS.get(str(key), "")))
    prompt = _section(data, "prompt", path)
    evaluator = _section(data, "evaluator", path)
    database = _section(data, "database", path)
    system = prompt.get("system_message") or ""
    if not isinstance(system, str):
        raise ConfigError(f"python: {path}: prompt.system_message must be text")
    features = database.get("feature_dimensions") or DEFAULT_FEATURES
    if (
        isinstance(features, str)
        or not isinstance(features, Sequence)
        or not all(isinstance(name, str) for name in features)
    ):
        raise ConfigError(f"python: {path}: database.feature_dimensions must be a list of names")
    bins = _bins(database.get("feature_bins"), tuple(features), path)
    timeout = evaluator.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise ConfigError(f"python: {path}: evaluator.timeout must be a number of seconds > 0")
    thresholds = evaluator.get("cascade_thresholds", DEFAULT_THRESHOLDS)
    if not isinstance(thresholds, Sequence):
        thresholds = (thresholds,)  # one number: the only threshold
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in thresholds)
    if not isinstance(thresholds, Sequence) or not numbers:
        raise ConfigError(f"python: {path}: evaluator.cascade_thresholds must be numbers")
    llm = _section(data, "llm", path)
    return TaskConfig(
        top_programs=_count(prompt, "num_top_programs", DEFAULT_TOP, path),
        diverse_programs=_count(prompt, "num_diverse_programs", DEFAULT_DIVERSE, path),
        artifacts=bool(prompt.get("include_artifacts", True)),
        artifact_bytes=_count(prompt, "max_artifact_bytes", DEFAULT_ARTIFACT_BYTES, path),
        llm=dict(llm),
        system_message=system,
        features=tuple(features),
        bins=bins,
        timeout=None if timeout is None else float(timeout),
        cascade=bool(evaluator.get("cascade_evaluation", True)),
        thresholds=tuple(float(v) for v in thresholds),
        diffs=bool(data.get("diff_based_evolution", False)),
        ignored=tuple(ignored),
    )


def _count(section: Mapping[str, Any], key: str, default: int, path: Path) -> int:
    """``prompt.<key>``: a whole number >= 0 (``default`` when absent)."""
    value = section.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"python: {path}: prompt.{key} must be a whole number >= 0")
    return value


def _section(data: Mapping[str, Any], name: str, path: Path) -> Mapping[str, Any]:
    value = data.get(name) or {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"python: {path}: {name} must be a mapping")
    return value


def _bins(value: Any, features: tuple[str, ...], path: Path) -> dict[str, int]:
    if value is None:
        return dict.fromkeys(features, DEFAULT_BINS)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return dict.fromkeys(features, value)
    if isinstance(value, Mapping) and all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value.values()
    ):
        return {name: int(value.get(name, DEFAULT_BINS)) for name in features}
    raise ConfigError(
        f"python: {path}: database.feature_bins must be a positive whole number or one per feature"
    )


def warn_ignored(task: Task) -> None:
    """Prints one line per ignored config key (and one for config files left unread), once
    per process and task."""
    read = f"{task.folder.name}/{task.config_path.name}" if task.config_path else ""
    lines = [
        (key, f"{read}: {key} is ignored" + (f" ({hint})" if hint else ""))
        for key, hint in task.config.ignored
    ]
    if task.unread_configs:
        names = ", ".join(str(path.relative_to(task.folder)) for path in task.unread_configs)
        lines.append(
            (
                "",
                f"{task.folder.name}: none of {names} is read "
                "(choose one with --domain-option config=FILE)",
            )
        )
    for key, line in lines:
        if (str(task.folder), key) in _WARNED:
            continue
        _WARNED.add((str(task.folder), key))
        print(f"dei-python: warning: {line}", file=sys.stderr)
