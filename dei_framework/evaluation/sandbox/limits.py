"""Per-candidate limits and the one-line reasons a stopped candidate is recorded with."""

from __future__ import annotations

import signal

import attrs

#: Prefixes of the reasons below: what the summary, the report and the watch page count.
STOP_KINDS = {
    "timeout": "timeout after ",
    "memory": "memory limit ",
    "file": "file size limit ",
    "processes": "process limit ",
    "killed": "killed by signal ",
    "sandbox": "evaluation failed: the sandbox ",
}
#: Largest file a candidate may write, in MB, unless told otherwise (``RLIMIT_FSIZE``).
DEFAULT_FILE_MB = 64
#: Bytes of a candidate's standard output and error kept, in KB, unless told otherwise: they
#: are logged with the candidate (``events.jsonl``), so the cap is what one candidate adds.
DEFAULT_OUTPUT_KB = 64
#: Processes a candidate may have at once (itself included), unless told otherwise.
DEFAULT_PROCESSES = 64


@attrs.frozen(kw_only=True)
class Limits:
    """What one candidate's evaluation may use.

    Attributes:
        timeout: Wall-clock seconds (``None``: no limit).
        memory_mb: Address space the candidate may add to the warm process it is forked from,
            in MB (``None``: no limit).
        file_mb: Largest file it may write, in MB (``RLIMIT_FSIZE``; ``None``: no limit).
        output_kb: Bytes of its standard output and error kept, in KB; the rest is read and
            dropped, so the program never blocks on a full pipe.
        processes: Processes it may have at once, itself included (``None``: no limit).
    """

    timeout: float | None = None
    memory_mb: int | None = None
    file_mb: int | None = DEFAULT_FILE_MB
    output_kb: int = DEFAULT_OUTPUT_KB
    processes: int | None = DEFAULT_PROCESSES

    def to_json(self) -> dict[str, float | int | None]:
        return attrs.asdict(self)


def timeout_message(seconds: float | None) -> str:
    return f"timeout after {seconds:.1f} s"


def memory_message(megabytes: int | None) -> str:
    return f"memory limit {megabytes} MB exceeded"


def file_message(megabytes: int | None, cause: str) -> str:
    """``cause``: ``SIGXFSZ`` (the kernel's signal) or ``EFBIG`` (the write's error, where the
    program ignored the signal)."""
    return f"file size limit {megabytes} MB exceeded ({cause})"


def processes_message(count: int | None) -> str:
    return f"process limit {count} exceeded"


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
