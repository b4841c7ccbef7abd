"""A record's JSON form, derived from its attrs fields: :func:`json_form` gives a class
``to_json()`` and ``from_json()``, so that what a file holds is declared once, by the record.

Each field is one key, named by the field's alias (its ``__init__`` name), in field order;
values are converted by the field's type: a record (a class with ``to_json``) nests as its
JSON, a tuple is a list, a mapping a dict, a string enum is read back as its member. Field
metadata (:func:`json_field`) says where a key is left out or where the unknown keys go.

The two methods are compiled once per class, on first use, into plain code (what one would
write by hand): an event is written per evaluation, and a generic walk such as
``attrs.asdict`` costs several times as much.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

__all__ = ["json_field", "json_form"]

T = TypeVar("T")

#: Metadata key: the field's JSON options (:func:`json_field`).
_KEY = "dei_json"


def json_field(
    *,
    when: str | None = None,
    omit_none: bool = False,
    extra: bool = False,
    skip: bool = False,
    inline: bool = False,
    **field_args: Any,
) -> Any:
    """An ``attrs.field`` with JSON options.

    Args:
        when: Write the key only when this attribute of the record is true.
        omit_none: Leave the key out when the value is ``None``.
        extra: The field holds the keys the record does not declare: written after the
            declared ones, and read from every unknown key.
        skip: Neither written nor read (state that is not part of the record's JSON).
        inline: The field is a record whose keys are written at this place, not nested
            (read back from the whole object).
        **field_args: ``attrs.field``'s arguments (``default``, ``factory``, ``eq``, ...).
    """
    options = {"when": when, "omit_none": omit_none, "extra": extra, "skip": skip}
    options["inline"] = inline
    return attrs.field(metadata={_KEY: options}, **field_args)


def json_form(*, tag: tuple[str, Any] | None = None) -> Callable[[type[T]], type[T]]:
    """A class decorator (above ``@attrs.frozen``) adding ``to_json()`` and the classmethod
    ``from_json(data)``.

    Args:
        tag: A constant first key and its value (``("event", EventKind.ROUND)``): written, and
            ignored on reading.
    """

    def decorate(cls: type[T]) -> type[T]:
        def to_json(self: Any) -> dict[str, Any]:
            return _compiled(cls, tag).to_json(self)  # type: ignore[no-any-return]

        def from_json(kind: type[T], data: Mapping[str, Any]) -> T:
            return _compiled(cls, tag).from_json(kind, data)  # type: ignore[no-any-return]

        to_json.__doc__ = f"{cls.__name__} as JSON (the keys its fields declare)."
        from_json.__doc__ = f"Reads a {cls.__name__} back from :meth:`to_json`'s form."
        cls.to_json = to_json  # type: ignore[attr-defined]
        cls.from_json = classmethod(from_json)  # type: ignore[attr-defined]
        return cls

    return decorate


def _compiled(cls: type, tag: tuple[str, Any] | None) -> Any:
    """The class's compiled methods, made on first use (the types are resolved then, when
    every name they mention exists) and installed on the class in place of the stubs."""
    forms = cls.__dict__.get("_json_methods")
    if forms is None:
        forms = _compile(cls, tag)
        cls._json_methods = forms  # type: ignore[attr-defined]
        cls.to_json = forms.to_json  # type: ignore[attr-defined]
        cls.from_json = classmethod(forms.from_json)  # type: ignore[attr-defined]
    return forms


def _options(field: attrs.Attribute) -> dict[str, Any]:
    return field.metadata.get(_KEY) or {}


def _compile(cls: type, tag: tuple[str, Any] | None) -> types.SimpleNamespace:
    hints = typing.get_type_hints(cls)
    names: dict[str, Any] = {"_tag": tag[1] if tag else None}
    write = ["def to_json(self):", "    data = {"]
    if tag:
        write.append(f"        {tag[0]!r}: _tag,")
    read = ["def from_json(cls, data):", "    kw = {}"]
    known = {tag[0]} if tag else set()
    opened, extra = True, None
    for index, field in enumerate(attrs.fields(cls)):
        options = _options(field)
        if options.get("skip"):
            continue
        if options.get("extra"):
            extra = field.alias
            continue
        key = field.alias
        attr = key if field.name.startswith("_") else field.name  # its public property
        out, back = _converters(hints[field.name], f"c{index}", names)
        if options.get("inline"):
            write += ["    }"] * opened + [f"    data.update(self.{attr}.to_json())"]
            opened = False
            read.append(f"    kw[{key!r}] = {back('data')}")
            known |= {f.alias for f in attrs.fields(hints[field.name])}
            continue
        known.add(key)
        value = out(f"self.{attr}")
        if options.get("when") or options.get("omit_none"):
            test = f"self.{options['when']}" if options.get("when") else f"{value} is not None"
            write += ["    }"] * opened + [f"    if {test}:", f"        data[{key!r}] = {value}"]
            opened = False
        elif opened:
            write.append(f"        {key!r}: {value},")
        else:
            write.append(f"    data[{key!r}] = {value}")
        if field.default is attrs.NOTHING:
            read.append(f"    kw[{key!r}] = {back(f'data[{key!r}]')}")
        else:
            read += [f"    if {key!r} in data:", f"        kw[{key!r}] = {back(f'data[{key!r}]')}"]
    write += ["    }"] * opened
    if extra:
        write.append(f"    data.update(self.{extra})")
        names["_known"] = frozenset(known)
        read.append(f"    kw[{extra!r}] = {{k: v for k, v in data.items() if k not in _known}}")
    write.append("    return data")
    read.append("    return cls(**kw)")
    exec("\n".join(write + read), names)  # noqa: S102 -- the code is built above, from fields
    return types.SimpleNamespace(to_json=names["to_json"], from_json=names["from_json"])


def _converters(
    hint: Any, name: str, names: dict[str, Any]
) -> tuple[Callable[[str], str], Callable[[str], str]]:
    """How a value of type ``hint`` is written and read back, as code on an expression."""
    options = typing.get_args(hint) if _is_union(hint) else ()
    if type(None) in options and len(options) == 2:
        out, back = _converters(next(o for o in options if o is not type(None)), name, names)
        if out("v") == "v" and back("v") == "v":
            return out, back
        return (
            lambda e: f"(None if {e} is None else {out(e)})",
            lambda e: f"(None if {e} is None else {back(e)})",
        )
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if _is_record(hint):
        names[name] = hint
        return (lambda e: f"{e}.to_json()"), (lambda e: f"{name}.from_json({e})")
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        names[name] = hint
        return (lambda e: e), (lambda e: f"{name}({e})")
    if origin is tuple:
        item = args[0] if args else Any
        if _is_record(item):
            names[name] = item
            return (
                lambda e: f"[i.to_json() for i in {e}]",
                lambda e: f"tuple({name}.from_json(i) for i in {e})",
            )
        return (lambda e: f"list({e})"), (lambda e: f"tuple({e})")
    if origin in (Mapping, dict):
        item = args[1] if len(args) == 2 else Any
        if _is_record(item):
            names[name] = item
            return (
                lambda e: f"{{k: i.to_json() for k, i in {e}.items()}}",
                lambda e: f"{{k: {name}.from_json(i) for k, i in {e}.items()}}",
            )
        return (lambda e: f"dict({e})"), (lambda e: e)
    return (lambda e: e), (lambda e: e)


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _is_record(hint: Any) -> bool:
    return isinstance(hint, type) and attrs.has(hint) and hasattr(hint, "to_json")
