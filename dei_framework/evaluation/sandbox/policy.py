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


def check_options(level: str, timeout: float | None, memory_mb: int | None) -> None:
    """Refuses impossible sandbox options (before anything runs).

    Raises:
        ConfigError: An unknown level, a limit that is not positive, or a limit with
            ``--sandbox none`` (nothing could enforce it).
    """
    if level not in ("", *LEVELS):
        raise ConfigError(f"--sandbox {level!r}: choose one of {', '.join(LEVELS)}")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
    ):
        raise ConfigError(f"--eval-timeout {timeout!r}: give a number of seconds above 0")
    if memory_mb is not None and (
        isinstance(memory_mb, bool) or not isinstance(memory_mb, int) or memory_mb < MIN_MEMORY_MB
    ):
        raise ConfigError(
            f"--eval-memory {memory_mb!r}: give whole megabytes, at least {MIN_MEMORY_MB}"
        )
    if level == "none" and (timeout is not None or memory_mb is not None):
        flag = "--eval-timeout" if timeout is not None else "--eval-memory"
        raise ConfigError(
            f"{flag} needs a sandbox to enforce it: use --sandbox process or "
            "isolated (or drop --sandbox none)"
        )
    if level == "isolated":
        from dei_framework.evaluation.sandbox.bubblewrap import find_bubblewrap

        find_bubblewrap()


def choose_policy(
    domain: Any, *, level: str = "", timeout: float | None = None, memory_mb: int | None = None
) -> SandboxPolicy:
    """The policy of a run of ``domain``: the options where given, else the domain's defaults.

    A domain that declares ``executes_code = True`` runs at ``process`` unless told otherwise;
    a limit given (or declared by the domain) without a level also means ``process``, since
    only a child process can be stopped from outside.

    Raises:
        ConfigError: See :func:`check_options`.
    """
    check_options(level, timeout, memory_mb)  # the user's own choices, as given
    if level == "none":  # turned off: the domain's declared limits go with it
        return SandboxPolicy()
    timeout = timeout if timeout is not None else getattr(domain, "eval_timeout", None)
    memory_mb = memory_mb if memory_mb is not None else getattr(domain, "eval_memory", None)
    if not level:
        limited = timeout is not None or memory_mb is not None
        level = "process" if getattr(domain, "executes_code", False) or limited else "none"
        if level == "none":
            return SandboxPolicy()
    check_options(level, timeout, memory_mb)  # the domain's declarations too
    return SandboxPolicy(level=level, limits=Limits(timeout=timeout, memory_mb=memory_mb))
