"""The nodes an OpenEvolve task names: one node per model of ``config.yaml``'s ``llm``
section, for a run given no ``--operator`` (the ``dei_default_nodes`` hook).

OpenEvolve sends every model OpenAI's chat protocol at ``api_base``
(``https://api.openai.com/v1`` unless the config says otherwise), so a model ``NAME``
becomes the node operator ``openai/NAME`` (litellm's OpenAI-compatible route: the name goes to
the server unchanged) with the model's ``api_base``, else the section's. A key written
``${VAR}`` becomes ``api_key_env = VAR``: the node reads the variable, and the key itself is
never written into the run's configuration. A key written out in the file is not copied
either (one warning line): the node reads the provider's variable (``OPENAI_API_KEY``).

What is read, per model or from the ``llm`` section for every model: ``temperature``,
``max_tokens``, ``timeout``, ``retries`` (DEI's ``max_retries``). The legacy
``primary_model`` / ``secondary_model`` (with ``*_weight``) make the list when ``models`` is
absent. A model of weight 0 is left out (OpenEvolve never calls it), in one line.

OpenEvolve draws the model of each call by weight; DEI gives each model a node and the nodes
equal shares of the budget (or what ``--allocation`` decides), so the weights do not set how
often each model is called: a known deviation, named in docs/evolving-python.md.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from dei_python.task import DEFAULT_TASK, LLM_KEYS, Task, load_task

from dei_framework.contract.default_nodes import DefaultNodes
from dei_framework.contract.errors import ConfigError

#: A key written as a reference to an environment variable (OpenEvolve resolves these).
_ENV_REFERENCE = re.compile(r"^\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}$")
#: Per-model and section keys copied into a node's options, by their DEI name.
_NUMBERS = {
    "temperature": "temperature",
    "max_tokens": "max_tokens",
    "timeout": "timeout",
    "retries": "max_retries",
}
#: Keys a model entry may hold that DEI reads.
_MODEL_KEYS = ("name", "weight", "api_base", "api_key", *_NUMBERS)
#: Lines already printed in this process (the configuration may be resolved more than once).
_SAID: set[str] = set()
#: The task folder being read (lines are said once per folder).
_FOLDER = [""]


def default_nodes(options: Mapping[str, Any], operators: Sequence[str]) -> DefaultNodes | None:
    """The ``python`` domain's answer to ``dei_default_nodes``: one node table per model of
    the task's ``config.yaml``, or ``None`` (no models named, or ``operators`` given: then one
    line says the models are not used).

    Raises:
        ConfigError: A model entry is malformed (one line naming the entry and the key), or
            every model has weight 0.
    """
    if operators:
        try:
            task = _task(options)
        except ConfigError:  # the domain says what is wrong with the folder, when it is built
            return None
        present = [f"llm.{key}" for key in LLM_KEYS if key in task.config.llm]
        if present:
            _say(
                f"warning: {_where(task)}: {', '.join(present)} "
                f"{'is' if len(present) == 1 else 'are'} not used: --operator gives the nodes"
            )
        return None
    task = _task(options)
    llm = task.config.llm
    where = _where(task)
    entries = _entries(llm, where)
    if not entries:
        return None
    nodes, dropped = [], []
    for label, entry in entries:
        name, weight = _name(entry, label, where), _weight(entry, label, where)
        if weight == 0:
            dropped.append(name)
            continue
        nodes.append(_node(name, entry, llm, label, where))
    if dropped:
        _say(
            f"note: {where}: llm.models: {', '.join(dropped)} "
            f"{'has' if len(dropped) == 1 else 'have'} weight 0 and "
            f"{'is' if len(dropped) == 1 else 'are'} left out (OpenEvolve never calls "
            f"{'it' if len(dropped) == 1 else 'them'})"
        )
    if not nodes:
        raise ConfigError(f"python: {where}: every model in llm.models has weight 0")
    return DefaultNodes(nodes=tuple(nodes), source=f"{where} llm.models")


def _task(options: Mapping[str, Any]) -> Task:
    task = load_task(
        str(options.get("task") or DEFAULT_TASK),
        program=str(options.get("program") or ""),
        evaluator=str(options.get("evaluator") or ""),
        config=str(options.get("config") or ""),
    )
    _FOLDER[0] = str(task.folder)
    return task


def _where(task: Task) -> str:
    name = task.config_path.name if task.config_path is not None else "config.yaml"
    return f"{task.folder.name}/{name}"


def _entries(llm: Mapping[str, Any], where: str) -> list[tuple[str, Mapping[str, Any]]]:
    """The model entries, each with its label for messages (``llm.models[0]``)."""
    models = llm.get("models")
    if models:
        if isinstance(models, str | Mapping) or not isinstance(models, Sequence):
            raise ConfigError(f"python: {where}: llm.models must be a list of models")
        entries = []
        for index, entry in enumerate(models):
            label = f"llm.models[{index}]"
            if not isinstance(entry, Mapping):
                raise ConfigError(
                    f"python: {where}: {label} must be a mapping with a name "
                    f"(- name: gpt-4o-mini), got {entry!r}"
                )
            unknown = sorted(set(map(str, entry)) - set(_MODEL_KEYS))
            if unknown:
                _say(f"warning: {where}: {label}: {', '.join(unknown)} ignored")
            entries.append((label, entry))
        return entries
    # OpenEvolve's shorthand (older configs): a primary model, and a secondary one.
    entries = []
    for role in ("primary", "secondary"):
        name = llm.get(f"{role}_model")
        if name is None:
            continue
        weight = llm.get(f"{role}_model_weight")
        entries.append(
            (f"llm.{role}_model", {"name": name, "weight": 1.0 if weight is None else weight})
        )
    return entries


def _name(entry: Mapping[str, Any], label: str, where: str) -> str:
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip() or any(c.isspace() for c in name.strip()):
        raise ConfigError(
            f"python: {where}: {label} needs a name, the model's name at its server "
            f"(name: gpt-4o-mini), got {name!r}"
        )
    return name.strip()


def _weight(entry: Mapping[str, Any], label: str, where: str) -> float:
    weight = entry.get("weight", 1.0)
    if weight is None:
        return 1.0
    if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
        raise ConfigError(f"python: {where}: {label}.weight must be a number >= 0, got {weight!r}")
    return float(weight)


def _node(
    name: str, entry: Mapping[str, Any], llm: Mapping[str, Any], label: str, where: str
) -> dict[str, Any]:
    """One node table: the operator and its options, the model's over the section's."""
    node: dict[str, Any] = {"operator": f"openai/{name}"}
    api_base = entry.get("api_base") or llm.get("api_base")
    if api_base is not None:
        if not isinstance(api_base, str) or not re.match(r"^https?://\S+$", api_base.strip()):
            raise ConfigError(
                f"python: {where}: {label}: api_base must be an http(s) URL, got {api_base!r}"
            )
        node["api_base"] = api_base.strip()
    key = entry.get("api_key", llm.get("api_key"))
    if isinstance(key, str) and key.strip():
        reference = _ENV_REFERENCE.match(key.strip())
        if reference is not None:
            node["api_key_env"] = reference["name"]
        else:
            _say(
                f"warning: {where}: {label}: the api_key written in the file is not copied "
                "into the run's configuration; the node reads OPENAI_API_KEY (write "
                "api_key: ${VARIABLE} to name another variable)"
            )
    elif key is not None and not isinstance(key, str):
        raise ConfigError(f"python: {where}: {label}: api_key must be text such as ${{MY_KEY}}")
    for source, target in _NUMBERS.items():
        value = entry.get(source, llm.get(source))
        if value is None:
            continue
        whole = target in ("max_tokens", "max_retries")
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or value < 0
            or (whole and value != int(value))
        ):
            kind = "a whole number >= 0" if whole else "a number >= 0"
            owner = label if source in entry else f"llm.{source}"
            raise ConfigError(f"python: {where}: {owner}: {source} must be {kind}, got {value!r}")
        node[target] = int(value) if whole else float(value)
    return node


def _say(line: str) -> None:
    """Prints ``line`` once per process and task folder (``_FOLDER``: the one being read)."""
    key = f"{_FOLDER[0]}\0{line}"
    if key not in _SAID:
        _SAID.add(key)
        print(f"dei-python: {line}", file=sys.stderr)
