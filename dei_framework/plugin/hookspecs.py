"""The plugin contract: every hook a DEI plugin can implement, with when and how it is called.

A plugin is a module (or object) with functions marked ``@dei_framework.hookimpl`` whose names
match the specifications below. Third-party plugins are found through the entry-point group
``dei_framework``::

    [project.entry-points.dei_framework]
    myplugin = "my_package.plugin"

Each hook's docstring says, as pytest's ``hookspec.py`` does, when and how often it fires
(**Fires:**), what its callers do with what it returns (**Returns:**) and, for every argument,
what it holds (**Args:**); the payloads are frozen records re-exported here
(:class:`EvaluatedEvent`, :class:`RoundEvent`, :class:`RunSummary`), read by attribute and
documented field by field (``to_json()`` gives what the run's files hold).
``tests/plugin/test_hookspecs.py`` fails when a hook lacks one of these.

Every hook is called through pluggy, so ``@hookimpl(tryfirst=True)`` and ``trylast=True``
behave as pluggy documents: implementations run ``tryfirst`` first, then the plain ones from
the last registered to the first, then ``trylast``. Wrappers (``wrapper=True``, new style, and
``hookwrapper=True``, old style) run around all of them, on every hook **except the historic
one**, ``dei_addhooks``: pluggy refuses a wrapper on a historic hook when the plugin is
registered (reported in ``registry.problems``, and the plugin is left out).

Registration hooks (``dei_domains``, ``dei_operators``, ...) return a list. The core calls
them plugin by plugin and concatenates the lists, attributing each item to its plugin; names
must be unique across plugins (the first registered wins, a clash is reported).

Format hooks (``dei_export_program``) are ``firstresult``: plugins are asked in pluggy's order
and the first answer that is not ``None`` is used; a plugin answers only for its own domain.
So are the defaults hooks (``dei_default_nodes``: the nodes of a run that names no operator).

Observation hooks (``dei_candidate_evaluated``, ...) are called for every plugin and their
return values are ignored. An exception raised in one is caught by the core's guard (the
outermost wrapper), reported once naming the plugin, and that plugin's implementation of the
hook is left out from then on; the run goes on. Observers ordered after the failing one miss
the event during which it failed. Treat a payload as read-only: the same object is handed to
every observer and is the one the core goes on to use.

Plugins may add hooks of their own through :func:`dei_addhooks` (the ``llm`` plugin adds
``dei_llm_providers`` this way); the core never calls those, the plugin that added them does.

``docs/architecture.md``'s hook table is generated from these docstrings
(``python scripts/hook_table.py``; a test checks that it is up to date).

This module is the one the plugin manager registers (``pm.add_hookspecs(hookspecs)``) and the
one to import from. It defines :func:`dei_addhooks` and collects the other hooks, by family,
from the modules that define them: registration hooks from
:mod:`~dei_framework.plugin._registration_hooks`, format hooks from
:mod:`~dei_framework.plugin._format_hooks`, defaults hooks from
:mod:`~dei_framework.plugin._default_hooks`, observation hooks from
:mod:`~dei_framework.plugin._observation_hooks`; the markers come from
:mod:`~dei_framework.plugin._markers`, the event records from
:mod:`~dei_framework.search.events` and the run's summary records from
:mod:`~dei_framework.contract.run_summary`.
"""

from __future__ import annotations

import pluggy

from dei_framework.contract.archive_stats import ArchiveStats
from dei_framework.contract.default_nodes import DefaultNodes
from dei_framework.contract.payloads import JSONValue
from dei_framework.contract.records import Candidate
from dei_framework.contract.run_summary import Champion, MergedSummary, NodeSummary, RunSummary
from dei_framework.plugin import (
    _default_hooks,
    _format_hooks,
    _observation_hooks,
    _registration_hooks,
)
from dei_framework.plugin._markers import hookimpl, hookspec
from dei_framework.search.events import EvaluatedEvent, OpponentFought, RoundEvent

#: The markers and the payload records (the hooks themselves are implemented, not imported).
__all__ = [
    "ArchiveStats",
    "Candidate",
    "Champion",
    "DefaultNodes",
    "EvaluatedEvent",
    "JSONValue",
    "MergedSummary",
    "NodeSummary",
    "OpponentFought",
    "RoundEvent",
    "RunSummary",
    "hookimpl",
    "hookspec",
]


# --- the contract itself -----------------------------------------------------------------------


@hookspec(historic=True)
def dei_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Adds hook specifications a plugin defines (as pytest's ``pytest_addhooks``).

    Implement it as::

        @hookimpl
        def dei_addhooks(pluginmanager):
            from my_package import hookspecs
            pluginmanager.add_hookspecs(hookspecs)

    The added specifications use the same markers (:data:`hookspec`, :data:`hookimpl`); the
    plugin that adds a hook calls it itself (``pluginmanager.hook.<name>(...)``, e.g. from a
    factory through ``context.registry.manager``). A plugin implementing a hook that another,
    optional plugin adds should mark it ``@hookimpl(optionalhook=True)``.

    Fires:
        Once for every plugin, as it is registered. Historic: a plugin registered after the
        call still gets it, so it cannot be wrapped (pluggy refuses ``wrapper=True`` and
        ``hookwrapper=True`` here, and the plugin is reported and left out).

    Args:
        pluginmanager: The ``pluggy.PluginManager`` of the run.

    Returns:
        Nothing; a returned value is ignored.
    """


# --- every other hook, by family ---------------------------------------------------------------
# Bound one by one rather than imported by name: pluggy reads the hooks from this module's
# names, and the hook table (plugin._contract.hook_docs) lists them in the order they are bound
# here, which is the order of the families below (an import statement's names get sorted).

# registration
dei_domains = _registration_hooks.dei_domains
dei_operators = _registration_hooks.dei_operators
dei_transports = _registration_hooks.dei_transports
dei_sharing_policies = _registration_hooks.dei_sharing_policies
dei_budget_allocators = _registration_hooks.dei_budget_allocators
dei_parent_selectors = _registration_hooks.dei_parent_selectors
dei_archives = _registration_hooks.dei_archives
dei_evaluation_backends = _registration_hooks.dei_evaluation_backends
dei_descriptor_axes = _registration_hooks.dei_descriptor_axes
dei_run_options = _registration_hooks.dei_run_options
dei_cli_commands = _registration_hooks.dei_cli_commands
# formats
dei_export_program = _format_hooks.dei_export_program
# defaults
dei_default_nodes = _default_hooks.dei_default_nodes
# observation
dei_candidate_evaluated = _observation_hooks.dei_candidate_evaluated
dei_round_ended = _observation_hooks.dei_round_ended
dei_champion_received = _observation_hooks.dei_champion_received
dei_run_finished = _observation_hooks.dei_run_finished
