"""One writer per run directory: an OS lock on a file in it, held for the process's life.

Every command that writes a run directory (``dei-run`` fresh, ``--resume`` and ``--replay``,
``dei node``, ``dei merge``, ``dei experiment``) takes the lock before it writes anything
else there and before it checks whether the directory already holds a run: so of two
commands started together on one directory, exactly one goes on and the other is refused,
whichever checked first. The lock is ``fcntl.flock`` on
:data:`~dei_framework.runtime.files.run_layout.LOCK_FILE`, so the kernel releases it when its
process ends, ``kill -9`` included; the file holds the holder's pid, for the refusal to name
it.

A process that already holds a directory's lock gets the same lock back (a lock is per open
file: a second ``flock`` in the same process would refuse itself).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

import attrs

from dei_framework.contract.errors import ConfigError
from dei_framework.runtime.files.run_layout import LOCK_FILE

#: How long a refused command waits for the holder to write its pid (it writes it right
#: after taking the lock; a refusal without the pid would name nobody).
_PID_WAIT_SECONDS = 1.0


class RunDirInUse(ConfigError):
    """Another process holds the run directory's lock (the message names its pid)."""


@attrs.define(eq=False)
class RunLock:
    """This process's lock on one run directory."""

    #: The run directory.
    directory: Path
    #: The open lock file (closing it releases the lock).
    fd: int
    #: True when taking the lock created the directory (see :meth:`abandon`).
    created: bool

    @property
    def path(self) -> Path:
        return self.directory / LOCK_FILE

    def release(self, *, remove: bool = False) -> None:
        """Releases the lock; ``remove`` deletes the lock file first (while still held, so no
        other process can be holding it). A process that locks the file concurrently finds
        it gone and takes a fresh one (see :func:`lock_run_dir`)."""
        if _HELD.get(_key(self.directory)) is not self:
            return
        del _HELD[_key(self.directory)]
        if remove:
            with contextlib.suppress(OSError):
                self.path.unlink()
        os.close(self.fd)

    def abandon(self) -> None:
        """Gives the directory up after a start that failed before writing a run: releases
        the lock, removes the lock file, and the directory too when taking the lock created
        it and nothing else is in it (a failed start leaves no directory behind)."""
        self.release(remove=True)
        if self.created:
            with contextlib.suppress(OSError):  # not empty: something else is there, keep it
                self.directory.rmdir()


#: The locks this process holds, by the directory's absolute path.
_HELD: dict[str, RunLock] = {}


def _key(directory: Path) -> str:
    return os.path.abspath(directory)


def held(directory: str | Path) -> RunLock | None:
    """This process's lock on ``directory``, if it holds one."""
    return _HELD.get(_key(Path(directory)))


def lock_run_dir(directory: str | Path) -> RunLock:
    """Takes the lock of a run directory (creating the directory) for this process's life.

    Args:
        directory: The run directory.

    Returns:
        The lock (the one this process already holds, if it does).

    Raises:
        RunDirInUse: Another process holds it; the message names its pid.
        ConfigError: The directory or its lock file cannot be created.
    """
    directory = Path(directory)
    known = held(directory)
    if known is not None:
        return known
    created = not directory.exists()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot create the run directory {directory}: {exc.strerror or exc}"
        ) from None
    path = directory / LOCK_FILE
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise ConfigError(
                f"cannot lock the run directory {directory}: {exc.strerror or exc}"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise RunDirInUse(
                f"{directory} is in use by another DEI process (pid {holder}); wait for it to "
                "end or stop it first"
            ) from None
        except OSError as exc:  # a filesystem without flock: say so rather than run unguarded
            os.close(fd)
            raise ConfigError(
                f"cannot lock the run directory {directory}: {exc.strerror or exc}"
            ) from None
        # The holder we waited on may have removed the file before releasing it (a failed
        # start): then our lock is on a file nobody else will see; take the one now there.
        if _same_file(fd, path):
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    lock = _HELD[_key(directory)] = RunLock(directory=directory, fd=fd, created=created)
    return lock


def _same_file(fd: int, path: Path) -> bool:
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


def _holder(fd: int) -> str:
    """The pid the lock's holder wrote (it writes it just after locking: wait a moment)."""
    deadline = time.monotonic() + _PID_WAIT_SECONDS
    while True:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        if text.isdigit() or time.monotonic() > deadline:
            return text if text.isdigit() else "unknown"
        time.sleep(0.01)
