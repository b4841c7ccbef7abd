"""What a run setting is to its users: its config-file key, its ``dei-run`` flag, its help and
the docs table that lists it.

Each :class:`~dei_framework.runtime.config.RunConfig` field carries its :class:`Setting` as attrs
metadata (:func:`setting`); the few keys that are not fields (``operators``, ``api_base``,
``out``, ``preset``) are :data:`NOT_FIELDS`. From these one list come the known config keys,
the core ``dei-run`` options, the resolver's picks and the check of docs/cli.md and
docs/configuration.md (``tests/runtime/test_config_resolver.py``). Flags that are no config key and
keys that are no flag are listed here, once, with the reason the docs give.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from dei_framework.runtime.presets import PRESETS

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
