"""A run's membership: the keys allowed to sign champions, and the names bound to them.

Parsed from ``--member``/``members`` entries (``key`` or ``name=key``) by
:func:`parse_membership`; the inbox filter drops what a non-member signs, or what a member
signs under a name that is not its own. Re-exported by :mod:`dei_framework.net.envelope`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from dei_framework.net._wire import HEX64, MAX_NAME_CHARS, EnvelopeError

#: A name a membership entry may bind: what ``--nodes``/``[[node]]`` names look like, bounded,
#: and free of the separators of the string form (whitespace, ``,``) and of ``=``.
_MEMBER_NAME = re.compile(rf"[^\s,=]{{1,{MAX_NAME_CHARS}}}")


@attrs.frozen
class Membership:
    """A run's membership: the keys allowed to sign champions, and the names bound to them.

    Behaves as the set of its keys (``key in membership``, iteration, ``len``), so code that
    only asks "is this key a member" does not care about names.

    Attributes:
        keys: The members' ed25519 public keys (64 lowercase hex).
        names: ``{key: name}`` for the entries written ``name=key``: such a key may sign only
            champions that name it, and no other key may claim that name. Keys listed alone
            are bound to no name (they may claim any name not bound to another key).
    """

    keys: frozenset[str]
    names: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def bound_names(self) -> frozenset[str]:
        """The names some key is bound to."""
        return frozenset(self.names.values())

    def entries(self) -> tuple[str, ...]:
        """The normalised entries, sorted: ``name=key`` for bound keys, ``key`` for others."""
        return tuple(
            sorted(f"{self.names[key]}={key}" if key in self.names else key for key in self.keys)
        )

    def __contains__(self, key: object) -> bool:
        return key in self.keys

    def __iter__(self):
        return iter(sorted(self.keys))

    def __len__(self) -> int:
        return len(self.keys)


def parse_membership(value: Any) -> Membership | None:
    """Parses a membership list: ``None``/empty = open run, else entries ``key`` or ``name=key``.

    Args:
        value: A :class:`Membership`, a sequence of entries, or one string of entries
            separated by commas or whitespace. A key is 64 hex characters (case ignored); a
            name is 1 to :data:`MAX_NAME_CHARS` characters without whitespace, ``,`` or ``=``.

    Raises:
        EnvelopeError: reason ``identity``: an entry is not a key or ``name=key``, or one name
            is bound to two keys, or one key to two names.
    """
    if value is None or isinstance(value, Membership):
        return value
    if isinstance(value, str):
        value = [v for v in re.split(r"[\s,]+", value) if v]
    keys: set[str] = set()
    names: dict[str, str] = {}
    for item in value:
        text = str(item).strip()
        name, sep, key = text.rpartition("=")
        key = key.strip().lower()
        name = name.strip()
        if not HEX64.fullmatch(key):
            raise EnvelopeError(
                f"membership entry {item!r} is not a 64-hex ed25519 public key (or name=key)",
                "identity",
            )
        if sep and not _MEMBER_NAME.fullmatch(name):
            raise EnvelopeError(
                f"membership entry {item!r}: the name must be 1 to {MAX_NAME_CHARS} characters "
                "without whitespace, ',' or '='",
                "identity",
            )
        if sep:
            if names.get(key, name) != name:
                raise EnvelopeError(
                    f"membership: key {key} is bound to two names, {names[key]!r} and {name!r}",
                    "identity",
                )
            names[key] = name
        keys.add(key)
    owners: dict[str, str] = {}
    for key, name in names.items():
        # One name, one key: otherwise either key could speak for the name.
        if owners.setdefault(name, key) != key:
            raise EnvelopeError(f"membership: name {name!r} is bound to two keys", "identity")
    return Membership(frozenset(keys), names) if keys else None


def parse_members(value: Any) -> frozenset[str] | None:
    """The member keys of a membership list (``None``/empty = open); see :func:`parse_membership`.

    Raises:
        EnvelopeError: an entry is not a 64-hex ed25519 public key or ``name=key``
            (reason ``identity``).
    """
    membership = parse_membership(value)
    return None if membership is None else membership.keys
