"""What a run setting is to its users (its config-file key, its ``dei-run`` flag, its help and
the docs table that lists it), and the named presets that set many at once.

Each :class:`~dei_framework.runtime.config.run_config.RunConfig` field carries its
:class:`Setting` as attrs metadata (:func:`setting`); the few keys that are not fields
(``operators``, ``api_base``, ``out``, ``preset``) are :data:`NOT_FIELDS`. From these one list
come the known config keys, the core ``dei-run`` options, the resolver's picks and the check of
docs/cli.md and docs/configuration.md (``tests/runtime/test_config_resolver.py``). Flags that
are no config key and keys that are no flag are listed here, once, with the reason the docs
give.

A preset (``--preset dei-paper`` sets every setting the DEI paper states) is a layer of
settings between the built-in defaults and the user's configuration file and flags:
``flags > --config file > preset > defaults``. A value the user sets over a preset's is
reported, since the run then no longer follows the preset's protocol. What ``dei-paper`` sets,
and where this implementation still differs from the paper, is documented in
``docs/paper-protocol.md`` and ``docs/deviations.md`` (tests check both against this module).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import click

from dei_framework.contract.errors import ConfigError


@attrs.frozen(kw_only=True)
class Preset:
    """A named set of settings.

    Attributes:
        name: What users type after ``--preset``.
        description: One line for ``--help`` and the docs.
        settings: ``dei-run`` settings by option name (``rounds``, ``budget``, ``nodes``,
            ``new_fraction``, ``max_champions``, ``sharing``, ``domain``, ...).
        domain_options: Domain options (under the file's and ``--domain-option`` values).
        operator_options: Options of every node's operator (under ``[operator_options]``).
        experiment: ``dei experiment`` settings (``conditions``).
    """

    name: str
    description: str
    settings: Mapping[str, Any] = attrs.field(factory=dict)
    domain_options: Mapping[str, Any] = attrs.field(factory=dict)
    operator_options: Mapping[str, Any] = attrs.field(factory=dict)
    experiment: Mapping[str, Any] = attrs.field(factory=dict)


#: The DEI paper (arXiv 2605.27130): 4 nodes, 20 rounds, 250 calls per round per condition
#: (4960 = 62 per node per round x 4 nodes x 20 rounds: the nearest total that splits into whole
#: equal quotas), 10 % new programs, parents drawn uniformly over occupied cells of a grid
#: archive, the last 20 own champions as opponents, champion-only sharing,
#: DRQ's MARS (core 8000, 80 000 cycles, 8000 processes, length 100, distance 100) and 20
#: battle rounds per evaluation, sampling temperature 1.0, Solo vs Homo vs Diverse.
DEI_PAPER = Preset(
    name="dei-paper",
    description="the DEI paper's protocol (Core War, 4 nodes, 20 rounds, 4960 calls)",
    settings={
        "domain": "coreware",
        "nodes": 4,
        "rounds": 20,
        "budget": 4960,
        "new_fraction": 0.1,
        "max_champions": 20,
        "sharing": "champion",
        "axes": ("tsp", "mc"),
        "selector": "uniform",
        "archive": "grid",
    },
    domain_options={
        "coresize": 8000,
        "cycles": 80000,
        "processes": 8000,
        "maxlength": 100,
        "mindistance": 100,
        "rounds": 20,
    },
    operator_options={"temperature": 1.0},
    experiment={"conditions": "solo,homo,diverse"},
)

#: Every preset by name.
PRESETS: dict[str, Preset] = {preset.name: preset for preset in (DEI_PAPER,)}


def get_preset(name: str | None) -> Preset | None:
    """The preset called ``name`` (``None`` for no preset).

    Raises:
        ConfigError: no preset has that name.
    """
    if name is None:
        return None
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; available: {', '.join(sorted(PRESETS))}")
    return PRESETS[name]


def overridden(preset: Preset, chosen: Mapping[str, Any]) -> list[str]:
    """``"--rounds 8 (preset: 20)"`` for every preset setting the user set otherwise.

    Args:
        preset: The preset.
        chosen: The user's own values (flags and file, before the preset), by setting name;
            domain options under ``domain_options``.
    """
    notes = []
    for key, value in preset.settings.items():
        mine = chosen.get(key)
        if mine is not None and _norm(mine) != _norm(value):
            notes.append(f"--{key.replace('_', '-')} {_show(mine)} (preset: {_show(value)})")
    options = chosen.get("domain_options") or {}
    for key, value in preset.domain_options.items():
        if key in options and _norm(options[key]) != _norm(value):
            notes.append(f"domain option {key}={options[key]} (preset: {value})")
    return notes


def warn_overrides(preset: Preset, notes: list[str]) -> None:
    """Says on stderr that the user's values leave the preset's protocol (nothing if none)."""
    if notes:
        click.echo(
            f"warning: not the {preset.name} protocol any more: {', '.join(notes)}", err=True
        )


def _norm(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(value)
    if isinstance(value, str) and "," in value:
        return tuple(part.strip() for part in value.split(","))
    return value


def _show(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


#: The attrs metadata key under which a field's :class:`Setting` is stored.
SETTING = "dei_setting"

#: The groups of ``dei-run``'s options in docs/cli.md (bold headings over its tables).
SECTIONS = ("What to run", "How much to spend", "How nodes share", "Where and how it runs")
RUN, SPEND, SHARE, WHERE = SECTIONS


@attrs.frozen(kw_only=True)
class Setting:
    """One run setting as a user gives it: a config-file key and a ``dei-run`` flag.

    Attributes:
        key: The config-file key, also the flag's parameter name (``new_fraction``).
        flag: The flag (``--new-fraction``; ``--array-path/--no-array-path`` for a switch).
        help: The flag's ``--help`` text.
        section: The group of docs/cli.md's ``dei-run`` tables listing the flag
            (one of :data:`SECTIONS`).
        option: The click option's settings besides its help, as plain data: ``type``
            (``int``, ``float``), ``choices``, ``metavar``, ``multiple``, ``is_flag``,
            ``default``, ``path`` (``"dir"``: a directory path).
        aliases: Other keys the file may use for it (``operator`` for ``operators``).
    """

    key: str
    flag: str
    help: str
    section: str = attrs.field(validator=attrs.validators.in_(SECTIONS))
    option: Mapping[str, Any] = attrs.field(factory=dict)
    aliases: tuple[str, ...] = ()

    @property
    def flags(self) -> tuple[str, ...]:
        """The flag's spellings (``("--array-path", "--no-array-path")`` for a switch)."""
        first, _, second = self.flag.partition("/")
        return (first, second) if second else (first,)

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key the file may use for it."""
        return (self.key, *self.aliases)


def setting(flag: str, section: str, help: str, **option: Any) -> dict[str, Any]:
    """The attrs ``metadata`` of a field that is a setting; its key is the field's name."""
    return {SETTING: Setting(key="", flag=flag, help=help, section=section, option=option)}


def of_fields(record: type) -> Iterator[Setting]:
    """The setting of every field of ``record`` that is one, in field order."""
    for field in attrs.fields(record):
        if SETTING in field.metadata:
            yield attrs.evolve(field.metadata[SETTING], key=field.name)


#: Settings that are no field of ``RunConfig``: they choose its nodes (``operators``,
#: ``api_base``), where the run goes (``out``) or a layer of values under the file (``preset``).
NOT_FIELDS = (
    Setting(
        key="operators",
        aliases=("operator",),
        flag="--operator",
        section=RUN,
        option={"multiple": True, "metavar": "SPEC"},
        help="Operator of a node, repeatable and cycled over nodes: an offline operator "
        "name (e.g. gp) or a litellm model string (e.g. openai/gpt-4.1-mini).",
    ),
    Setting(
        key="api_base",
        flag="--api-base",
        section=RUN,
        help="Base URL for the LLM nodes without their own (local OpenAI-compatible "
        "servers); one node's own: --operator MODEL@URL.",
    ),
    Setting(
        key="out",
        flag="--out",
        section=WHERE,
        option={"path": "dir"},
        help="Run directory (default: a new folder under ./runs/).",
    ),
    Setting(
        key="preset",
        flag="--preset",
        section=WHERE,
        option={"choices": tuple(sorted(PRESETS))},
        help="A named protocol under the file and flags: dei-paper sets the DEI "
        "paper's settings (docs/paper-protocol.md).",
    ),
)

#: Config-file keys that are whole tables: no flag sets a table (``--domain-option`` and
#: ``--transport-option`` set one key of theirs; a plugin's flag, one key of the table it names).
CONFIG_TABLES = frozenset(
    {
        "node",
        "domain_options",
        "transport_options",
        "sharing_options",
        "operator_options",
        "selector_options",
        "archive_options",
        "evaluator_options",
        "allocation_options",
    }
)

#: ``dei-run`` flags that are no config key, and why (docs/cli.md says so too).
FLAG_ONLY = {
    "--domain-option": "sets one key of the [domain_options] table",
    "--transport-option": "sets one key of the [transport_options] table",
    "--resume": "names a recorded run to continue, not a setting of a new one",
    "--replay": "names a recorded run to rerun, not a setting of a new one",
    "--reask-mismatched": "a way of replaying, with --replay",
    "--config": "names the file itself",
    "--progress": "how this command shows the run, not part of it",
    "--no-report": "what this command writes at the end, not part of the run",
    "--watch": "what this command serves while it runs, not part of the run",
}
