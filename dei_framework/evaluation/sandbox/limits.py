"""Per-candidate limits and the one-line reasons a stopped candidate is recorded with."""

from __future__ import annotations

import signal

import attrs

#: Prefixes of the reasons below: what the summary, the report and the watch page count.
STOP_KINDS = {
    "timeout": "timeout after ",
    "memory": "memory limit ",
    "killed": "killed by signal ",
    "sandbox": "evaluation failed: the sandbox ",
}


@attrs.frozen(kw_only=True)
class Limits:
    """What one candidate's evaluation may use.

    Attributes:
        timeout: Wall-clock seconds (``None``: no limit).
        memory_mb: Address space the candidate may add to the warm process it is forked from,
            in MB (``None``: no limit).
    """

    timeout: float | None = None
    memory_mb: int | None = None

    def to_json(self) -> dict[str, float | int | None]:
        return {"timeout": self.timeout, "memory_mb": self.memory_mb}


def timeout_message(seconds: float | None) -> str:
    return f"timeout after {seconds:.1f} s"


def memory_message(megabytes: int | None) -> str:
    return f"memory limit {megabytes} MB exceeded"


def signal_message(number: int) -> str:
    try:
        name = f" ({signal.Signals(number).name})"
    except ValueError:
        name = ""
    return f"killed by signal {number}{name}"


def stop_kind(error: str | None) -> str | None:
    """Which limit or sandbox failure an invalid candidate's reason names (``None``: none)."""
    if not error:
        return None
    for kind, prefix in STOP_KINDS.items():
        if error.startswith(prefix):
            return kind
    return None
