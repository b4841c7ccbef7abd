"""Opponent sets: a round's opponents, installed once, that evaluation jobs name by id.

:class:`OpponentSet` is what :meth:`~dei_framework.evaluation.local.Evaluator.install` gives;
the local pool keeps each set as a file of a private temporary directory named after its
process (:data:`SETS_PREFIX`), which its workers read on first use. A run killed with SIGKILL
cannot remove that directory: :func:`remove_orphaned_set_dirs` does, later.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import attrs

from dei_framework.contract.domain import Program


@attrs.frozen(kw_only=True)
class OpponentSet:
    """A round's parsed opponents, installed in the evaluation workers once
    (:meth:`Evaluator.install`).

    Attributes:
        id: What jobs carry instead of the programs: a digest of the pickled programs, naming
            the file in the evaluator's set directory that workers load on first use.
        path: That file.
        programs: The programs (used directly when evaluating in threads).
        size: Bytes of the pickled programs, i.e. what every job would carry without the set.
    """

    id: str
    path: str
    programs: tuple[Program, ...]
    size: int


#: Prefix of the local backend's opponent-set directories in the temporary directory, followed
#: by the owning process's id.
SETS_PREFIX = "dei-opponents-"


def remove_orphaned_set_dirs(tmp: str | None = None) -> list[str]:
    """Removes opponent-set directories whose process is gone (a run killed with SIGKILL
    cannot remove its own); returns their paths. A directory of a live process, of another
    user's process, or without a process id in its name is left alone."""
    tmp = tmp or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(tmp)
    except OSError:
        return removed
    for name in names:
        pid = name[len(SETS_PREFIX) :].split("-", 1)[0] if name.startswith(SETS_PREFIX) else ""
        if not pid.isdigit() or _alive(int(pid)):
            continue
        path = os.path.join(tmp, name)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM): alive
        return True
    return True
