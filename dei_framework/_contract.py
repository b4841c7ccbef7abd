"""The plugin contract checked at load: implementations of unknown hooks, unknown arguments.

pluggy accepts an implementation of a hook nobody specified (it waits for a spec that may be
added later) and reports an unknown argument as a multi-line validation error. A plugin author
who misspells ``dei_round_ended`` as ``dei_round_end`` would see nothing at all: the plugin
loads and its hook never runs. These checks name the plugin, the hook and the nearest correct
name, in one line each, as ``registry.problems`` entries.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable
from typing import Any

import pluggy


def _nearest(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or nothing when none is close."""
    match = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _implementations(manager: pluggy.PluginManager, plugin: Any) -> dict[str, Any]:
    """The plugin's hook implementations by hook name (what pluggy would register)."""
    found = {}
    for attribute in dir(plugin):
        if manager.parse_hookimpl_opts(plugin, attribute) is not None:
            found[attribute] = getattr(plugin, attribute)
    return found


def _parameters(function: Any) -> list[str]:
    """Argument names of a hook implementation (``self`` of a bound method excluded)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin or C function: pluggy will judge it
        return []
    return [
        name
        for name, parameter in signature.parameters.items()
        if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
    ]


def argument_problems(manager: pluggy.PluginManager, plugin: Any, label: str) -> list[str]:
    """Problems of a plugin's arguments against hooks specified so far, before registering it.

    Args:
        manager: The plugin manager holding the specifications.
        plugin: The plugin object or module about to be registered.
        label: How messages name the plugin.

    Returns:
        One message per argument that the hook's specification does not offer.
    """
    problems = []
    for hook, function in _implementations(manager, plugin).items():
        caller = getattr(manager.hook, hook, None)
        spec = getattr(caller, "spec", None)
        if spec is None:
            continue
        offered = spec.argnames
        for argument in _parameters(function):
            if argument not in offered:
                problems.append(
                    f"plugin {label}: hook {hook!r} takes argument {argument!r}, which the "
                    f"specification does not pass{_nearest(argument, offered)}; it offers "
                    f"{', '.join(offered) or 'no arguments'}"
                )
    return problems


def unknown_hook_problems(manager: pluggy.PluginManager) -> list[str]:
    """Implementations of hooks that no specification declares (and not marked optional).

    Call it after every plugin is registered, since a plugin's ``dei_addhooks`` may declare
    hooks that another plugin implements.

    Returns:
        One message per implementation, naming the plugin, the hook and the nearest hook name.
    """
    specified = [name for name, caller in vars(manager.hook).items() if caller.spec is not None]
    problems = []
    for name, caller in sorted(vars(manager.hook).items()):
        if caller.spec is not None:
            continue
        for implementation in caller.get_hookimpls():
            if implementation.optionalhook:
                continue
            problems.append(
                f"plugin {implementation.plugin_name!r} implements {name!r}, which is not a "
                f"hook of dei_framework or of any loaded plugin{_nearest(name, specified)}"
            )
    return problems
