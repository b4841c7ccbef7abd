"""The exception raised when Redcode source cannot be assembled."""

from __future__ import annotations

from dei_framework.contract.errors import InvalidProgram


class AssemblyError(InvalidProgram):
    """Redcode source that pMARS would reject (or that exceeds a safety limit).

    Attributes:
        line: 1-based source line the error was found on, or ``None`` when the error concerns
            the whole warrior (e.g. too many instructions).
        message: The bare message, without the ``line N:`` prefix.
    """

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}" if line is not None else message)
