"""The processes a candidate starts, found and ended by the warm process that forked it.

A candidate may start processes and leave them behind, even out of its process group (a
daemon: ``setsid``, ``fork``, the parent exits). The warm process is a *child subreaper*
(Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): an orphan of any of its descendants is re-parented
to it, not to init, so a process belongs to the candidate exactly when its chain of parents
reaches the warm process and it was created after the candidate's job came in.
:class:`Family` lists those processes from ``/proc`` (reading only the entries newer than the
job, by the pid namespace's last pid), counts them for the process limit, and kills them all.

The kernel's own process limit, ``RLIMIT_NPROC``, cannot serve: it counts every process of
the user (a limit of 64 fails at once on a desktop with hundreds), and it is not enforced for
root at all, which is how CI runs. Counting from outside lets a fork bomb overshoot the limit
by what it forks in :data:`WATCH_SECONDS` before it is killed.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import sys
from collections.abc import Callable

#: Seconds between two counts of a running candidate's processes (only under a process limit;
#: an evaluation shorter than this is never woken for it).
WATCH_SECONDS = 0.01
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_LAST_PID = "/proc/sys/kernel/ns_last_pid"


@functools.cache
def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent() -> None:
    """Makes this process receive ``SIGKILL`` when its parent dies (Linux; else nothing)."""
    prctl = _prctl()
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def become_subreaper() -> bool:
    """Makes orphaned descendants of this process its children (Linux 3.4); whether it did."""
    prctl = _prctl()
    return prctl is not None and prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def last_pid() -> int:
    """The pid last given out in this pid namespace (0 where the kernel does not say)."""
    try:
        with open(_LAST_PID, "rb") as file:
            return int(file.read())
    except (OSError, ValueError):
        return 0


def _parent(pid: int) -> tuple[int, bool] | None:
    """``pid``'s parent and whether it is a zombie (``None``: gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            data = file.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split(b" ", 2)  # the name may hold anything
    return int(fields[1]), fields[0] == b"Z"


class Family:
    """The processes of one candidate: its child ``leader`` and every process created since
    ``since`` (a :func:`last_pid`) whose parents lead to ``leader`` or to this process.

    Args:
        leader: The candidate's child (forked before its job came in).
        since: :func:`last_pid` when its job came in.
    """

    def __init__(self, leader: int, since: int) -> None:
        self.leader = leader
        self.since = since
        self.root = os.getpid()
        #: The last count and the :func:`last_pid` it was made at: while no process has been
        #: created since, the count cannot have grown, and /proc is not read again.
        self._counted: tuple[int, int] | None = None

    def members(self) -> dict[int, tuple[int, bool]]:
        """Per process of the candidate: its parent and whether it is a zombie."""
        last = last_pid()
        if last == self.since and self.since:  # nothing was created in the namespace
            found = _parent(self.leader)
            return {} if found is None else {self.leader: found}
        wrapped = last < self.since or not self.since  # the pids came round, or unknown
        parents = {}
        for name in os.listdir("/proc"):
            if name.isdigit() and (wrapped or int(name) > self.since or int(name) == self.leader):
                found = _parent(int(name))
                if found is not None:
                    parents[int(name)] = found
        members = {}
        ends = (self.leader, self.root)
        for pid, found in parents.items():
            seen, chain = set(), pid
            while chain in parents and chain not in ends and chain not in seen:
                seen.add(chain)
                chain = parents[chain][0]
            if chain in ends and pid != self.root:
                members[pid] = found
        return members

    def count(self) -> int:
        """How many of its processes are alive (at most: some may have died since)."""
        last = last_pid()
        if self._counted is None or self._counted[0] != last or not last:
            alive = sum(not zombie for _, zombie in self.members().values())
            self._counted = (last, alive)
        return self._counted[1]

    def kill(self) -> None:
        """Kills every process of the candidate (the leader too) and reaps this process's
        children among them, until none is left: what a killed process had started is
        re-parented here and found on the next round."""
        while True:
            members = self.members()
            if not members:
                return
            for pid in members:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            for pid, (parent, _) in members.items():
                if parent == self.root:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(pid, 0)
