"""What the sandbox bounds besides time and memory, at both levels: the size of the files a
program writes and of the output it prints, how many processes it has, the environment it
sees, and the daemons it leaves behind.

Processes are watched through a FIFO that each of them holds open for writing: the test
reads it until end of file, which comes once the last of them is dead.
"""

from __future__ import annotations

import os
import select
import time
from pathlib import Path

import pytest

from dei_framework.evaluation.sandbox.client import KEPT_PREFIXES, KEPT_VARIABLES
from dei_framework.search.scheduler import WorkItem

GOOD = "def priority(item, bins):\n    return [-(free - item) for free in bins]\n"
PRIORITY = "def priority(item, bins):\n    return [0.0] * len(bins)\n"
LEVELS = pytest.mark.parametrize("level", ["process", "isolated"])
#: Seconds the processes a candidate left get to die once it is done (a deadline, not a wait).
GONE_SECONDS = 30.0


@pytest.fixture
def fifo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, int]:
    """A FIFO the sandbox's processes can open (its folder is on the import path, which the
    jail of ``isolated`` sees, read-only) and the read end this process holds."""
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "alive"
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    yield path, reader
    os.close(reader)


def _until_every_writer_is_gone(reader: int) -> bytes:
    """What the FIFO's writers wrote, read until the last of them has closed it (is dead)."""
    data = b""
    deadline = time.monotonic() + GONE_SECONDS
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"a process still holds the FIFO (read {data!r})"
        ready, _, _ = select.select([reader], [], [], remaining)
        if ready:
            chunk = os.read(reader, 4096)
            if not chunk:
                return data
            data += chunk


@LEVELS
def test_a_write_past_the_file_limit_is_invalid_with_its_reason(sandboxed, level) -> None:
    writer = f"open('big', 'wb').write(b'x' * (2 << 20))\n{PRIORITY}"
    # Python ignores SIGXFSZ; a program that ignores it itself gets EFBIG from the write.
    catcher = f"import signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n{writer}"
    small = f"open('small', 'wb').write(b'x' * (1 << 19))\n{PRIORITY}"
    outcomes = sandboxed([writer, catcher, small, GOOD], level=level, file_mb=1)
    assert outcomes[0].error == "file size limit 1 MB exceeded (SIGXFSZ)"
    assert outcomes[1].error == "file size limit 1 MB exceeded (EFBIG)"
    assert outcomes[2].evaluation is not None  # under the limit
    assert outcomes[3].evaluation is not None


@LEVELS
def test_output_is_kept_up_to_its_cap_and_the_record_says_it_was_cut(sandboxed, level) -> None:
    flood = f"import sys\nsys.stdout.write('a' * (3 << 20))\n{PRIORITY}"  # over a full pipe
    short = f"import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\n{PRIORITY}"
    flooded, printed = sandboxed([flood, short], level=level, output_kb=16)
    assert flooded.evaluation is not None  # never blocked on its pipe: no timeout
    assert flooded.output == "a" * (16 << 10) and flooded.output_truncated
    assert sorted(printed.output.splitlines()) == ["to stderr", "to stdout"]
    assert not printed.output_truncated
    item = WorkItem(id="x", key="x", node="n", round=0, order=0, kind="new", seed=0, eval_seed=0)
    info = flooded.result(item).info  # what the candidate's event logs
    assert info["output_truncated"] is True and len(info["output"]) == 16 << 10


@LEVELS
def test_a_fork_bomb_is_stopped_at_the_process_limit(sandboxed, level, fifo) -> None:
    path, reader = fifo
    bomb = (
        "import os, time\n"
        f"os.write(os.open({str(path)!r}, os.O_WRONLY), b'x')\n"  # every copy holds it
        "for _ in range(8):\n    os.fork()\n"  # 256 processes, bounded if the limit fails
        "time.sleep(600)\n"
        f"{PRIORITY}"
    )

    def after(outcomes: list) -> None:
        assert _until_every_writer_is_gone(reader) == b"x"

    outcomes = sandboxed([bomb, GOOD], level=level, processes=16, timeout=60.0, while_open=after)
    assert outcomes[0].error == "process limit 16 exceeded"
    assert outcomes[1].evaluation is not None


@LEVELS
def test_a_daemon_that_leaves_its_group_does_not_outlive_its_candidate(
    sandboxed, level, fifo
) -> None:
    path, reader = fifo
    daemon = (
        "import os, time\n"
        "up_read, up_write = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"  # a new session and group: out of reach of the group's kill
        "    if os.fork() == 0:\n"
        f"        os.write(os.open({str(path)!r}, os.O_WRONLY), b'x')\n"
        "        os.write(up_write, b'up')\n"
        "        time.sleep(600)\n"
        "    os._exit(0)\n"  # the daemon's parent exits: the daemon is an orphan
        "os.read(up_read, 2)\n"  # the candidate answers once the daemon runs
        f"{PRIORITY}"
    )

    def after(outcomes: list) -> None:  # while the warm process (and the jail) still live
        assert _until_every_writer_is_gone(reader) == b"x"

    outcomes = sandboxed([daemon, GOOD], level=level, timeout=30.0, while_open=after)
    assert outcomes[0].evaluation is not None
    assert outcomes[1].evaluation is not None


@LEVELS
def test_the_candidate_sees_only_the_allowed_environment(
    sandboxed, level, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "OPENAI_API_KEY": "sk-secret",
        "ANTHROPIC_API_KEY": "sk-ant",
        "GITHUB_TOKEN": "ghp",
        "AWS_SECRET_ACCESS_KEY": "aws",
        "HF_TOKEN": "hf",
        "DEI_SECRET": "dei",
    }
    for name, value in {**secrets, "LC_MESSAGES": "C", "LANG": "C.UTF-8"}.items():
        monkeypatch.setenv(name, value)
    reader = (
        "import os\n"
        "for name in sorted(os.environ):\n    print(name)\n"
        "own = {os.environ[name] for name in ('HOME', 'TMPDIR', 'PWD')}\n"
        "print('scratch', own == {os.getcwd()})\n"
        f"{PRIORITY}"
    )
    outcome = sandboxed([reader], level=level)[0]
    lines = outcome.output.splitlines()
    names = set(lines[:-1])
    assert lines[-1] == "scratch True"  # each candidate's own scratch directory
    assert {"LC_MESSAGES", "LANG", "PATH", "HOME", "TMPDIR", "PYTHONPATH"} <= names
    assert not names & set(secrets)
    allowed = {*KEPT_VARIABLES, "HOME", "TMPDIR", "PWD", "PYTHONPATH"}
    assert {name for name in names if not name.startswith(KEPT_PREFIXES)} <= allowed
