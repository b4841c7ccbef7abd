"""A Dask worker that cannot run the project (a machine where only Dask is installed) on a real
loopback cluster: joining mid-run it is refused in one warning line and the run finishes with
the full result; SIGTERM while it is around ends the run at once, resumable; present at the
start it is one error line (issue #37, item 7)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dask_cluster import RUN_FLAGS, run_console, start_cluster, wait_for, without_project

import dei_framework

#: This venv's ``dei-run`` (the one of this tree, whatever PATH says).
DEI_RUN = shutil.which("dei-run", path=str(Path(sys.executable).parent)) or "dei-run"
#: Seconds a SIGTERMed run may take to exit (docs/cli.md: "within a second or two"; the bound
#: of issue #37 is 10 s).
EXIT_SECONDS = 10

#: Seconds without a round ending after which the SIGTERM test takes the run for stalled.
STALL_SECONDS = 20


def archives(run_dir: Path) -> dict[str, bytes]:
    """The merged archive and every node's round archives of a run, by relative path."""
    files = [run_dir / "merged_archive.json", *sorted(run_dir.glob("nodes/*/round-*.json"))]
    return {str(path.relative_to(run_dir)): path.read_bytes() for path in files}


def budget(run_dir: Path) -> dict[str, tuple[int, int]]:
    """Every node's calls and attempts, from a run's summary."""
    summary = json.loads((run_dir / "summary.json").read_text())
    return {
        name: (node["calls"], node["attempts"]) for name, node in summary["budget"]["nodes"].items()
    }


def rounds_done(run_dir: Path) -> int:
    """The ``round`` events in a run's log: one per node and round that ended."""
    events = run_dir / "events.jsonl"
    return events.read_text().count('"event":"round"') if events.exists() else 0


def worker_addresses(address: str) -> set[str]:
    """The workers the scheduler at ``address`` lists now."""
    import distributed

    with distributed.Client(address, timeout=30, set_as_default=False) as client:
        return set(client.scheduler_info()["workers"])


def start_run(out: Path, address: str, stderr: Path, *flags: str) -> subprocess.Popen:
    """``dei-run`` of :data:`RUN_FLAGS` (and ``flags``) on the Dask scheduler at ``address``,
    its stderr in the file ``stderr`` (read while it runs)."""
    with stderr.open("w") as sink:
        return subprocess.Popen(
            [
                DEI_RUN,
                *RUN_FLAGS,
                *flags,
                "--evaluator",
                "dask",
                "--evaluator-address",
                address,
                "--out",
                str(out),
            ],
            stdout=subprocess.DEVNULL,
            stderr=sink,
            text=True,
        )


def after_its_first_round(run: subprocess.Popen, out: Path, stderr: Path) -> None:
    """Waits until the run ended a round (and fails if it ended meanwhile)."""
    wait_for(lambda: rounds_done(out) >= 1 or run.poll() is not None, 180, "a first round")
    assert run.poll() is None, stderr.read_text()


def wait_for_rounds_or_stall(run: subprocess.Popen, out: Path, count: int) -> None:
    """Waits until the run's log holds ``count`` round events, or no round ended for
    :data:`STALL_SECONDS` (the run is stalled), or the run ended."""
    seen, since = rounds_done(out), time.monotonic()
    while run.poll() is None and seen < count and time.monotonic() - since < STALL_SECONDS:
        time.sleep(0.05)
        if (now := rounds_done(out)) != seen:
            seen, since = now, time.monotonic()


def refusals(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "refused the Dask worker" in line]


