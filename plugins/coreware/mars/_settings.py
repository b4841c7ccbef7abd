"""MARS settings (pMARS's command-line parameters), their validation and flag parsing."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

import attrs

from dei_framework.contract.errors import DEIError

#: Largest core the C simulator supports: core fields are stored in 16 bits.
MAX_CORESIZE = 65535
#: pMARS's MAXWARRIOR on 32-bit and larger platforms.
MAX_WARRIORS = 36
#: Upper bound on processes per warrior (the queue is allocated up front, 4 bytes each).
MAX_PROCESSES = 1 << 24


class MarsError(DEIError):
    """Invalid simulator settings or warriors the simulator cannot run."""


def _default_pspacesize(coresize: int) -> int:
    # pMARS: the largest coresize / i for i = 16, 15, ..., 1 that divides coresize exactly.
    for i in range(16, 0, -1):
        if coresize % i == 0:
            return coresize // i
    return coresize  # unreachable: i = 1 always divides


@attrs.frozen(kw_only=True)
class MarsSettings:
    """The parameters of a battle, named and defaulted as pMARS's '94 hill settings.

    Attributes:
        coresize: Core size (``-s``), at most 65535.
        cycles: Cycles before a tie (``-c``); pMARS runs ``cycles * warriors`` single steps.
        processes: Maximum processes per warrior (``-p``).
        maxlength: Maximum warrior length (``-l``).
        mindistance: Minimum distance between warriors (``-d``), at least ``maxlength``.
        rounds: Rounds per battle (``-r``).
        pspacesize: P-space size (``-S``); 0 means pMARS's default, the largest
            ``coresize / i`` (``i = 16 .. 1``) that divides the core, i.e. coresize/16 when it
            divides.
        read_limit: Read limit (``-R``), a divisor of coresize; ``None`` means coresize (no
            limit). Addresses are folded into ``[-limit/2, limit/2]`` around the executing
            instruction exactly as pMARS's ``foldr()``.
        write_limit: Write limit (``-W``), like ``read_limit`` (pMARS's ``foldw()``).
    """

    coresize: int = 8000
    cycles: int = 80000
    processes: int = 8000
    maxlength: int = 100
    mindistance: int = 100
    rounds: int = 1
    pspacesize: int = 0
    read_limit: int | None = None
    write_limit: int | None = None

    def __attrs_post_init__(self) -> None:
        def check(ok: bool, message: str) -> None:
            if not ok:
                raise MarsError(message)

        for name in (
            "coresize",
            "cycles",
            "processes",
            "maxlength",
            "mindistance",
            "rounds",
            "pspacesize",
        ):
            value = getattr(self, name)
            check(
                isinstance(value, int) and not isinstance(value, bool),
                f"{name} must be an integer, got {value!r}",
            )
        check(
            1 <= self.coresize <= MAX_CORESIZE,
            f"coresize must be between 1 and {MAX_CORESIZE}, got {self.coresize}",
        )
        check(self.cycles >= 1, f"cycles must be at least 1, got {self.cycles}")
        check(
            1 <= self.processes <= MAX_PROCESSES,
            f"processes must be between 1 and {MAX_PROCESSES}, got {self.processes}",
        )
        check(
            1 <= self.maxlength <= self.coresize,
            f"maxlength must be between 1 and coresize ({self.coresize}), got {self.maxlength}",
        )
        check(
            self.mindistance >= self.maxlength,
            f"mindistance ({self.mindistance}) must be at least maxlength "
            f"({self.maxlength}), as in pMARS",
        )
        check(self.rounds >= 0, f"rounds must not be negative, got {self.rounds}")
        check(
            0 <= self.pspacesize <= self.coresize,
            f"pspacesize must be between 0 (default) and coresize ({self.coresize}), "
            f"got {self.pspacesize}",
        )
        for name in ("read_limit", "write_limit"):
            value = getattr(self, name)
            if value is None:
                continue
            check(
                isinstance(value, int) and not isinstance(value, bool),
                f"{name} must be an integer or None, got {value!r}",
            )
            check(
                1 <= value <= self.coresize and self.coresize % value == 0,
                f"{name} must be a divisor of coresize ({self.coresize}), got {value}",
            )

    @property
    def effective_pspacesize(self) -> int:
        """The p-space size pMARS uses (``pspacesize`` or its default)."""
        return self.pspacesize or _default_pspacesize(self.coresize)

    @property
    def effective_read_limit(self) -> int:
        """The read limit in force (coresize when unlimited)."""
        return self.read_limit or self.coresize

    @property
    def effective_write_limit(self) -> int:
        """The write limit in force (coresize when unlimited)."""
        return self.write_limit or self.coresize

    def check_warriors(self, count: int) -> None:
        """Raises :class:`MarsError` unless ``count`` warriors fit these settings."""
        if not 1 <= count <= MAX_WARRIORS:
            raise MarsError(f"a battle needs 1 to {MAX_WARRIORS} warriors, got {count}")
        if self.coresize < count * self.mindistance:
            raise MarsError(
                f"coresize ({self.coresize}) is too small for {count} warriors "
                f"{self.mindistance} apart"
            )

    def to_flags(self) -> str:
        """The equivalent pMARS command-line flags."""
        flags = (
            f"-r {self.rounds} -s {self.coresize} -c {self.cycles} -p {self.processes} "
            f"-l {self.maxlength} -d {self.mindistance}"
        )
        if self.pspacesize:
            flags += f" -S {self.pspacesize}"
        if self.read_limit is not None:
            flags += f" -R {self.read_limit}"
        if self.write_limit is not None:
            flags += f" -W {self.write_limit}"
        return flags

    @classmethod
    def from_flags(cls, flags: str | Sequence[str], **overrides: int | None) -> MarsSettings:
        """Parses pMARS settings flags (``-r -s -c -p -l -d -S -R -W``).

        Args:
            flags: A string such as ``"-s 8000 -c 80000 -p 8000 -l 100 -d 100"`` or its
                tokens.
            **overrides: Settings applied on top of the parsed flags.

        Raises:
            MarsError: An unknown flag, a missing or non-integer value, or invalid settings.
        """
        names = {
            "-r": "rounds",
            "-s": "coresize",
            "-c": "cycles",
            "-p": "processes",
            "-l": "maxlength",
            "-d": "mindistance",
            "-S": "pspacesize",
            "-R": "read_limit",
            "-W": "write_limit",
        }
        tokens = shlex.split(flags) if isinstance(flags, str) else list(flags)
        values: dict[str, int | None] = {}
        i = 0
        while i < len(tokens):
            flag = tokens[i]
            if flag not in names:
                raise MarsError(f"unknown MARS flag {flag!r} (known: {', '.join(names)})")
            if i + 1 >= len(tokens):
                raise MarsError(f"flag {flag} needs a value")
            try:
                value = int(tokens[i + 1])
            except ValueError:
                raise MarsError(f"flag {flag} needs an integer, got {tokens[i + 1]!r}") from None
            values[names[flag]] = value
            i += 2
        # pMARS: -d 0 (its default) means "same as -l"; -R/-W 0 mean "no limit".
        if values.get("mindistance") == 0:
            values["mindistance"] = values.get("maxlength", cls.maxlength_default())
        for name in ("read_limit", "write_limit"):
            if values.get(name) == 0:
                values[name] = None
        values.update(overrides)
        return cls(**values)

    @staticmethod
    def maxlength_default() -> int:
        """pMARS's default ``-l``."""
        return 100
