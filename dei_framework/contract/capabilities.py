"""Capabilities a plugin class declares, rather than the core guessing them from which methods
it overrides (as pyribs declares an emitter's ``add_mode``).

A contract class lists what each capability needs (``{"array": ("propose_genomes",)}``) and
calls :func:`settle` from ``__init_subclass__``. A subclass declares ``capabilities =
frozenset({...})``: each must be known and its methods overridden, or the class is refused
when it is defined. So is a subclass that overrides a capability's methods without declaring it
(capabilities were once inferred from them): the core would never call those methods.

Internal: not public API (the public names are :mod:`dei_framework`'s; a plugin only sets
``capabilities``); anything here may change in any release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["settle"]


def settle(cls: type, base: type, needs: Mapping[str, Sequence[str]]) -> None:
    """Checks ``cls.capabilities``, a subclass of ``base``.

    Args:
        cls: The class being defined.
        base: The contract class whose methods are the defaults.
        needs: Per capability, the methods a class must override to have it.

    Raises:
        TypeError: A declared capability is unknown, or its methods are not overridden; or
            an undeclared capability's methods are overridden.
    """

    def overrides(capability: str) -> bool:
        return all(getattr(cls, name) is not getattr(base, name) for name in needs[capability])

    declared = cls.__dict__.get("capabilities")
    if declared is not None:
        declared = frozenset(declared)
        unknown = sorted(declared - needs.keys())
        if unknown:
            raise TypeError(
                f"{cls.__qualname__}.capabilities: unknown {', '.join(unknown)} "
                f"(known: {', '.join(sorted(needs))})"
            )
        for capability in sorted(declared):
            if not overrides(capability):
                raise TypeError(
                    f"{cls.__qualname__} declares {capability!r} but does not "
                    f"implement {', '.join(needs[capability])}"
                )
        cls.capabilities = declared  # type: ignore[attr-defined]
        return
    inherited = frozenset(getattr(cls, "capabilities", frozenset()))
    overridden = frozenset(capability for capability in needs if overrides(capability))
    if overridden - inherited:
        names = ", ".join(repr(name) for name in sorted(overridden | inherited))
        raise TypeError(
            f"{cls.__module__}.{cls.__qualname__} overrides {base.__name__} methods without "
            f"declaring them: set capabilities = frozenset({{{names}}})"
        )