@pytest.mark.slow
def test_a_worker_without_the_project_joining_mid_run_is_refused_and_the_run_finishes(
    tmp_path,
) -> None:
    flags = ("--rounds", "8")
    local = tmp_path / "local"
    run_console("dei-run", *RUN_FLAGS, *flags, "--eval-workers", "2", "--out", str(local))
    cluster = start_cluster(2)
    out, stderr = tmp_path / "dask", tmp_path / "stderr.txt"
    run = None
    try:
        present = worker_addresses(cluster.address)
        run = start_run(out, cluster.address, stderr, *flags)
        after_its_first_round(run, out, stderr)
        # With a nanny, as `dask worker` starts by default: refused, its worker process
        # closes while the nanny stays, and the scheduler listed it as closing for ever.
        cluster.add_worker(nanny=True, installation=without_project(tmp_path / "bare"))
        returncode = run.wait(timeout=300)
    finally:
        if run is not None and run.poll() is None:
            run.kill()
            run.wait()
        cluster.stop()
    error = stderr.read_text()
    assert returncode == 0, error
    assert "Traceback" not in error, error
    (line,) = refusals(error)
    assert [text for text in error.splitlines() if text.startswith("warning:")] == [line]
    refused = line.split()[5]  # "warning: refused the Dask worker tcp://... that joined ..."
    assert refused.startswith("tcp://127.0.0.1:") and refused not in present
    assert f"that joined {cluster.address}: it runs without dei-framework " in line
    assert f"(this run: {dei_framework.__version__})" in line
    # The full result: the same as the run on local workers, every round of every node.
    assert archives(out) == archives(local)
    assert len(archives(out)) == 1 + 4 * 8
    assert budget(out) == budget(local)


@pytest.mark.slow
def test_sigterm_ends_a_run_with_a_refused_worker_within_10_s_with_the_resume_hint(
    tmp_path,
) -> None:
    cluster = start_cluster(2)
    out, stderr = tmp_path / "run", tmp_path / "stderr.txt"
    run = None
    try:
        run = start_run(out, cluster.address, stderr, "--rounds", "400")  # far from its end
        after_its_first_round(run, out, stderr)
        cluster.add_worker(nanny=True, installation=without_project(tmp_path / "bare"))
        wait_for(
            lambda: refusals(stderr.read_text()) or run.poll() is not None,
            120,
            "the refusal of the worker without the project",
        )
        assert run.poll() is None, stderr.read_text()
        # Then five more rounds of every node, or none for STALL_SECONDS: a run stalled by the
        # refused worker (the defect: within a few rounds, at the next plugin install) ends
        # no more, and SIGTERM then meets it stalled, its threads blocked on Dask (whether
        # that process then hangs depends on how soon Dask's client closes: not always).
        wanted = rounds_done(out) + 4 * 5
        wait_for_rounds_or_stall(run, out, wanted)
        went_on = rounds_done(out) >= wanted
        assert run.poll() is None, stderr.read_text()
        run.send_signal(signal.SIGTERM)
        try:
            returncode = run.wait(timeout=EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail(f"dei-run still runs {EXIT_SECONDS}s after SIGTERM:\n{stderr.read_text()}")
    finally:
        if run is not None and run.poll() is None:
            run.kill()
            run.wait()
        cluster.stop()
    error = stderr.read_text()
    assert went_on, f"the run stalled after the refusal:\n{error}"
    assert returncode == 130, error
    assert "Traceback" not in error, error
    assert f"interrupted; continue with: dei-run --resume {out}" in error
    assert len(refusals(error)) == 1
    assert (out / "checkpoint.json").exists() and not (out / "summary.json").exists()


def test_a_worker_without_the_project_at_the_start_is_one_error_line(tmp_path) -> None:
    cluster = start_cluster(1)
    try:
        present = worker_addresses(cluster.address)
        cluster.add_worker(installation=without_project(tmp_path / "bare"))
        cluster.wait_for_workers(2)
        (bare,) = worker_addresses(cluster.address) - present
        result = subprocess.run(
            [
                DEI_RUN,
                *RUN_FLAGS,
                "--evaluator",
                "dask",
                "--evaluator-address",
                cluster.address,
                "--out",
                str(tmp_path / "refused"),
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        cluster.stop()
    assert result.returncode == 1  # an error (docs/cli.md, "Exit statuses")
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: refusing the Dask workers at {cluster.address}: ")
    assert f"{bare} cannot run this project (ModuleNotFoundError" in line
    assert "No module named 'dei_framework'" in line
    assert line.count("cannot run this project") == 1  # the worker with the project is fine
    assert not (tmp_path / "refused").exists()
