"""The registry of what plugins provide, and how the core calls plugin hooks through pluggy.

Every hook is called through pluggy (``manager.hook.<name>`` or, to call one plugin's
implementations, ``manager.subset_hook_caller``), so ``tryfirst`` / ``trylast``, registration
order and hook wrappers behave as pluggy documents. Two kinds of hooks:

* **Registration hooks** (``dei_domains``, ``dei_operators``, ...) are called once per plugin,
  each plugin through its own subset caller, so every registered item is attributed to the
  plugin that registered it and a broken plugin loses only its own registrations.
* **Observation hooks** (``dei_candidate_evaluated``, ...) are called once for all plugins with
  :meth:`PluginRegistry.notify`. A failing observer is caught by the core's guard wrapper
  (:class:`ObserverGuard`, the outermost wrapper), reported once naming its plugin, and left
  out of that hook for the rest of the process; the run goes on.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import attrs
import pluggy

from dei_framework.contract.errors import ConfigError

if TYPE_CHECKING:
    import click

#: The public names (``PluginRegistry`` is re-exported by ``dei_framework``); the rest serves
#: ``plugin/manager.py``.
__all__ = ["Kind", "PluginRegistry", "PluginSpec", "Registered"]

#: Registration hooks: the hook, the kind of thing it registers (for messages), its table.
REGISTRATION_HOOKS: dict[str, tuple[str, str]] = {
    "dei_domains": ("domain", "domains"),
    "dei_operators": ("operator", "operators"),
    "dei_transports": ("transport", "transports"),
    "dei_sharing_policies": ("sharing policy", "sharing"),
    "dei_budget_allocators": ("budget allocator", "allocators"),
    "dei_descriptor_axes": ("descriptor axis", "axes"),
    "dei_parent_selectors": ("parent selector", "selectors"),
    "dei_archives": ("archive", "archives"),
    "dei_evaluation_backends": ("evaluation backend", "evaluators"),
    "dei_run_options": ("run option", "run_options"),
}
#: Observation hooks: called for every plugin, results ignored, failures isolated.
OBSERVATION_HOOKS = (
    "dei_candidate_evaluated",
    "dei_round_ended",
    "dei_champion_received",
    "dei_run_finished",
)


class PluginSpec(Protocol):
    """What every registered thing has: the name users select it by."""

    @property
    def name(self) -> str: ...


#: The spec type of one kind of registration (``DomainSpec``, ``OperatorSpec``, ...).
SpecT = TypeVar("SpecT")


@attrs.frozen
class Registered(Generic[SpecT]):
    """One thing a plugin registered, with the plugin it came from."""

    spec: SpecT
    plugin: str


@attrs.frozen
class Kind(Generic[SpecT]):
    """One kind of registration, typed by its spec: the key of a typed lookup.

    Each spec's module declares its kind next to it (``DOMAINS: Kind[DomainSpec]`` in
    :mod:`~dei_framework.contract.domain`, ``SHARING_POLICIES`` in
    :mod:`~dei_framework.search.sharing`, ...), so ``registry.lookup(DOMAINS, name)`` is a
    ``DomainSpec`` to a type checker, while this module names no spec type (the specs' modules
    sit above it: the context every factory receives refers to this registry).

    Attributes:
        hook: The registration hook, a key of :data:`REGISTRATION_HOOKS`.
    """

    hook: str

    @property
    def label(self) -> str:
        """The kind's name in messages (``"sharing policy"``)."""
        return REGISTRATION_HOOKS[self.hook][0]

    @property
    def table(self) -> str:
        """The registry's attribute holding this kind (``"sharing"``)."""
        return REGISTRATION_HOOKS[self.hook][1]


