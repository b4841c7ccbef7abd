"""Following a JSON-lines file as it grows: each read parses only the complete lines appended.

A run's event log only grows, except when ``dei-run --resume`` cuts it back to its last
checkpoint. The tail remembers its offset and the bytes just before it; when the file is
shorter than the offset, or those bytes changed, the file was rewritten and the reader must
start again (``read`` raises :class:`Rewound`).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: Bytes before the offset compared on every read to notice a rewritten file.
_GUARD = 64


class Rewound(Exception):
    """The followed file was truncated or replaced; everything read from it is stale."""


class JsonlTail:
    """Reads the JSON objects appended to one file since the previous read.

    A partially written last line is left for a later read; a line that is not a JSON object
    (damaged by a crash) is skipped.

    Args:
        path: The file; a missing file reads as empty until it appears.

    Example:
        >>> tail = JsonlTail(Path("run/events.jsonl"))  # doctest: +SKIP
        >>> tail.read()  # every complete line so far  # doctest: +SKIP
        >>> tail.read()  # only what was appended since  # doctest: +SKIP
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        #: Bytes consumed so far (always at a line boundary).
        self.offset = 0
        #: Size of the file at the last read.
        self.size = 0
        self._guard = b""

    @property
    def behind(self) -> int:
        """Bytes known to be in the file but not read yet (as of the last read)."""
        return max(self.size - self.offset, 0)

    def read(self, max_bytes: int | None = None) -> list[dict[str, Any]]:
        """The objects of the complete lines appended since the last read.

        Args:
            max_bytes: As for :meth:`read_text`.

        Raises:
            Rewound: As for :meth:`read_text`.
        """
        return parse_lines(self.read_text(max_bytes))

    def read_text(self, max_bytes: int | None = None) -> str:
        """The complete lines appended since the last read, as text (``""`` if none).

        Args:
            max_bytes: Read at most about this many bytes (whole lines; at least one line), so
                a caller can bound the work of one call on a large file.

        Raises:
            Rewound: the file is shorter than what was read, or its bytes before the offset
                changed. The tail is reset to the start; the caller should rebuild its state.
        """
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError:
            if self.offset:
                self._reset()
                raise Rewound(f"{self.path} disappeared") from None
            return ""
        with handle:
            self.size = os.fstat(handle.fileno()).st_size
            if self.size < self.offset or not self._guard_holds(handle):
                self._reset()
                raise Rewound(f"{self.path} was rewritten")
            if self.size == self.offset:
                return ""
            handle.seek(self.offset)
            want = self.size - self.offset
            data = handle.read(want if max_bytes is None else min(want, max_bytes))
            end = data.rfind(b"\n")
            while end < 0 and max_bytes is not None and len(data) < want:
                # One line longer than max_bytes: read on to its end (or the file's).
                more = handle.read(max_bytes)
                if not more:
                    break
                data += more
                end = data.rfind(b"\n")
        if end < 0:
            return ""  # only a partial line so far
        complete = data[: end + 1]
        self.offset += len(complete)
        self._guard = (
            complete[-_GUARD:] if len(complete) >= _GUARD else (self._guard + complete)[-_GUARD:]
        )
        # Decoded once for all its lines (it ends at a line boundary, never inside a character).
        return complete.decode("utf-8", "replace")

    def _guard_holds(self, handle: Any) -> bool:
        if not self._guard:
            return True
        handle.seek(self.offset - len(self._guard))
        return handle.read(len(self._guard)) == self._guard

    def _reset(self) -> None:
        self.offset = self.size = 0
        self._guard = b""


def parse_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects of newline-separated ``text``; lines that are not objects are skipped."""
    objects = []
    loads = json.loads
    # Split on "\n" only, as the writer separates lines.
    for line in text.split("\n"):
        if not line or line.isspace():
            continue
        try:
            value = loads(line)
        except ValueError:
            continue
        if type(value) is dict:
            objects.append(value)
    return objects
