"""The pipes between the zygote and one child: reading its reply and its output without
blocking, and watching for its exit.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import os
import time

import attrs

#: Largest reply a child may send (a bigger one is a hostile child's).
MAX_REPLY = 16 * 1024 * 1024


@attrs.define
class Output:
    """What a child wrote to its standard output and error: the first ``cap`` bytes."""

    cap: int
    kept: bytearray = attrs.field(factory=bytearray)
    truncated: bool = False

    def drain(self, fd: int) -> bool:
        """Reads what ``fd`` holds now, keeping what fits (never blocks); whether it is
        closed (every writer gone). At most 1 MiB a call, so that a program printing without
        end cannot hold the zygote from its deadline."""
        for _ in range(16):
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:  # BlockingIOError: all read for now
                return False
            if not chunk:
                return True
            room = self.cap - len(self.kept)
            self.kept += chunk[: max(room, 0)]
            self.truncated = self.truncated or len(chunk) > room
        return False

    def fields(self) -> tuple[bytes, bool]:
        return bytes(self.kept), self.truncated


def exit_watch(pid: int) -> int:
    """A descriptor that becomes readable when ``pid`` exits: a pidfd (Linux 5.3), else one
    that is always readable, and :func:`reaped` polls."""
    global _PIDFD
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        _PIDFD = False
        read_end, write_end = os.pipe()
        os.close(write_end)  # at end of file: always readable
        return read_end


_PIDFD = True  # set by exit_watch: whether this system gives pidfds


def reaped(pid: int) -> bool:
    """Whether the child has exited, once its exit watch is readable (polled every few ms
    where there is no pidfd)."""
    if _PIDFD:
        return True
    time.sleep(0.002)
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def drain(fd: int, chunks: list[bytes]) -> tuple[int, bool]:
    """Reads what ``fd`` holds now into ``chunks``: how many bytes, and whether it is closed."""
    size = 0
    while size <= MAX_REPLY + 8:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            return size, False
        if not chunk:
            return size, True
        chunks.append(chunk)
        size += len(chunk)
    return size, False