@attrs.define
class PluginRegistry:
    """Everything registered by the loaded plugins, by kind and name.

    Attributes:
        manager: The pluggy manager; hooks are called through ``manager.hook``.
        problems: One message per plugin fault (failed to load, to register, or an observer
            that raised), each naming the plugin.
    """

    manager: pluggy.PluginManager
    domains: dict[str, Registered[PluginSpec]] = attrs.Factory(dict)
    operators: dict[str, Registered[PluginSpec]] = attrs.Factory(dict)
    transports: dict[str, Registered[PluginSpec]] = attrs.Factory(dict)
    sharing: dict[str, Registered[PluginSpec]] = attrs.Factory(dict)
    allocators: dict[str, Registered[PluginSpec]] = attrs.Factory(dict)
    axes: dict[str, Registered[PluginSpec]] = attrs.Factory(dict)
    selectors: dict[str, Registered[PluginSpec]] = attrs.Factory(dict)
    archives: dict[str, Registered[PluginSpec]] = attrs.Factory(dict)
    evaluators: dict[str, Registered[PluginSpec]] = attrs.Factory(dict)
    run_options: dict[str, Registered[PluginSpec]] = attrs.Factory(dict)
    problems: list[str] = attrs.Factory(list)
    #: Plugins left out of an observation hook after they raised in it, by hook name.
    _muted: dict[str, list[object]] = attrs.Factory(dict)
    #: The plugin that failed in the call of a hook under way (see :meth:`notify`).
    _failed: dict[str, object] = attrs.Factory(dict)

    # --- lookups ---------------------------------------------------------------------------------

    def entries(self, kind: Kind[SpecT]) -> dict[str, Registered[SpecT]]:
        """Everything of ``kind`` registered, by name, each with the plugin that registered it."""
        table: dict[str, Registered[SpecT]] = getattr(self, kind.table)
        return table

    def lookup(self, kind: Kind[SpecT], name: str) -> SpecT:
        """The spec of ``kind`` called ``name``, typed as the kind's spec.

        An exact name wins; otherwise the first spec whose ``accepts`` predicate claims the name
        (operator families claim model strings such as ``provider/model``).

        Raises:
            ConfigError: Nothing of ``kind`` is called ``name``; the message lists what is
                registered, and the plugin problems, if any.
        """
        table = self.entries(kind)
        if name in table:
            return table[name].spec
        for entry in table.values():
            accepts = getattr(entry.spec, "accepts", None)
            if accepts is not None and accepts(name):
                return entry.spec
        known = ", ".join(sorted(table)) or "none"
        hint = f" (plugin problems: {'; '.join(self.problems)})" if self.problems else ""
        raise ConfigError(f"unknown {kind.label} {name!r}; registered: {known}{hint}")

    # The lookups by kind name, as before :meth:`lookup`; a type checker sees a
    # :class:`PluginSpec` (this module cannot name the specs), ``lookup(KIND, name)`` the spec.

    def domain(self, name: str) -> PluginSpec:
        """The :class:`~dei_framework.contract.domain.DomainSpec` called ``name``."""
        return self.lookup(Kind("dei_domains"), name)

    def transport(self, name: str) -> PluginSpec:
        """The :class:`~dei_framework.contract.transport.TransportSpec` called ``name``."""
        return self.lookup(Kind("dei_transports"), name)

    def sharing_policy(self, name: str) -> PluginSpec:
        """The :class:`~dei_framework.search.sharing.SharingSpec` called ``name``."""
        return self.lookup(Kind("dei_sharing_policies"), name)

    def allocator(self, name: str) -> PluginSpec:
        """The :class:`~dei_framework.search.allocation.AllocatorSpec` called ``name``."""
        return self.lookup(Kind("dei_budget_allocators"), name)

    def selector(self, name: str) -> PluginSpec:
        """The :class:`~dei_framework.search.selectors.SelectorSpec` (a parent selector) called
        ``name``."""
        return self.lookup(Kind("dei_parent_selectors"), name)

    def archive(self, name: str) -> PluginSpec:
        """The :class:`~dei_framework.search.archives.ArchiveSpec` called ``name``."""
        return self.lookup(Kind("dei_archives"), name)

    def evaluator(self, name: str) -> PluginSpec:
        """The :class:`~dei_framework.contract.backend.EvaluatorSpec` called ``name``."""
        return self.lookup(Kind("dei_evaluation_backends"), name)

    def operator(self, spec: str) -> PluginSpec:
        """The :class:`~dei_framework.contract.operators.OperatorSpec` serving ``--operator spec``.

        An exact name wins; otherwise the first operator family whose ``accepts`` claims it.
        """
        return self.lookup(Kind("dei_operators"), spec)

    def cli_commands(self) -> list[click.Command]:
        """Click commands contributed by plugins (broken contributions are skipped)."""
        return [spec for spec, _ in self.collect("dei_cli_commands")]

    # --- calling hooks ---------------------------------------------------------------------------

    def collect(self, hook: str, **kwargs: object) -> Iterator[tuple[object, str]]:
        """Calls a hook that returns lists, plugin by plugin; yields ``(item, plugin name)``.

        Each plugin is called through ``manager.subset_hook_caller`` (pluggy's way to call a
        hook on some plugins only), so its own wrappers and options apply. A plugin whose
        implementation raises, or returns something other than a list, is reported in
        :attr:`problems`; the other plugins' items are still collected.
        """
        caller = getattr(self.manager.hook, hook, None)
        if caller is None:  # a hook added by a plugin that is not installed
            return
        plugins = [impl.plugin for impl in caller.get_hookimpls()]
        for plugin in dict.fromkeys(reversed(plugins)):  # pluggy's call order, once per plugin
            name = self.plugin_name(plugin)
            others = [other for other in plugins if other is not plugin]
            try:
                results = self.manager.subset_hook_caller(hook, remove_plugins=others)(**kwargs)
                items = [item for result in results for item in _as_list(result)]
            except Exception as exc:  # a third party's bug must not take the others down
                self.problems.append(f"plugin {name!r} failed in {hook}: {exc!r}")
                continue
            yield from ((item, name) for item in items)

    def observed(self, hook: str) -> bool:
        """Whether a plugin implements observation hook ``hook`` (and is not muted for it): a
        caller with many events to report asks once, not per event."""
        muted = self._muted.get(hook) or ()
        return any(
            impl.plugin_name != GUARD_NAME and impl.plugin not in muted
            for impl in getattr(self.manager.hook, hook).get_hookimpls()
        )

    def notify(self, hook: str, **kwargs: object) -> None:
        """Calls an observation hook on every plugin; a failing observer never stops the caller.

        The call goes through ``manager.hook`` (pluggy's order and wrappers apply). A plugin
        that raised is reported once and muted for this hook from then on, and the observers
        pluggy had not reached when it raised are called with the same event: one plugin's
        bug costs no other plugin an event.
        """
        muted = self._muted.get(hook)
        caller = (
            self.manager.subset_hook_caller(hook, remove_plugins=muted)
            if muted
            else getattr(self.manager.hook, hook)
        )
        while True:
            # Only the guard (no observer): nothing to call. The search notifies once per
            # evaluation, and pluggy's call with the guard alone costs as much as a small event.
            impls = caller.get_hookimpls()
            if all(impl.plugin_name == GUARD_NAME for impl in impls):
                return
            self._failed.pop(hook, None)  # one set by a call of the hook outside notify
            try:
                caller(**kwargs)
            except Exception as exc:  # a wrapper outside the guard raised
                self.observer_failed(hook, exc)
            failed = self._failed.pop(hook, None)
            if failed is None:  # the usual case: no list is built per event
                return
            called = [impl.plugin for impl in impls if impl.plugin_name != GUARD_NAME]
            if failed not in called:
                return
            # pluggy calls the last implementation first: those before the culprit in the
            # list had not been called yet.
            waiting = called[: called.index(failed)]
            caller = self.manager.subset_hook_caller(
                hook,
                remove_plugins=[
                    plugin
                    for plugin in self.manager.get_plugins()
                    if plugin not in waiting and self.plugin_name(plugin) != GUARD_NAME
                ],
            )

    def observer_failed(self, hook: str, exc: BaseException) -> None:
        """Reports a failing observer once (on stderr and in :attr:`problems`) and mutes it."""
        plugin = self._culprit(hook, exc.__traceback__)
        name = self.plugin_name(plugin) if plugin is not None else "unknown"
        message = f"plugin {name!r} failed in {hook}: {exc!r}; its {hook} is disabled"
        if plugin is not None:
            self._muted.setdefault(hook, []).append(plugin)
            self._failed[hook] = plugin
        if message not in self.problems:
            self.problems.append(message)
            print(f"warning: {message}", file=sys.stderr)

    def _culprit(self, hook: str, traceback: TracebackType | None) -> object | None:
        """The plugin whose implementation of ``hook`` raised: the innermost implementation on
        the stack (a wrapper that merely let the exception through is further out). Plugins
        that are instances of one class share its code: the frame's ``self`` tells them apart."""
        guard = self.manager.get_plugin(GUARD_NAME)
        impls: dict[object, list[object]] = {}
        for impl in getattr(self.manager.hook, hook).get_hookimpls():
            if hasattr(impl.function, "__code__") and impl.plugin is not guard:
                impls.setdefault(impl.function.__code__, []).append(impl.plugin)
        culprit = None
        while traceback is not None:
            plugins = impls.get(traceback.tb_frame.f_code, [])
            if len(plugins) == 1:
                culprit = plugins[0]
            elif plugins:
                owner = traceback.tb_frame.f_locals.get("self")
                culprit = next((plugin for plugin in plugins if plugin is owner), culprit)
            traceback = traceback.tb_next
        return culprit

    def plugin_name(self, plugin: object) -> str:
        """The name a plugin was registered under."""
        return self.manager.get_name(plugin) or repr(plugin)

    # --- listing ---------------------------------------------------------------------------------

    def listing(self) -> dict[str, list[dict[str, object]]]:
        """What ``dei plugins --json`` prints."""

        def rows(table: dict[str, Registered], extra=lambda spec: {}) -> list[dict[str, object]]:
            return [
                {
                    "name": name,
                    "plugin": entry.plugin,
                    **extra(entry.spec),
                    "description": getattr(entry.spec, "description", ""),
                }
                for name, entry in sorted(table.items())
            ]

        return {
            "domains": rows(self.domains),
            "operators": rows(self.operators, lambda spec: {"offline": spec.offline}),
            "transports": rows(self.transports),
            "sharing": rows(self.sharing),
            "allocators": rows(self.allocators),
            "axes": rows(self.axes, lambda spec: {"domain": spec.domain}),
            "selectors": rows(self.selectors),
            "archives": rows(self.archives),
            "evaluators": rows(self.evaluators),
        }


def _as_list(result: object) -> Iterable[object]:
    if not isinstance(result, list | tuple):
        raise TypeError(f"expected a list, got {type(result).__name__}")
    return result


#: The name the observer guard is registered under.
GUARD_NAME = "dei_framework.guard"


class ObserverGuard:
    """The core's wrapper around every observation hook: a failing observer is reported once
    and muted, and never reaches the caller (the search loop, the node, the run).

    Registered after the plugins, ``tryfirst``, so it is the outermost wrapper.
    """

    def __init__(self, registry: PluginRegistry) -> None:
        self.registry = registry


def _guard(hook: str):
    def wrapper(self: ObserverGuard):
        try:
            return (yield)
        except Exception as exc:
            self.registry.observer_failed(hook, exc)
            return None

    wrapper.__name__ = hook
    return pluggy.HookimplMarker("dei_framework")(wrapper=True, tryfirst=True)(wrapper)


for _hook in OBSERVATION_HOOKS:
    setattr(ObserverGuard, _hook, _guard(_hook))
