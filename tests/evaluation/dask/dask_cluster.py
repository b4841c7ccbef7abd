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
    tls: dict[str, str] | None = None

    def add_worker(
        self,
        env: dict[str, str] | None = None,
        *,
        nanny: bool = False,
        installation: Installation | None = None,
    ) -> subprocess.Popen:
        """Starts one more worker (one process, one thread) for this scheduler: without a
        nanny unless ``nanny``, from this test's installation unless another is given."""
        cli, cwd = (installation.cli, installation.cwd) if installation else (_dask_cli(), None)
        if installation:
            env = installation.env
        worker = subprocess.Popen(
            [
                *cli,
                "worker",
                self.address,
                "--nworkers",
                "1",
                "--nthreads",
                "1",
                *([] if nanny else ["--no-nanny"]),
                "--no-dashboard",
                "--host",
                "127.0.0.1",
                *_tls_flags(self.tls),
            ],
            env=env,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.workers.append(worker)
        return worker

    def wait_for_workers(self, count: int, timeout: float = 90.0) -> None:
        """Waits until ``count`` workers have joined the scheduler."""
        import distributed

        security = None
        if self.tls:
            security = distributed.Security(
                tls_ca_file=self.tls["tls_ca_file"],
                tls_client_cert=self.tls["tls_cert"],
                tls_client_key=self.tls["tls_key"],
                require_encryption=True,
            )
        with distributed.Client(
            self.address, timeout=timeout, set_as_default=False, security=security
        ) as client:
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


def tls_files(folder: Path) -> dict[str, str]:
    """A certificate authority and one certificate for 127.0.0.1 signed by it, as PEM files
    in ``folder``: the ``[evaluator_options]`` of a TLS cluster (every party uses the same
    certificate, as Dask's own test clusters do)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def certificate(subject: str, key, issuer: str, issuer_key, *, ca: bool) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = certificate("dei test CA", ca_key, "dei test CA", ca_key, ca=True)
    leaf = certificate("127.0.0.1", key, "dei test CA", ca_key, ca=False)
    pem = serialization.Encoding.PEM
    files = {
        "tls_ca_file": folder / "ca.pem",
        "tls_cert": folder / "cert.pem",
        "tls_key": folder / "key.pem",
    }
    files["tls_ca_file"].write_bytes(ca.public_bytes(pem))
    files["tls_cert"].write_bytes(leaf.public_bytes(pem))
    files["tls_key"].write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return {name: str(path) for name, path in files.items()}


def _tls_flags(tls: dict[str, str] | None) -> list[str]:
    if not tls:
        return []
    return [
        "--tls-ca-file",
        tls["tls_ca_file"],
        "--tls-cert",
        tls["tls_cert"],
        "--tls-key",
        tls["tls_key"],
    ]


def start_cluster(workers: int = 2, tls: dict[str, str] | None = None) -> Cluster:
    """A scheduler on a free loopback port with ``workers`` workers, all joined (over TLS with
    the :func:`tls_files` ``tls``)."""
    port = free_port()
    scheduler = subprocess.Popen(
        [
            *_dask_cli(),
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-dashboard",
            *(["--protocol", "tls"] if tls else []),
            *_tls_flags(tls),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    protocol = "tls" if tls else "tcp"
    cluster = Cluster(address=f"{protocol}://127.0.0.1:{port}", scheduler=scheduler, tls=tls)
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


@attrs.frozen
class Installation:
    """How to start Dask from another Python installation: the ``dask`` command line, its
    environment and the folder to start it in."""

    cli: list[str]
    env: dict[str, str]
    cwd: str


def without_project(folder: Path) -> Installation:
    """A Python installation with Dask and without this project: the same interpreter, without
    its ``site`` step (``-S``: no ``.pth`` file runs, so the project's editable finder is not
    installed) and with a path of its own, ``folder``, holding links to every entry of this
    installation's site-packages except the project's and its domains' (``dei_*``, their
    ``.dist-info`` records and editable finders). ``import dei_framework`` fails there and
    ``dei-framework`` has no metadata: a machine where only Dask was installed."""
    import site

    folder.mkdir(parents=True, exist_ok=True)
    for directory in [*site.getsitepackages(), site.getusersitepackages()]:
        if not os.path.isdir(directory):
            continue
        for entry in sorted(os.listdir(directory)):
            if entry.endswith(".pth") or entry.lower().startswith(("dei_", "dei-", "__editable__")):
                continue
            link = folder / entry
            if not link.exists():  # the first site directory that has it wins, as on a path
                link.symlink_to(Path(directory) / entry)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTHONPATH"] = str(folder)
    # -P: not the working folder first on the path (it might hold the project's sources).
    return Installation(cli=[sys.executable, "-S", "-P", "-m", "dask"], env=env, cwd=str(folder))


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
