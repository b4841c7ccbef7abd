"""How a run evaluates candidates: the isolation level and limits, chosen from the options
and the domain's declarations."""

from __future__ import annotations

from typing import Any

import attrs

from dei_framework.contract.errors import ConfigError
from dei_framework.evaluation.sandbox.limits import Limits

#: ``none``: in the evaluation worker itself (today's path; for domains whose programs are
#: data). ``process``: each candidate in a child forked from a warm process. ``isolated``: as
#: ``process``, inside bubblewrap.
LEVELS = ("none", "process", "isolated")
#: Smallest memory limit accepted (below it even an empty program cannot run).
MIN_MEMORY_MB = 16
#: Per limit (a :class:`Limits` field): its option, the smallest whole number it accepts, and
#: what to give (the time limit, a number of seconds, is checked on its own).
WHOLE_LIMITS = {
    "memory_mb": ("--eval-memory", MIN_MEMORY_MB, "whole megabytes"),
    "file_mb": ("--eval-file-size", 0, "whole megabytes (0: no limit)"),
    "output_kb": ("--eval-output", 0, "whole kilobytes"),
    "processes": ("--eval-processes", 0, "a whole number of processes (0: no limit)"),
}


@attrs.frozen(kw_only=True)
class SandboxPolicy:
    """The isolation level and limits of a run's evaluations.

    Attributes:
        level: One of :data:`LEVELS`.
        limits: Per-candidate limits (only enforced at ``process`` and ``isolated``).
    """

    level: str = "none"
    limits: Limits = attrs.field(factory=Limits)

    @property
    def sandboxed(self) -> bool:
        """Whether candidates run in a child process (``process`` or ``isolated``)."""
        return self.level != "none"

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, **self.limits.to_json()}


def check_options(level: str, **limits: float | int | None) -> None:
    """Refuses impossible sandbox options (before anything runs).

    Args:
        level: ``--sandbox`` (empty: the domain's).
        limits: :class:`Limits` fields as given (``None``: not given).

    Raises:
        ConfigError: An unknown level, a limit out of range, or a limit with
            ``--sandbox none`` (nothing could enforce it).
    """
    if level not in ("", *LEVELS):
        raise ConfigError(f"--sandbox {level!r}: choose one of {', '.join(LEVELS)}")
    timeout = limits.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
    ):
        raise ConfigError(f"--eval-timeout {timeout!r}: give a number of seconds above 0")
    for name, (flag, least, unit) in WHOLE_LIMITS.items():
        value = limits.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < least
        ):
            floor = f", at least {least}" if least else ""
            raise ConfigError(f"{flag} {value!r}: give {unit}{floor}")
    given = [name for name, value in limits.items() if value is not None]
    if level == "none" and given:
        flag = "--eval-timeout" if "timeout" in given else WHOLE_LIMITS[given[0]][0]
        raise ConfigError(
            f"{flag} needs a sandbox to enforce it: use --sandbox process or "
            "isolated (or drop --sandbox none)"
        )
    if level == "isolated":
        from dei_framework.evaluation.sandbox.bubblewrap import find_bubblewrap

        find_bubblewrap()


def choose_policy(
    domain: Any,
    *,
    level: str = "",
    timeout: float | None = None,
    memory_mb: int | None = None,
    file_mb: int | None = None,
    output_kb: int | None = None,
    processes: int | None = None,
) -> SandboxPolicy:
    """The policy of a run of ``domain``: the options where given, else the domain's defaults,
    else :class:`Limits`' (``file_mb`` and ``processes`` of 0 turn those limits off).

    A domain that declares ``executes_code = True`` runs at ``process`` unless told otherwise;
    a limit given (or declared by the domain) without a level also means ``process``, since
    only a child process can be stopped from outside. ``domain`` may be ``None``: the options
    alone are checked and decide.

    Raises:
        ConfigError: See :func:`check_options`.
    """
    given = {
        "timeout": timeout,
        "memory_mb": memory_mb,
        "file_mb": file_mb,
        "output_kb": output_kb,
        "processes": processes,
    }
    check_options(level, **given)  # the user's own choices, as given
    if level == "none":  # turned off: the domain's declared limits go with it
        return SandboxPolicy()
    if given["timeout"] is None:
        given["timeout"] = getattr(domain, "eval_timeout", None)
    if given["memory_mb"] is None:
        given["memory_mb"] = getattr(domain, "eval_memory", None)
    if not level:
        limited = any(value is not None for value in given.values())
        level = "process" if getattr(domain, "executes_code", False) or limited else "none"
        if level == "none":
            return SandboxPolicy()
    check_options(level, **given)  # the domain's declarations too
    chosen = {name: value for name, value in given.items() if value is not None}
    for name in ("file_mb", "processes"):
        if chosen.get(name) == 0:  # asked to be off
            chosen[name] = None
    return SandboxPolicy(level=level, limits=Limits(**chosen))
