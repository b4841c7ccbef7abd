"""The plugin contract: every hook a DEI plugin can implement, with when and how it is called.

A plugin is a module (or object) with functions marked ``@dei_framework.hookimpl`` whose names
match the specifications below. Third-party plugins are found through the entry-point group
``dei_framework``::

    [project.entry-points.dei_framework]
    myplugin = "my_package.plugin"

Registration hooks (``dei_domains``, ``dei_operators``, ...) are collected from every plugin:
each returns a list, and the lists are concatenated. Names must be unique across plugins.
Observation hooks are called for every plugin, their return values are ignored, and an
exception raised by one is reported (naming the plugin) without stopping the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

    from dei_framework.archives import ArchiveSpec
    from dei_framework.descriptors import AxisSpec
    from dei_framework.domain import DomainSpec
    from dei_framework.emitters import EmitterSpec
    from dei_framework.operators import OperatorSpec
    from dei_framework.sharing import SharingSpec
    from dei_framework.transport import TransportSpec

hookspec = pluggy.HookspecMarker("dei_framework")
hookimpl = pluggy.HookimplMarker("dei_framework")


# --- registration -------------------------------------------------------------------------------


@hookspec
def dei_domains() -> list[DomainSpec]:
    """Registers search domains (``--domain NAME``).

    Called once when the plugin manager loads.
    """


@hookspec
def dei_operators() -> list[OperatorSpec]:
    """Registers operator families (``--operator NAME``), offline ones or model-backed ones.

    Called once when the plugin manager loads.
    """


@hookspec
def dei_transports() -> list[TransportSpec]:
    """Registers transports (``--transport NAME``).

    Called once when the plugin manager loads.
    """


@hookspec
def dei_sharing_policies() -> list[SharingSpec]:
    """Registers champion-sharing policies (``--sharing NAME``).

    Called once when the plugin manager loads.
    """


@hookspec
def dei_emitters() -> list[EmitterSpec]:
    """Registers emitters — how a node chooses parents (``--emitter NAME``).

    Called once when the plugin manager loads; all results are collected. Each
    :class:`~dei_framework.emitters.EmitterSpec` has a ``factory(options)`` returning one
    node's :class:`~dei_framework.emitters.EmitterBase`.
    """


@hookspec
def dei_archives() -> list[ArchiveSpec]:
    """Registers archives (``--archive NAME``).

    Called once when the plugin manager loads; all results are collected. Each
    :class:`~dei_framework.archives.ArchiveSpec` has a ``factory(options)`` returning a callable
    ``(space=, qd_offset=, seed=) -> ArchiveBase`` that builds each round's fresh archive.
    """


@hookspec
def dei_descriptor_axes() -> list[AxisSpec]:
    """Registers descriptor axes (binning for a value a domain reports), selectable by name.

    Called once when the plugin manager loads. An axis registered here overrides a domain's
    default binning of the same name when the user selects it with ``--axes``.
    """


@hookspec
def dei_cli_commands() -> list[click.Command]:
    """Adds sub-commands to the ``dei`` group (e.g. ``dei coreware ...``).

    Called once when the CLI starts. Return click commands or groups.
    """


@hookspec
def dei_llm_providers() -> list[Any]:
    """Registers in-process LLM providers for the ``llm`` operator.

    Return ``(provider_name, handler)`` pairs where ``handler`` is a ``litellm.CustomLLM``
    instance; the provider is then used by model string ``provider_name/model``. Called only
    when an LLM operator is first created.
    """


# --- observation --------------------------------------------------------------------------------


@hookspec
def dei_candidate_evaluated(event: dict[str, Any]) -> None:
    """Called after each candidate is evaluated (or found invalid) on any node.

    Args:
        event: The ``evaluated`` event exactly as written to ``events.jsonl``.
    """


@hookspec
def dei_round_ended(node: str, round: int, stats: dict[str, Any]) -> None:
    """Called when a node finishes a round.

    Args:
        node: The node's name.
        round: The round just finished (0-based).
        stats: The ``round`` event written to ``events.jsonl`` (archive stats, champion, ...).
    """


@hookspec
def dei_champion_received(node: str, envelope: Any, accepted: bool, reason: str) -> None:
    """Called for each champion a node drains from its inbox.

    Args:
        node: The receiving node.
        envelope: The :class:`~dei_framework.envelope.ChampionEnvelope` (``None`` if the
            message could not be decoded).
        accepted: Whether it was valid and joined the node's opponents or archive.
        reason: Why it was dropped, or ``"ok"``.
    """


@hookspec
def dei_run_finished(run_dir: str, summary: dict[str, Any]) -> None:
    """Called once when a run (``dei-run``) finishes, after ``summary.json`` is written."""
