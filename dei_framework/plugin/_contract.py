"""The plugin contract checked at load: implementations of unknown hooks, unknown arguments.

pluggy accepts an implementation of a hook nobody specified (it waits for a spec that may be
added later) and reports an unknown argument as a multi-line validation error. A plugin author
who misspells ``dei_round_ended`` as ``dei_round_end`` would see nothing at all: the plugin
loads and its hook never runs. These checks name the plugin, the hook and the nearest correct
name, in one line each, as ``registry.problems`` entries. A factory of a shape no longer
accepted is refused outright (:func:`old_factory_shape`): the plugin cannot work at all.
"""

from __future__ import annotations

import difflib
import inspect
import re
import types
from collections.abc import Iterable
from typing import Any

import attrs
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


#: The registration hooks whose factories took two arguments before every factory took one
#: context: what a factory of that kind now reads instead, and the page that shows it.
_ONE_ARGUMENT = {
    "dei_operators": ("settings", "settings.domain", "docs/writing-an-operator.md"),
    "dei_transports": ("ctx", "ctx.node_names and ctx.options", "docs/writing-a-transport.md"),
    "dei_evaluation_backends": ("options", "options.domain", "docs/multi-machine.md"),
}


def old_factory_shape(hook: str, kind: str, spec: object, plugin: str) -> str | None:
    """Why ``spec``'s factory is refused, or ``None``: a factory of a kind that now takes one
    context must not require a second positional argument (or take only ``*args``), as the
    shapes ``factory(settings, domain)``, ``factory(node_names, options)`` and
    ``factory(domain, options)`` did. Parameters with defaults do not count (``lambda ctx,
    name=name:`` binds a loop variable); a signature that cannot be read is left to the call.
    """
    if hook not in _ONE_ARGUMENT:
        return None
    factory = getattr(spec, "factory", None)
    try:
        parameters = list(inspect.signature(factory).parameters.values())  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p.name for p in parameters if p.kind in positional and p.default is p.empty]
    variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
    if len(required) < 2 and (required or not variadic):
        return None
    argument, reads, page = _ONE_ARGUMENT[hook]
    name = getattr(factory, "__name__", "<lambda>")
    called = "factory" if name == "<lambda>" else f"factory {name}"
    name = "factory" if name == "<lambda>" else name
    shape = ", ".join(required) if required else "*args"
    return (
        f"plugin {plugin!r}: {kind} {getattr(spec, 'name', '?')!r}: {called}({shape}) takes "
        f"the old shape; write {name}({argument}) and read {reads} (see {page})"
    )


# --- the contract as documented ------------------------------------------------------------------

#: The docstring sections every hook specification must have (pytest documents its hooks so).
REQUIRED_SECTIONS = ("Fires", "Returns")


@attrs.frozen(kw_only=True)
class HookDoc:
    """One hook specification as its docstring documents it.

    Attributes:
        name: The hook's name.
        signature: ``name(arg, ...)``.
        summary: The docstring's first sentence.
        historic: Whether the hook is historic (a late plugin still gets the call).
        firstresult: Whether the first non-``None`` answer ends the call.
        sections: Google-style sections by title (``Fires``, ``Args``, ``Returns`` ...), each
            section's text joined into one line (an ``Args`` section keeps one line per
            argument).
        arguments: The hook's argument names, in order.
    """

    name: str
    signature: str
    summary: str
    historic: bool
    firstresult: bool
    sections: dict[str, str]
    arguments: tuple[str, ...]

    def problems(self) -> list[str]:
        """What the docstring lacks: a required section, an argument's entry under ``Args``,
        the word a firstresult or historic hook must say of itself."""
        found = [
            f"{self.name}: no {title}: section"
            for title in REQUIRED_SECTIONS
            if not self.sections.get(title)
        ]
        documented = set(re.findall(r"^(\w+):", self.sections.get("Args", ""), re.MULTILINE))
        found += [
            f"{self.name}: argument {argument!r} is not documented under Args:"
            for argument in self.arguments
            if argument not in documented
        ]
        found += [
            f"{self.name}: Args: documents {argument!r}, which the hook does not take"
            for argument in sorted(documented - set(self.arguments))
        ]
        returns = self.sections.get("Returns", "")
        if returns and self.firstresult and "firstresult" not in returns:
            found.append(f"{self.name}: a firstresult hook whose Returns: does not say so")
        if returns and not self.firstresult and not re.search(r"ignored|collected", returns):
            found.append(
                f"{self.name}: Returns: says neither that results are collected nor "
                "that they are ignored"
            )
        if self.historic and not (
            "Historic" in self.sections.get("Fires", "")
            and "cannot be wrapped" in self.sections.get("Fires", "")
        ):
            found.append(
                f"{self.name}: a historic hook whose Fires: does not say it is historic "
                "and cannot be wrapped"
            )
        return found


def hook_docs(module: types.ModuleType) -> list[HookDoc]:
    """The hook specifications of ``module`` (marked with ``dei_framework``'s ``hookspec``), in
    the order they are defined, with their docstrings parsed.

    Args:
        module: A hookspec module (``dei_framework.plugin.hookspecs``, a plugin's own).
    """
    marker = "dei_framework_spec"  # the attribute pluggy's HookspecMarker sets
    docs = []
    for name, function in vars(module).items():
        options = getattr(function, marker, None)
        if options is None or not inspect.isfunction(function):
            continue
        arguments = tuple(inspect.signature(function).parameters)
        docstring = inspect.getdoc(function) or ""
        docs.append(
            HookDoc(
                name=name,
                signature=f"{name}({', '.join(arguments)})",
                summary=" ".join(docstring.split("\n\n")[0].split()),
                historic=bool(options.get("historic")),
                firstresult=bool(options.get("firstresult")),
                sections=_sections(docstring),
                arguments=arguments,
            )
        )
    return docs


def _sections(docstring: str) -> dict[str, str]:
    """Google-style sections of a docstring: ``Title:`` lines with an indented body."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in docstring.splitlines():
        heading = re.fullmatch(r"([A-Z]\w*):", line)
        if heading:
            current = sections.setdefault(heading.group(1), [])
        elif current is not None and line.startswith("    "):
            current.append(line[4:])
        elif line.strip():
            current = None
    return {title: _join(title, lines) for title, lines in sections.items()}


def _join(title: str, lines: list[str]) -> str:
    """A section's lines as one line, or for ``Args`` one line per argument."""
    if title != "Args":
        return " ".join(" ".join(lines).split())
    entries: list[str] = []
    for line in lines:
        if line.startswith(" ") and entries:
            entries[-1] += " " + line.strip()
        else:
            entries.append(line.strip())
    return "\n".join(entries)
