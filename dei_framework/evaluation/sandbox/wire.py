"""The frames the sandbox's processes exchange, and the restricted reading of what comes back.

A frame is a 4-byte big-endian length and a pickle. What travels *into* a sandbox (the domain,
opponent sets, jobs) is the run's own data and is read with plain :mod:`pickle`. What comes
*out* was written by a process that ran an untrusted program, which can write anything to any
descriptor it holds: :func:`loads_untrusted` reads it with an unpickler that builds only plain
data (numbers, strings, bytes, containers and numpy arrays), never calls a function, and never
imports a module, so a forged reply is at worst a wrong result, never code run outside.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
from typing import Any

#: Largest frame either side accepts: a reply beyond it is a hostile or broken child's.
MAX_FRAME = 64 * 1024 * 1024
_LENGTH = struct.Struct(">I")

#: The only globals an untrusted reply may name: harmless constructors of plain values (numpy
#: arrays and scalars pickle through these; the numpy module moved from ``core`` to ``_core``).
_ALLOWED = {
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "complex"),
    ("builtins", "bytearray"),
    ("builtins", "slice"),
    ("builtins", "range"),
    ("collections", "OrderedDict"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
}


class FrameError(Exception):
    """A frame that is cut short, too large, or not plain data."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise FrameError(f"a reply named {module}.{name}, which only code would need")
        return super().find_class(module, name)


def dumps(value: Any) -> bytes:
    """``value`` pickled (for trusted data, and for replies read by :func:`loads_untrusted`)."""
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def loads_untrusted(data: bytes) -> Any:
    """Plain data from bytes an untrusted process wrote.

    Raises:
        FrameError: The bytes are not a pickle of plain data.
    """
    try:
        return _PlainUnpickler(io.BytesIO(data)).load()
    except FrameError:
        raise
    except Exception as exc:  # noqa: BLE001 - any damage is the writer's, reported as such
        raise FrameError(f"an unreadable reply ({type(exc).__name__})") from None


def write_frame(fd: int, payload: bytes) -> None:
    """Writes one frame to the file descriptor ``fd`` (blocking until it is all written)."""
    view = memoryview(_LENGTH.pack(len(payload)) + payload)
    while view:
        view = view[os.write(fd, view) :]


def read_exactly(fd: int, size: int) -> bytes:
    """``size`` bytes from ``fd``.

    Raises:
        EOFError: The writer closed its end first.
    """
    chunks, missing = [], size
    while missing:
        chunk = os.read(fd, min(missing, 1 << 20))
        if not chunk:
            raise EOFError("the other end closed")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> bytes:
    """One frame's payload from ``fd``.

    Raises:
        EOFError: The writer closed its end.
        FrameError: The frame is larger than :data:`MAX_FRAME`.
    """
    (size,) = _LENGTH.unpack(read_exactly(fd, _LENGTH.size))
    if size > MAX_FRAME:
        raise FrameError(f"a frame of {size} bytes (at most {MAX_FRAME})")
    return read_exactly(fd, size)
