"""Plugin discovery: the pluggy manager, the entry-point group, and loading into a registry.

Plugins arrive through the entry-point group ``dei_framework`` (the reference plugins too).
Each entry point is loaded on its own, so one broken plugin is reported by name and the rest
keep working. Plugins may add hook specifications of their own (``dei_addhooks``).
"""

from __future__ import annotations

import importlib.metadata
import types
from collections.abc import Iterable
from typing import Any

import pluggy

from dei_framework.contract.errors import PluginError
from dei_framework.contract.registry import (
    GUARD_NAME,
    REGISTRATION_HOOKS,
    ObserverGuard,
    PluginRegistry,
    Registered,
)
from dei_framework.plugin import _builtin, _contract, hookspecs

ENTRY_POINT_GROUP = "dei_framework"
#: Entry points the command line leaves out, comma-separated (as pytest's ``-p no:name``).
DISABLE_PLUGINS_VARIABLE = "DEI_DISABLE_PLUGINS"


def load_plugins(
    extra: Iterable[Any] = (), *, entry_points: bool = True, disabled: Iterable[str] = ()
) -> PluginRegistry:
    """Creates the plugin manager and the registry.

    Order: the core's hook specifications, the core's own plugin, the entry-point plugins,
    then ``extra``; each plugin's ``dei_addhooks`` runs as it is registered (a historic hook,
    as pytest's ``pytest_addhooks``). Registration hooks are then collected, and the observer
    guard is registered last, so it is the outermost wrapper of every observation hook.

    Args:
        extra: Plugin objects or modules to register besides the entry points (for library
            use and tests).
        entry_points: Whether to load the ``dei_framework`` entry-point group.
        disabled: Entry points to leave out, by entry-point or distribution name (what
            ``DEI_DISABLE_PLUGINS`` holds for the command line), as pytest's ``-p no:name``.

    Returns:
        The registry; ``registry.problems`` lists plugins that failed or break the contract:
        could not be imported or registered, implement a hook no specification declares, or
        take an argument their hook's specification does not pass (each message names the
        plugin, and the nearest correct name where there is one).

    Raises:
        PluginError: A plugin registers a factory of a shape no longer accepted (one line
            saying what to write instead).
    """
    disabled = set(disabled)
    manager = pluggy.PluginManager("dei_framework")
    manager.add_hookspecs(hookspecs)
    manager.hook.dei_addhooks.call_historic(kwargs={"pluginmanager": manager})
    manager.register(_builtin, name="dei_framework")
    problems: list[str] = []
    if entry_points:
        for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = entry_point.dist.name if entry_point.dist else entry_point.value
            name = _plugin_name(dist, entry_point.name)
            if manager.has_plugin(name):  # the same distribution found twice on sys.path
                continue
            if disabled & {entry_point.name, dist, name}:
                continue
            try:
                plugin = entry_point.load()
            except Exception as exc:  # report, keep the other plugins
                problems.append(
                    f"plugin {entry_point.name!r} (from {dist}) could not be loaded: {exc!r}"
                )
                continue
            _register(manager, plugin, name, problems, f"{entry_point.name!r} (from {dist})")
    for plugin in extra:
        name = _in_process_name(manager, plugin)
        _register(manager, plugin, name, problems, repr(name))

    problems.extend(_contract.unknown_hook_problems(manager))
    registry = PluginRegistry(manager=manager, problems=problems)
    for hook, (kind, table_name) in REGISTRATION_HOOKS.items():
        table: dict[str, Registered[object]] = getattr(registry, table_name)
        for spec, plugin in registry.collect(hook):
            name = getattr(spec, "name", None)
            if not isinstance(name, str) or not name:
                registry.problems.append(f"plugin {plugin!r} registered a {kind} without a name")
            elif name in table:
                kept = table[name].plugin
                registry.problems.append(
                    f"plugin {plugin!r} registers {kind} {name!r}, already registered by "
                    f"{kept!r}; keeping {kept!r}'s (pluggy asks the plugin registered last first)"
                )
            else:
                refused = _contract.old_factory_shape(hook, kind, spec, plugin)
                if refused is not None:
                    raise PluginError(refused)
                table[name] = Registered(spec=spec, plugin=plugin)
    manager.register(ObserverGuard(registry), name=GUARD_NAME)
    return registry


def _register(
    manager: pluggy.PluginManager, plugin: Any, name: str | None, problems: list[str], label: str
) -> None:
    """Registers one plugin; a plugin that fails (bad hook signature, failing ``dei_addhooks``)
    is reported and left out entirely. One already registered (found through its entry point
    and also passed in ``extra``) is kept as it is."""
    if manager.is_registered(plugin):
        return
    contract = _contract.argument_problems(manager, plugin, label)
    if contract:  # pluggy would refuse it too, in a message of many lines
        problems.extend(contract)
        return
    try:
        manager.register(plugin, name=name)
    except Exception as exc:
        if manager.is_registered(plugin):
            manager.unregister(plugin)
        problems.append(f"plugin {label} could not be registered: {exc!r}")


def _in_process_name(manager: pluggy.PluginManager, plugin: Any) -> str:
    """A readable name for a plugin registered in-process: its module's name, or for an object
    ``module.Class`` (pluggy would use the object's id, which says nothing in an error)."""
    if isinstance(plugin, types.ModuleType):
        name = plugin.__name__
    else:
        name = f"{type(plugin).__module__}.{type(plugin).__qualname__}"
    unique, count = name, 1
    while manager.has_plugin(unique):
        count += 1
        unique = f"{name}#{count}"
    return unique


def _plugin_name(dist: str, entry_name: str) -> str:
    """``distribution:entry`` when a distribution registers several plugins."""
    return dist if entry_name == dist else f"{dist}:{entry_name}"


__all__ = ["ENTRY_POINT_GROUP", "PluginError", "PluginRegistry", "Registered", "load_plugins"]
