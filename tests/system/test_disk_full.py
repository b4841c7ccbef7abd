"""A full disk (ENOSPC, on a real small tmpfs): one error line naming the file, no ``.tmp``
file left behind, and ``--resume`` once there is room again gives the uninterrupted run's
result (issue #37, item 8).

Each test mounts a tmpfs of its own (``mount -t tmpfs -o size=...``), which needs root; where
mounting is impossible the tests are skipped, saying so.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dei_framework.contract.errors import WriteError
from dei_framework.runtime.files.run_dir import RunDir, write_json_atomic

#: A seeded Core War run that writes about 350 KB (its logs hold every call's reply).
RUN_FLAGS = (
    "--domain",
    "coreware",
    "--rounds",
    "2",
    "--iterations",
    "4",
    "--seed",
    "3",
    "--progress",
    "quiet",
    "--no-report",
)
#: This venv's ``dei-run``.
DEI_RUN = shutil.which("dei-run", path=str(Path(sys.executable).parent)) or "dei-run"


@pytest.fixture
def small_disk(tmp_path: Path):
    """A folder on a tmpfs of 64 KiB (resized by the test with :func:`resize`)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def resize(folder: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(folder)], check=True)


def fill(folder: Path) -> None:
    """Fills the filesystem of ``folder`` to the last byte (unbuffered writes, each of which
    the kernel takes whole or in part, until it takes none)."""
    descriptor = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        for size in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(descriptor, b"\0" * size):
                    pass
        with pytest.raises(OSError):  # full: not even one byte more
            os.write(descriptor, b"\0")
    finally:
        os.close(descriptor)


def leftovers(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*.tmp"))


def test_an_atomic_write_on_a_full_disk_is_one_error_and_leaves_the_old_file(small_disk) -> None:
    target = small_disk / "summary.json"
    write_json_atomic(target, {"before": True})
    before = target.read_bytes()
    fill(small_disk)
    with pytest.raises(WriteError) as raised:
        write_json_atomic(target, {"after": "x" * 100_000})
    assert str(raised.value) == f"cannot write {target}: No space left on device"
    assert target.read_bytes() == before
    assert leftovers(small_disk) == []


def test_an_append_on_a_full_disk_stops_every_later_write_of_the_run_dir(small_disk) -> None:
    run_dir = RunDir(small_disk / "run")
    run_dir.log_events([{"event": "first"}])
    run_dir.flush()
    fill(small_disk)
    with pytest.raises(WriteError) as raised:  # outside an event loop lines go out at once
        run_dir.log_events([{"event": "lost", "text": "x" * 100_000}])
    assert f"cannot write {run_dir.events_path}: No space left on device" == str(raised.value)
    (small_disk / "filler").unlink()  # room again: lines were lost all the same
    # No checkpoint may cover a log with lines missing: its offsets are refused too.
    with pytest.raises(WriteError):
        run_dir.offsets()
    with pytest.raises(WriteError):
        run_dir.flush()
    with pytest.raises(WriteError):
        run_dir.log_events([{"event": "later"}])
    with pytest.raises(WriteError):
        run_dir.close()


def test_a_run_on_a_full_disk_is_one_line_and_resumes_exactly(small_disk, tmp_path) -> None:
    out = small_disk / "run"
    full = subprocess.run(
        [DEI_RUN, *RUN_FLAGS, "--out", str(out)], capture_output=True, text=True, timeout=300
    )
    assert full.returncode == 1, full.stderr
    assert "Traceback" not in full.stderr
    (line,) = full.stderr.splitlines()
    assert line.startswith(f"error: cannot write {out}/")
    assert ": No space left on device" in line
    assert leftovers(small_disk) == []
    assert not (out / "summary.json").exists()

    resize(small_disk, "16m")
    subprocess.run(
        [DEI_RUN, "--resume", str(out), "--progress", "quiet", "--no-report"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    reference = tmp_path / "reference"
    subprocess.run(
        [DEI_RUN, *RUN_FLAGS, "--out", str(reference)], check=True, capture_output=True, timeout=300
    )
    rounds = sorted(reference.glob("nodes/*/round-*.json"))
    files = ["merged_archive.json", *(str(path.relative_to(reference)) for path in rounds)]
    assert len(files) == 1 + 4 * 2
    assert {name: (out / name).read_bytes() for name in files} == {
        name: (reference / name).read_bytes() for name in files
    }
    assert leftovers(small_disk) == []
