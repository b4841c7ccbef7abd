"""Options a plugin adds to ``dei-run`` and ``dei experiment`` (the ``dei_run_options`` hook)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import attrs
import click

from dei_framework.contract.registry import Kind

#: The options tables of a run a plugin option can feed (see docs/configuration.md).
Target = Literal[
    "domain_options",
    "transport_options",
    "sharing_options",
    "operator_options",
    "evaluator_options",
]


@attrs.frozen(kw_only=True)
class RunOption:
    """One flag a plugin contributes, and where its value goes in the run configuration.

    A value given with the flag, or under the same key at the top level of a ``--config``
    file (the flag wins), is stored as ``<target>[key]``; a ``--domain-option`` /
    ``--transport-option`` flag naming the same key still overrides it.

    Example (Core War's ``--human-set``)::

        RunOption(
            option=click.Option(["--human-set"], type=click.Path(file_okay=False),
                                help="Folder of reference programs for generality."),
            target="domain_options",
            convert=lambda value: str(Path(value).resolve()),
        )

    Attributes:
        option: The click option; its parameter name (``human_set``) is also the key.
        target: The options table the value goes to.
        convert: Applied to the value before it is stored (e.g. resolve a path).
    """

    option: click.Option
    target: Target
    convert: Callable[[Any], Any] | None = None

    @property
    def name(self) -> str:
        """The parameter name: the config-file key and the key in the target table."""
        return str(self.option.name)

    @property
    def description(self) -> str:
        """One line for listings: the option's help."""
        return self.option.help or ""

    def apply(self, value: Any, tables: dict[str, dict[str, Any]]) -> None:
        """Stores ``value`` (when given) in its target table."""
        if value is None or value == ():
            return
        tables[self.target][self.name] = self.convert(value) if self.convert else value


#: The run options plugins add: ``registry.lookup(RUN_OPTIONS, name)`` is a :class:`RunOption`.
RUN_OPTIONS: Kind[RunOption] = Kind("dei_run_options")
