"""The plugin contract: every hook a DEI plugin can implement, with when and how it is called.

A plugin is a module (or object) with functions marked ``@dei_framework.hookimpl`` whose names
match the specifications below. Third-party plugins are found through the entry-point group
``dei_framework``::

    [project.entry-points.dei_framework]
    myplugin = "my_package.plugin"

Every hook is called through pluggy, so ``@hookimpl(tryfirst=True)``, ``trylast=True``,
``wrapper=True`` (new-style wrappers) and ``hookwrapper=True`` behave as pluggy documents:
implementations run ``tryfirst`` first, then the plain ones from the last registered to the
first, then ``trylast``; wrappers run around all of them.

Registration hooks (``dei_domains``, ``dei_operators``, ...) return a list. The core calls
them plugin by plugin and concatenates the lists, attributing each item to its plugin; names
must be unique across plugins (the first registered wins, a clash is reported).

Format hooks (``dei_export_program``) are ``firstresult``: plugins are asked in pluggy's order
and the first answer that is not ``None`` is used; a plugin answers only for its own domain.

Observation hooks (``dei_candidate_evaluated``, ...) are called for every plugin and their
return values are ignored. An exception raised in one is caught by the core's guard (the
outermost wrapper), reported once naming the plugin, and that plugin's implementation of the
hook is left out from then on; the run goes on. Observers ordered after the failing one miss
the event during which it failed.

Plugins may add hooks of their own through :func:`dei_addhooks` (the ``llm`` plugin adds
``dei_llm_providers`` this way); the core never calls those, the plugin that added them does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

    from dei_framework.archives import ArchiveSpec
    from dei_framework.backend import EvaluatorSpec
    from dei_framework.cli_options import RunOption
    from dei_framework.descriptors import AxisSpec
    from dei_framework.domain import DomainSpec
    from dei_framework.emitters import EmitterSpec
    from dei_framework.export import ExportedProgram
    from dei_framework.operators import OperatorSpec
    from dei_framework.sharing import SharingSpec
    from dei_framework.transport import TransportSpec

hookspec = pluggy.HookspecMarker("dei_framework")
hookimpl = pluggy.HookimplMarker("dei_framework")


# --- the contract itself -----------------------------------------------------------------------


@hookspec(historic=True)
def dei_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Adds hook specifications a plugin defines (as pytest's ``pytest_addhooks``).

    Called once for every plugin as it is registered (a historic hook, so plugins registered
    later get the call too). Implement it as::

        @hookimpl
        def dei_addhooks(pluginmanager):
            from my_package import hookspecs
            pluginmanager.add_hookspecs(hookspecs)

    The added specifications use the same markers (:data:`hookspec`, :data:`hookimpl`); the
    plugin that adds a hook calls it itself (``pluginmanager.hook.<name>(...)``, e.g. from a
    factory through ``context.registry.manager``). A plugin implementing a hook that another,
    optional plugin adds should mark it ``@hookimpl(optionalhook=True)``.

    Args:
        pluginmanager: The ``pluggy.PluginManager`` of the run.
    """


# --- registration -------------------------------------------------------------------------------


@hookspec
def dei_domains() -> list[DomainSpec]:
    """Registers search domains (``--domain NAME``): adversarial ones, whose fitness depends
    on opponents (``Domain.initial_opponents``; the ``reset`` archive lifecycle), and static
    ones, whose fitness depends on the program alone (no opponents; ``continual``).

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
def dei_evaluation_backends() -> list[EvaluatorSpec]:
    """Registers evaluation backends — where evaluation jobs run (``--evaluator NAME``).

    Called once when the plugin manager loads; all results are collected. Each
    :class:`~dei_framework.backend.EvaluatorSpec` has a ``factory(domain, options)`` returning
    an :class:`~dei_framework.backend.EvaluationBackend`; the core registers ``local`` (a
    process pool) and ``dask`` (a Dask distributed cluster) this way.
    """


@hookspec
def dei_descriptor_axes() -> list[AxisSpec]:
    """Registers descriptor axes (binning for a value a domain reports), selectable by name.

    Called once when the plugin manager loads. An axis registered here overrides a domain's
    default binning of the same name when the user selects it with ``--axes``.
    """


@hookspec
def dei_run_options() -> list[RunOption]:
    """Adds options to ``dei-run`` and ``dei experiment`` (e.g. Core War's ``--human-set``).

    Called once when the CLI starts. Each :class:`~dei_framework.cli_options.RunOption` names a
    flag, which options table its value goes to (``domain_options``, ``transport_options``,
    ...) and under which key; the same key is accepted at the top level of a ``--config`` file.
    An option whose name clashes with a core option or an earlier plugin's is reported and left
    out.
    """


@hookspec
def dei_cli_commands() -> list[click.Command]:
    """Adds sub-commands to the ``dei`` group (e.g. ``dei coreware ...``).

    Called once when the CLI starts. Return click commands or groups.
    """


# --- formats ----------------------------------------------------------------------------------


@hookspec(firstresult=True)
def dei_export_program(domain: str, program: ExportedProgram) -> tuple[str, str] | None:
    """Writes one program of a finished run as a file in its domain's own format (``dei export``).

    Called once per exported champion or elite; the first non-``None`` answer wins. Answer
    ``None`` for a domain that is not yours. When no plugin answers, the core writes the
    program's text unchanged to a ``.txt`` file (the run, node, operator, round, fitness and
    cell are in the JSON Lines file written beside it either way).

    Example (Core War writes ``.red`` files with ``;name``, ``;author`` and ``;strategy``
    comments naming the program's origin)::

        @hookimpl
        def dei_export_program(domain, program):
            if domain != "mydomain":
                return None
            return ".prog", f"# {program.title}\n{program.text}"

    Args:
        domain: The run's domain name (``summary.json``'s ``domain``).
        program: The program and where it comes from
            (:class:`~dei_framework.export.ExportedProgram`).

    Returns:
        ``(suffix, text)``: the file name's suffix with its dot (``".red"``) and the file's
        content; or ``None``.
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
        accepted: Whether it was valid (it is then parsed, and the sharing policy decides
            whether it joins the node's opponents, its archive, or neither).
        reason: Why it was dropped, or ``"ok"``.
    """


@hookspec
def dei_run_finished(run_dir: str, summary: dict[str, Any]) -> None:
    """Called once when a run (``dei-run``) finishes, after ``summary.json`` is written."""
