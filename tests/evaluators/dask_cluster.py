"""A real Dask cluster on loopback for the tests: ``dask scheduler`` and ``dask worker``
processes started with the CLIs that come with ``distributed`` (one process and one thread per
worker, no nanny, so that killing a worker's process kills that worker)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import attrs

#: The seeded Core War run the backend tests compare (small: two rounds, four calls per node a
#: round, four nodes).
RUN_FLAGS = ("--domain", "coreware", "--rounds", "2", "--iterations", "4", "--seed", "3",
             "--progress", "quiet", "--no-report")  # fmt: skip

#: Set by `.ci/run`: the address of a scheduler with two workers, started for the test session.
ADDRESS_VARIABLE = "DEI_DASK_ADDRESS"


def free_port() -> int:
    """A TCP port nobody listens on now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _dask_cli() -> list[str]:
    found = shutil.which("dask", path=str(Path(sys.executable).parent))
    # A venv that sees a system-wide Dask has no `dask` script of its own; `python -m dask`
    # is the same command line (`dask scheduler`, `dask worker`).
    return [found] if found else [sys.executable, "-P", "-m", "dask"]  # -P: not the cwd first


@attrs.define
class Cluster:
    """A scheduler and its worker processes (those this test started)."""

    address: str
    scheduler: subprocess.Popen | None = None
    workers: list[subprocess.Popen] = attrs.Factory(list)

    def add_worker(self, env: dict[str, str] | None = None) -> subprocess.Popen:
        """Starts one more worker (one process, one thread) for this scheduler."""
        worker = subprocess.Popen(
            [*_dask_cli(), "worker", self.address, "--nworkers", "1", "--nthreads", "1",
             "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        self.workers.append(worker)
        return worker

    def wait_for_workers(self, count: int, timeout: float = 90.0) -> None:
        """Waits until ``count`` workers have joined the scheduler."""
        import distributed

        with distributed.Client(self.address, timeout=timeout, set_as_default=False) as client:
            client.wait_for_workers(count, timeout=timeout)

    def kill_worker(self, worker: subprocess.Popen) -> None:
        """``kill -9`` of one worker process."""
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)

    def kill_scheduler(self) -> None:
        """``kill -9`` of the scheduler."""
        assert self.scheduler is not None
        self.scheduler.send_signal(signal.SIGKILL)
        self.scheduler.wait(timeout=10)

    def stop(self) -> None:
        """Ends every process this test started."""
        for process in [*self.workers, *([self.scheduler] if self.scheduler else [])]:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=10)


def start_cluster(workers: int = 2) -> Cluster:
    """A scheduler on a free loopback port with ``workers`` workers, all joined."""
    port = free_port()
    scheduler = subprocess.Popen(
        [*_dask_cli(), "scheduler", "--host", "127.0.0.1", "--port", str(port),
         "--no-dashboard"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    cluster = Cluster(address=f"tcp://127.0.0.1:{port}", scheduler=scheduler)
    try:
        for _ in range(workers):
            cluster.add_worker()
        if workers:
            cluster.wait_for_workers(workers)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def shadowed_version_env(folder: Path, version: str) -> dict[str, str]:
    """The environment of a worker whose installation reports ``dei-framework`` ``version``:
    a distribution record earlier on its path (the code is the same; only what the installed
    metadata says differs, as for a worker installed from another release)."""
    record = folder / f"dei_framework-{version}.dist-info"
    record.mkdir(parents=True, exist_ok=True)
    (record / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: dei-framework\nVersion: {version}\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))
    return env


def run_console(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Runs a console script (``dei-run``, ``dei``) of the venv and fails on a non-zero exit."""
    script, *rest = args
    found = shutil.which(script, path=str(Path(sys.executable).parent)) or script
    result = subprocess.run([found, *rest], capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise AssertionError(f"{script} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result


def wait_for(predicate, timeout: float, what: str) -> None:
    """Polls ``predicate`` every 0.05 s until it holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
