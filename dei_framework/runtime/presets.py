"""Named protocol presets: ``--preset dei-paper`` sets every setting the DEI paper states.

A preset is a layer of settings between the built-in defaults and the user's configuration file
and flags: ``flags > --config file > preset > defaults``. A value the user sets over a preset's
is reported, since the run then no longer follows the preset's protocol. What ``dei-paper``
sets, and where this implementation still differs from the paper, is documented in
``docs/paper-protocol.md`` and ``docs/deviations.md`` (tests check both against this module).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Mapping
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
