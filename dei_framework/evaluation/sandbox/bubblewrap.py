"""The ``isolated`` level's jail: bubblewrap (``bwrap``, Debian's ``bubblewrap``, the
sandbox Flatpak uses), around the sandbox's warm process and so around every candidate.

The view it gives: the whole filesystem read-only, a private ``/tmp`` (the only writable
place; each candidate's scratch directory lives there and is wiped after it), fresh ``/dev``
and ``/proc``, no network (a new network namespace with only a down loopback), its own PID,
IPC and UTS namespaces (it sees and signals only its own processes), a new session (no
terminal to inject keystrokes into), and it dies with the process that started it.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence

from dei_framework.contract.errors import ConfigError

#: Where to get bubblewrap, for the error message.
INSTALL_HINT = (
    "install the 'bubblewrap' package (Debian/Ubuntu: apt install bubblewrap; "
    "Fedora: dnf install bubblewrap)"
)


def bwrap_arguments(executable: str, visible: Sequence[str] = ()) -> list[str]:
    """The bubblewrap command line that runs what follows it inside the jail.

    Args:
        executable: The ``bwrap`` binary.
        visible: Files and directories under ``/tmp`` the jail must still see, read-only (the
            import path may reach into it: a plugin installed with ``pip --target``, a test's
            folder, a script kept in ``/tmp`` itself); the private ``/tmp`` would hide them.
            ``/tmp`` itself is never bound: bound read-only over the private one, it would
            leave the jail without a writable temporary directory.
    """
    private_tmp = os.path.realpath("/tmp")
    keep = []
    for path in dict.fromkeys(os.path.realpath(path) for path in visible):
        if path.startswith(private_tmp + "/") and os.path.exists(path):
            keep += ["--ro-bind", path, path]
    return [
        executable,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        *keep,
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--new-session",
        "--die-with-parent",
        "--chdir",
        "/tmp",
        "--",
    ]


@functools.cache
def find_bubblewrap() -> str:
    """The path of a working ``bwrap``: found on ``PATH`` and able to start a jail here.

    Raises:
        ConfigError: Not installed, not Linux, or the kernel refuses it (user namespaces off),
            with what to do.
    """
    if not sys.platform.startswith("linux"):
        raise ConfigError(
            f"--sandbox isolated needs Linux (bubblewrap); on {sys.platform} use --sandbox process"
        )
    executable = shutil.which("bwrap") or (
        "/usr/bin/bwrap" if os.path.exists("/usr/bin/bwrap") else None
    )
    if executable is None:
        raise ConfigError(
            f"--sandbox isolated needs bubblewrap, which is not installed: "
            f"{INSTALL_HINT}, or use --sandbox process"
        )
    try:
        probe = subprocess.run(
            [*bwrap_arguments(executable), "true"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"--sandbox isolated: {executable} does not start ({exc})") from None
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
        raise ConfigError(
            f"--sandbox isolated: bubblewrap cannot make a jail here ({reason}); the kernel "
            "may have unprivileged user namespaces off (sysctl kernel.unprivileged_userns_clone"
            " or user.max_user_namespaces), or use --sandbox process"
        )
    return executable
