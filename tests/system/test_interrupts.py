"""Ctrl-C, SIGTERM and kill -9 of a real `dei-run` with evaluation worker processes.

Every stop must end the run quickly, print the real run directory to resume from, leave no
traceback and no process behind, and the resumed run must end with an exact ledger.
"""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from midway import ctrl_c, events, kill_9, sigterm, stop_midway, wait_gone

#: Two nodes with two worker processes; long enough (a few seconds) to be stopped anywhere.
CONFIG = (
    'domain = "toy"\nnodes = 2\nbudget = 240\nrounds = 3\nseed = 5\n'
    "checkpoint_seconds = 0.2\neval_workers = 2\n"
    "[operator_options]\ndelay = 0.04\n"
)


def _stalled(env: dict) -> dict:
    """``env`` for a run to be stopped: calls and evaluations also sleep up to 50 ms at random
    (DEI_CHAOS_STALL), so a loaded machine's test still finds the run under way; a resume must
    not depend on timing anyway."""
    return {**env, "DEI_CHAOS_STALL": "0.05"}


def _args(config: Path, out: Path) -> list[str]:
    return [
        "--config",
        str(config),
        "--operator",
        "toy-random",
        "--out",
        str(out),
        "--progress",
        "lines",
        "--no-report",
    ]


def _assert_exact_ledger(out: Path) -> None:
    summary = json.loads((out / "summary.json").read_text())
    assert summary["budget"]["calls"] == 240
    assert [node["calls"] for node in summary["nodes"].values()] == [120, 120]
    log = events(out)
    made = [e for e in log if e["event"] == "evaluated" and e["kind"] in ("new", "mutate")]
    assert len(made) == 240
    ids = [e["id"] for e in log if e["event"] == "evaluated"]
    assert len(ids) == len(set(ids)), "a candidate was evaluated twice"
    calls = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    assert len(calls) == 240 and len({c["key"] for c in calls}) == 240
    assert sum(1 for e in log if e["event"] == "round") == 6


def _resume(cli, out: Path, env: dict) -> None:
    result = cli(
        "dei-run", "--resume", str(out), "--progress", "quiet", "--no-report", env=env, timeout=300
    )
    assert result.returncode == 0


@pytest.mark.slow  # ten runs stopped at random moments, each resumed to its end
def test_ctrl_c_or_sigterm_at_random_moments_stops_cleanly_and_resumes_exactly(
    toy_env, cli, tmp_path
) -> None:
    config = tmp_path / "run.toml"
    config.write_text(CONFIG)
    draw = random.Random(16)
    timings = []
    for trial in range(10):
        out = tmp_path / f"run-{trial}"
        send = sigterm if trial % 4 == 3 else ctrl_c
        stopped = stop_midway(
            _args(config, out),
            out,
            _stalled(toy_env),
            min_events=draw.randrange(2, 150),
            send=send,
            after=draw.uniform(0.0, 0.3),
        )
        timings.append(stopped.seconds)
        where = f"trial {trial} ({send.__name__})"
        assert stopped.returncode == 130, f"{where}: exit {stopped.returncode}\n{stopped.stderr}"
        assert stopped.seconds < 15, where
        assert "Traceback" not in stopped.stderr, f"{where}:\n{stopped.stderr}"
        assert f"continue with: dei-run --resume {out.resolve()}" in stopped.stderr, where
        assert stopped.survivors == {}, f"{where}: processes left: {stopped.survivors}"
        _resume(cli, out, toy_env)
        _assert_exact_ledger(out)
    print(f"interrupt to exit: max {max(timings):.2f} s, mean {sum(timings) / 10:.2f} s")


def test_a_second_ctrl_c_exits_at_once_without_a_traceback(toy_env, cli, tmp_path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(CONFIG)
    out = tmp_path / "run"

    def twice(process) -> None:
        ctrl_c(process)
        time.sleep(0.01)
        ctrl_c(process)

    stopped = stop_midway(_args(config, out), out, _stalled(toy_env), min_events=40, send=twice)
    # 130, or death by SIGINT (which a shell reports as 130 too) when the second Ctrl-C lands
    # in the interpreter's last teardown, after the first one's stop has already finished.
    assert stopped.returncode in (130, -signal.SIGINT), stopped.stderr
    assert stopped.seconds < 15
    assert "Traceback" not in stopped.stderr, stopped.stderr
    # The workers' semaphores are released before the exit, so multiprocessing's resource
    # tracker (which outlives us) finds nothing to clean up and has nothing to warn about.
    assert "leaked semaphore" not in stopped.stderr, stopped.stderr
    assert f"continue with: dei-run --resume {out.resolve()}" in stopped.stderr
    assert stopped.survivors == {}
    _resume(cli, out, toy_env)
    _assert_exact_ledger(out)


def test_workers_end_themselves_when_the_main_process_is_killed(toy_env, tmp_path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(CONFIG)
    out = tmp_path / "run"
    seen: list[int] = []

    def kill_main(process) -> None:
        from midway import session_processes

        seen.extend(pid for pid in session_processes(process.pid) if pid != process.pid)
        kill_9(process)

    stopped = stop_midway(
        _args(config, out), out, _stalled(toy_env), min_events=40, send=kill_main, grace=0.0
    )
    assert stopped.returncode == -signal.SIGKILL
    assert len(seen) >= 2, f"expected the run's worker processes, found {seen}"
    survivors, waited = wait_gone(_session(seen), 10.0)
    assert survivors == [], f"still alive 10 s after kill -9: {survivors}"
    print(f"last worker gone {waited:.2f} s after kill -9")


def _session(pids: list[int]) -> int:
    stat = Path(f"/proc/{pids[0]}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[3])


def test_the_resume_hint_quotes_a_directory_with_a_space_for_the_shell(toy_env, tmp_path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(CONFIG)
    out = tmp_path / "a dir" / "run"
    stopped = stop_midway(_args(config, out), out, _stalled(toy_env), min_events=20, send=ctrl_c)
    hint = re.search(r"continue with: dei-run --resume (.+)", stopped.stderr)
    assert hint and hint.group(1) == f"'{out.resolve()}'"  # quoted: the path has a space


def _loaded(pid: int, library: str) -> bool:
    """True once process ``pid`` has mapped a shared library whose path contains ``library``."""
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def test_ctrl_c_while_the_command_line_is_still_loading_ends_in_one_line(toy_env, tmp_path) -> None:
    # numpy's core library is mapped early in the second or so `dei-run` spends importing its
    # command line and plugins: a SIGINT sent as soon as it appears lands in those imports.
    for trial in range(3):
        process = subprocess.Popen(
            [
                "dei-run",
                "--domain",
                "toy",
                "--budget",
                "40",
                "--out",
                str(tmp_path / f"r{trial}"),
                "--progress",
                "lines",
                "--no-report",
            ],
            env=toy_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 30
        while not _loaded(process.pid, "_multiarray_umath") and time.monotonic() < deadline:
            time.sleep(0.002)
        assert process.poll() is None, "dei-run ended before it could be interrupted"
        ctrl_c(process)
        _, stderr = process.communicate(timeout=60)
        assert "Traceback" not in stderr, stderr
        assert process.returncode == 130, stderr
        assert stderr.strip().splitlines()[-1].startswith("interrupted"), stderr
