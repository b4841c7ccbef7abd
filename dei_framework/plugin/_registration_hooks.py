"""The registration hooks: what plugins add to the registry (domains, operators, transports,
sharing policies, allocators, parent selectors, archives, evaluation backends,
axes, options, commands).

Each returns a list; the core collects every plugin's (not firstresult). Collected by
:mod:`dei_framework.plugin.hookspecs`, the module the plugin manager registers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dei_framework.plugin._markers import hookspec

if TYPE_CHECKING:
    import click

    from dei_framework.contract.backend import EvaluatorSpec
    from dei_framework.contract.cli_options import RunOption
    from dei_framework.contract.descriptors import AxisSpec
    from dei_framework.contract.domain import DomainSpec
    from dei_framework.contract.operators import OperatorSpec
    from dei_framework.contract.transport import TransportSpec
    from dei_framework.search.allocation import AllocatorSpec
    from dei_framework.search.archives import ArchiveSpec
    from dei_framework.search.selectors import SelectorSpec
    from dei_framework.search.sharing import SharingSpec


@hookspec
def dei_domains() -> list[DomainSpec]:
    """Registers search domains (``--domain NAME``): adversarial ones, whose fitness depends
    on opponents (``Domain.initial_opponents``; the ``reset`` archive lifecycle), and static
    ones, whose fitness depends on the program alone (no opponents; ``continual``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the registry
        (at CLI start, or when library code calls it).

    Returns:
        A list of :class:`~dei_framework.contract.domain.DomainSpec`. Every plugin's list is
        collected (not firstresult); names must be unique across plugins.
    """


@hookspec
def dei_operators() -> list[OperatorSpec]:
    """Registers operator families (``--operator NAME``), offline ones or model-backed ones.

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.contract.operators.OperatorSpec`. Every plugin's list is
        collected (not firstresult); ``--operator`` picks a name, or else the first family whose
        ``accepts`` claims the string.
    """


@hookspec
def dei_transports() -> list[TransportSpec]:
    """Registers transports (``--transport NAME``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.contract.transport.TransportSpec`. Every plugin's list is
        collected (not firstresult); names must be unique across plugins.
    """


@hookspec
def dei_sharing_policies() -> list[SharingSpec]:
    """Registers champion-sharing policies (``--sharing NAME``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.search.sharing.SharingSpec`. Every plugin's list is
        collected (not firstresult); the core registers its own policies this way.
    """


@hookspec
def dei_budget_allocators() -> list[AllocatorSpec]:
    """Registers budget allocators — how the budget left is shared between nodes at each
    round boundary (``--allocation NAME``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.search.allocation.AllocatorSpec`, each with a
        ``factory(ctx)`` returning the run's allocator. Every plugin's list is collected
        (not firstresult); the core registers ``static`` and ``bandit`` this way.
    """


@hookspec
def dei_parent_selectors() -> list[SelectorSpec]:
    """Registers parent selectors — how a node chooses parents (``--selector NAME``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.search.selectors.SelectorSpec`, each with a
        ``factory(ctx)`` returning one node's
        :class:`~dei_framework.search.selectors.ParentSelector`.
        Every plugin's list is collected (not firstresult).
    """


@hookspec
def dei_archives() -> list[ArchiveSpec]:
    """Registers archives (``--archive NAME``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.search.archives.ArchiveSpec`, each with a
        ``factory(ctx)`` returning a callable ``(space=, qd_offset=, seed=) -> ArchiveBase``
        that builds each round's fresh archive. Every plugin's list is collected (not
        firstresult).
    """


@hookspec
def dei_evaluation_backends() -> list[EvaluatorSpec]:
    """Registers evaluation backends — where evaluation jobs run (``--evaluator NAME``).

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.contract.backend.EvaluatorSpec`, each with a
        ``factory(ctx)`` (``ctx.domain``: the run's domain) returning an
        :class:`~dei_framework.contract.backend.EvaluationBackend`. Every plugin's list is
        collected (not firstresult); the core registers ``local`` (a process pool) and ``dask``
        this way.
    """


@hookspec
def dei_descriptor_axes() -> list[AxisSpec]:
    """Registers descriptor axes (binning for a value a domain reports), selectable by name.

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the
        registry.

    Returns:
        A list of :class:`~dei_framework.contract.descriptors.AxisSpec`. Every plugin's list is
        collected (not firstresult); an axis registered here overrides a domain's default
        binning of the same name when the user selects it with ``--axes``.
    """


@hookspec
def dei_run_options() -> list[RunOption]:
    """Adds options to ``dei-run`` and ``dei experiment`` (e.g. Core War's ``--human-set``).

    Each :class:`~dei_framework.contract.cli_options.RunOption` names a flag, which options table
    its value goes to (``domain_options``, ``transport_options``, ...) and under which key; the
    same key is accepted at the top level of a ``--config`` file.

    Fires:
        Once per plugin, when :func:`~dei_framework.plugin.manager.load_plugins` builds the registry
        (the CLI loads it once per process, before parsing flags).

    Returns:
        A list of :class:`~dei_framework.contract.cli_options.RunOption`. Every plugin's list is
        collected (not firstresult); an option whose name clashes with a core option or an
        earlier plugin's is reported and left out.
    """


@hookspec
def dei_cli_commands() -> list[click.Command]:
    """Adds sub-commands to the ``dei`` group (e.g. ``dei coreware ...``).

    Fires:
        Once per plugin each time the ``dei`` group lists or resolves its commands (several
        times in one invocation of ``dei``): return the same commands every time, and build
        them cheaply.

    Returns:
        A list of ``click.Command`` (commands or groups). Every plugin's list is collected (not
        firstresult); an item that is not a named command is ignored.
    """
