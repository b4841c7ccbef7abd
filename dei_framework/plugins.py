"""Plugin discovery and the registry of what plugins provide.

Plugins arrive through the entry-point group ``dei_framework`` (the reference plugins too).
Each entry point is loaded on its own, so one broken plugin is reported by name and the rest
keep working.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable
from typing import Any

import attrs
import pluggy

from dei_framework import _builtin, hookspecs
from dei_framework.errors import ConfigError, PluginError

ENTRY_POINT_GROUP = "dei_framework"

#: Registration hooks and the kind of thing each registers (used in messages and listings).
REGISTRATION_HOOKS = {
    "dei_domains": "domain",
    "dei_operators": "operator",
    "dei_transports": "transport",
    "dei_sharing_policies": "sharing policy",
    "dei_descriptor_axes": "descriptor axis",
    "dei_emitters": "emitter",
    "dei_archives": "archive",
}


@attrs.frozen
class Registered:
    """One thing a plugin registered, with the plugin it came from."""

    spec: Any
    plugin: str


@attrs.define
class PluginRegistry:
    """Everything registered by the loaded plugins, by kind and name.

    Attributes:
        manager: The pluggy manager (observation hooks are called through ``manager.hook``).
        problems: One message per plugin that failed to load or register.
    """

    manager: pluggy.PluginManager
    domains: dict[str, Registered] = attrs.Factory(dict)
    operators: dict[str, Registered] = attrs.Factory(dict)
    transports: dict[str, Registered] = attrs.Factory(dict)
    sharing: dict[str, Registered] = attrs.Factory(dict)
    axes: dict[str, Registered] = attrs.Factory(dict)
    emitters: dict[str, Registered] = attrs.Factory(dict)
    archives: dict[str, Registered] = attrs.Factory(dict)
    problems: list[str] = attrs.Factory(list)

    def _table(self, hook: str) -> dict[str, Registered]:
        return {
            "dei_domains": self.domains,
            "dei_operators": self.operators,
            "dei_transports": self.transports,
            "dei_sharing_policies": self.sharing,
            "dei_descriptor_axes": self.axes,
            "dei_emitters": self.emitters,
            "dei_archives": self.archives,
        }[hook]

    def _lookup(self, table: dict[str, Registered], kind: str, name: str) -> Any:
        if name in table:
            return table[name].spec
        known = ", ".join(sorted(table)) or "none"
        hint = f" (plugin problems: {'; '.join(self.problems)})" if self.problems else ""
        raise ConfigError(f"unknown {kind} {name!r}; registered: {known}{hint}")

    def domain(self, name: str):
        """The :class:`~dei_framework.domain.DomainSpec` called ``name``."""
        return self._lookup(self.domains, "domain", name)

    def transport(self, name: str):
        """The :class:`~dei_framework.transport.TransportSpec` called ``name``."""
        return self._lookup(self.transports, "transport", name)

    def sharing_policy(self, name: str):
        """The :class:`~dei_framework.sharing.SharingSpec` called ``name``."""
        return self._lookup(self.sharing, "sharing policy", name)

    def emitter(self, name: str):
        """The :class:`~dei_framework.emitters.EmitterSpec` called ``name``."""
        return self._lookup(self.emitters, "emitter", name)

    def archive(self, name: str):
        """The :class:`~dei_framework.archives.ArchiveSpec` called ``name``."""
        return self._lookup(self.archives, "archive", name)

    def operator(self, spec: str):
        """The :class:`~dei_framework.operators.OperatorSpec` serving ``--operator spec``.

        An exact name wins; otherwise the first operator family whose ``accepts`` claims it.
        """
        if spec in self.operators:
            return self.operators[spec].spec
        for entry in self.operators.values():
            if entry.spec.accepts is not None and entry.spec.accepts(spec):
                return entry.spec
        return self._lookup(self.operators, "operator", spec)

    def cli_commands(self) -> list[Any]:
        """Click commands contributed by plugins (broken contributions are skipped)."""
        return [spec for spec, _ in self._collect("dei_cli_commands")]

    def _collect(self, hook: str) -> Iterable[tuple[Any, str]]:
        for impl in getattr(self.manager.hook, hook).get_hookimpls():
            plugin = self.manager.get_name(impl.plugin) or repr(impl.plugin)
            try:
                items = impl.function() or []
                yield from ((item, plugin) for item in items)
            except Exception as exc:  # a third party's bug must not take the CLI down
                self.problems.append(f"plugin {plugin!r} failed in {hook}: {exc!r}")

    def listing(self) -> dict[str, list[dict[str, Any]]]:
        """What ``dei plugins --json`` prints."""

        def rows(table: dict[str, Registered], extra=lambda spec: {}) -> list[dict[str, Any]]:
            return [
                {"name": name, "plugin": entry.plugin, **extra(entry.spec),
                 "description": getattr(entry.spec, "description", "")}
                for name, entry in sorted(table.items())
            ]  # fmt: skip

        return {
            "domains": rows(self.domains),
            "operators": rows(self.operators, lambda spec: {"offline": spec.offline}),
            "transports": rows(self.transports),
            "sharing": rows(self.sharing),
            "axes": rows(self.axes, lambda spec: {"domain": spec.domain}),
            "emitters": rows(self.emitters),
            "archives": rows(self.archives),
        }


def load_plugins(extra: Iterable[Any] = (), *, entry_points: bool = True) -> PluginRegistry:
    """Creates the plugin manager and the registry.

    Args:
        extra: Plugin objects or modules to register besides the entry points (for library
            use and tests).
        entry_points: Whether to load the ``dei_framework`` entry-point group.

    Returns:
        The registry; ``registry.problems`` lists plugins that failed (each message names the
        plugin and its distribution).
    """
    manager = pluggy.PluginManager("dei_framework")
    manager.add_hookspecs(hookspecs)
    manager.register(_builtin, name="dei_framework")
    problems: list[str] = []
    if entry_points:
        for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = entry_point.dist.name if entry_point.dist else entry_point.value
            name = _plugin_name(dist, entry_point.name)
            if manager.has_plugin(name):  # the same distribution found twice on sys.path
                continue
            try:
                manager.register(entry_point.load(), name=name)
            except Exception as exc:  # report, keep the other plugins
                problems.append(
                    f"plugin {entry_point.name!r} (from {dist}) could not be loaded: {exc!r}"
                )
    for plugin in extra:
        try:
            manager.register(plugin)
        except Exception as exc:
            problems.append(f"plugin {plugin!r} could not be registered: {exc!r}")

    registry = PluginRegistry(manager=manager, problems=problems)
    for hook, kind in REGISTRATION_HOOKS.items():
        table = registry._table(hook)
        for spec, plugin in registry._collect(hook):
            name = getattr(spec, "name", None)
            if not isinstance(name, str) or not name:
                registry.problems.append(f"plugin {plugin!r} registered a {kind} without a name")
            elif name in table:
                registry.problems.append(
                    f"plugin {plugin!r} registers {kind} {name!r}, already registered by "
                    f"{table[name].plugin!r}; keeping the first"
                )
            else:
                table[name] = Registered(spec=spec, plugin=plugin)
    return registry


def _plugin_name(dist: str, entry_name: str) -> str:
    """``distribution:entry`` when a distribution registers several plugins."""
    return dist if entry_name == dist else f"{dist}:{entry_name}"


def notify(registry: PluginRegistry, hook: str, **kwargs: Any) -> None:
    """Calls an observation hook on every plugin; a failing observer is reported, not fatal."""
    for impl in getattr(registry.manager.hook, hook).get_hookimpls():
        try:
            impl.function(**{name: kwargs[name] for name in impl.argnames})
        except Exception as exc:
            plugin = registry.manager.get_name(impl.plugin)
            message = f"plugin {plugin!r} failed in {hook}: {exc!r}"
            if message not in registry.problems:
                registry.problems.append(message)
                raise_warning(message)


def raise_warning(message: str) -> None:
    """Reports a plugin problem once on stderr without stopping the run."""
    import sys

    print(f"warning: {message}", file=sys.stderr)


__all__ = ["ENTRY_POINT_GROUP", "PluginError", "PluginRegistry", "Registered", "load_plugins"]
