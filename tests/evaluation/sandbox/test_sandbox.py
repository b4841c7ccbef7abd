"""The sandbox through the library: what a program may do to its process, to other
candidates, to the reply channel; how the level and limits are chosen; and the culprit rule
for a worker that dies without a sandbox."""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

import pytest

from dei_framework.contract.errors import ConfigError
from dei_framework.evaluation.local import WORKER_DIED, Evaluator
from dei_framework.evaluation.sandbox import bubblewrap, choose_policy
from dei_framework.evaluation.sandbox.policy import SandboxPolicy

AXES = {"lines", "first_fit_share"}
GOOD = "def priority(item, bins):\n    return [-(free - item) for free in bins]\n"


def _naive():
    from naive_domain import NaiveBinPacking  # installed by the naive_env fixture

    return NaiveBinPacking()


def test_a_program_that_changes_its_process_changes_no_other_candidate(sandboxed) -> None:
    meddler = (
        "import os, random, builtins, naive_domain\n"
        "random.Random.randint = lambda self, a, b: a\n"  # the instances
        "naive_domain.CAPACITY = 7\n"
        "builtins.priority = None\n"
        "os.chdir('/')\n"
        "def priority(item, bins):\n    return [0.0] * len(bins)\n"
    )
    alone = sandboxed([GOOD])[0]
    after = sandboxed([meddler, GOOD, GOOD])
    assert alone.evaluation is not None
    assert after[0].evaluation is not None  # the meddler itself ran (and saw its changes)
    for outcome in after[1:]:
        assert outcome.evaluation == alone.evaluation
    assert random.Random.randint.__name__ == "randint"  # nothing leaked into this process
    assert os.getcwd() != "/" or Path.cwd() == Path("/")


@pytest.mark.parametrize("level", ["process", "isolated"])
def test_the_time_limit_stops_a_loop_in_c_with_every_signal_blocked(sandboxed, level) -> None:
    blocked = (
        "import re, signal\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals))\n"
        "def priority(item, bins):\n"
        "    re.match(r'(a*)*b', 'a' * 64)\n"  # backtracks in C, never returns
        "    return [0.0] * len(bins)\n"
    )
    outcomes = sandboxed([blocked, GOOD], level=level, timeout=1.0)
    assert outcomes[0].error == "timeout after 1.0 s"
    assert outcomes[0].program is not None  # it parsed: the log keeps its text
    assert outcomes[0].seconds < 2.0
    assert outcomes[1].evaluation is not None


def test_a_process_left_behind_holding_the_pipe_does_not_hold_the_evaluation(sandboxed) -> None:
    lingering = (
        "import subprocess\n"
        "subprocess.Popen(['sleep', '600'])\n"  # inherits the reply pipe
        "def priority(item, bins):\n    return [0.0] * len(bins)\n"
    )
    outcome = sandboxed([lingering], timeout=30.0)[0]
    assert outcome.error is None and outcome.evaluation is not None  # not a timeout


def test_a_forged_reply_runs_no_code_outside_the_sandbox(sandboxed, tmp_path) -> None:
    mark = tmp_path / "escaped"
    forger = (
        "import os, pickle, struct\n"
        "class Escape:\n"
        f"    def __reduce__(self):\n        return (os.system, ('touch {mark}',))\n"
        "payload = pickle.dumps(Escape())\n"
        "for name in os.listdir('/proc/self/fd'):\n"
        "    try:\n"
        "        if os.readlink(f'/proc/self/fd/{name}').startswith('pipe:'):\n"
        "            os.write(int(name), struct.pack('>I', len(payload)) + payload)\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)\n"
        "def priority(item, bins):\n    return [0.0] * len(bins)\n"
    )
    outcomes = sandboxed([forger, GOOD])
    assert not mark.exists()
    assert outcomes[0].evaluation is None
    assert "unreadable" in outcomes[0].error
    assert outcomes[1].evaluation is not None  # the channel was not desynchronised


def test_a_program_that_kills_its_warm_process_is_the_only_one_invalid(sandboxed) -> None:
    parricide = (
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
        "def priority(item, bins):\n    return [0.0] * len(bins)\n"
    )
    outcomes = sandboxed([GOOD, parricide, GOOD])
    assert outcomes[1].error.startswith("evaluation failed: the sandbox process died")
    assert outcomes[0].evaluation == outcomes[2].evaluation is not None


def test_without_a_sandbox_a_dead_worker_costs_only_its_culprit(naive_env) -> None:
    suicide = (
        "import os, signal\ndef priority(item, bins):\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    texts = [GOOD.replace("free - item", f"free - item * {k}") for k in range(1, 6)]
    domain = _naive()
    evaluator = Evaluator(domain, workers=1, descriptor_keys=AXES, sandbox=SandboxPolicy())

    async def run() -> tuple[list, list]:
        together = await evaluator.evaluate_many([(t, 1) for t in [*texts, suicide]], [])
        alone = [await evaluator.evaluate(t, [], seed=1) for t in texts]
        return together, alone

    try:
        together, alone = asyncio.run(run())
    finally:
        evaluator.close()
    assert together[-1].error == WORKER_DIED
    assert [o.evaluation for o in together[:-1]] == [o.evaluation for o in alone]
    assert all(o.evaluation is not None for o in alone)


def test_the_level_follows_the_domain_and_the_limits(naive_env, toy_env) -> None:
    from toy_domain import ToyDomain

    naive, toy = _naive(), ToyDomain()
    assert choose_policy(toy).level == "none"  # programs that are data keep today's path
    assert choose_policy(naive).level == "process"  # executes_code
    assert choose_policy(toy, timeout=2.0).level == "process"  # a limit needs a child
    assert choose_policy(naive, level="none") == SandboxPolicy()
    with pytest.raises(ConfigError, match="--eval-timeout needs a sandbox"):
        choose_policy(naive, level="none", timeout=3.0)
    with pytest.raises(ConfigError, match="--eval-memory"):
        choose_policy(naive, memory_mb=4)
    with pytest.raises(ConfigError, match="--sandbox 'vm'"):
        choose_policy(naive, level="vm")
    defaults = choose_policy(naive).limits  # bounded unless turned off
    assert (defaults.file_mb, defaults.processes, defaults.output_kb) == (64, 64, 64)
    off = choose_policy(naive, file_mb=0, processes=0).limits
    assert off.file_mb is None and off.processes is None
    assert choose_policy(toy, processes=8).level == "process"
    with pytest.raises(ConfigError, match="--eval-processes needs a sandbox"):
        choose_policy(naive, level="none", processes=8)


def test_a_script_kept_in_tmp_itself_runs_isolated_with_its_domain_module(
    naive_env, bubblewrap
) -> None:
    # A user's script and its domain module directly in /tmp: /tmp is on the import path, and
    # binding it over the jail's private /tmp left the warm process with no writable
    # temporary directory. The domain class lives in the /tmp module, so the jail must see it.
    import subprocess
    import sys
    import uuid

    tag = uuid.uuid4().hex[:12]
    module = Path("/tmp") / f"dei_tmp_domain_{tag}.py"
    script = Path("/tmp") / f"dei_tmp_script_{tag}.py"
    module.write_text(
        "from naive_domain import NaiveBinPacking\n\n\n"
        "class TmpDomain(NaiveBinPacking):\n    pass\n"
    )
    script.write_text(f"""import asyncio

from dei_framework.evaluation.local import Evaluator
from dei_framework.evaluation.sandbox import choose_policy
from dei_tmp_domain_{tag} import TmpDomain


def main():
    domain = TmpDomain()
    policy = choose_policy(domain, level="isolated", timeout=10.0)
    evaluator = Evaluator(domain, workers=0, descriptor_keys={sorted(AXES)!r},
                          sandbox=policy)
    try:
        outcome = asyncio.run(evaluator.evaluate({GOOD!r}, [], seed=1))
    finally:
        evaluator.close()
    print("evaluated" if outcome.evaluation is not None else f"failed: {{outcome.error}}")


if __name__ == "__main__":
    main()
""")
    try:
        result = subprocess.run(
            [sys.executable, str(script)],
            env=naive_env,
            cwd="/",
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        module.unlink()
        script.unlink()
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "evaluated", (result.stdout, result.stderr[-2000:])


def test_isolated_without_bubblewrap_names_the_package(monkeypatch, naive_env) -> None:
    bubblewrap.find_bubblewrap.cache_clear()
    monkeypatch.setattr(bubblewrap.shutil, "which", lambda name: None)
    monkeypatch.setattr(bubblewrap.os.path, "exists", lambda path: False)
    try:
        with pytest.raises(ConfigError, match="apt install bubblewrap"):
            choose_policy(_naive(), level="isolated")
    finally:
        bubblewrap.find_bubblewrap.cache_clear()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--sandbox", "none", "--eval-timeout", "3"], "--eval-timeout needs a sandbox"),
        (["--eval-memory", "4"], "--eval-memory 4: give whole megabytes, at least 16"),
        (["--eval-timeout", "0"], "--eval-timeout 0.0: give a number of seconds above 0"),
        (["--eval-file-size", "-1"], "--eval-file-size -1: give whole megabytes (0: no limit)"),
        (["--sandbox", "none", "--eval-processes", "8"], "--eval-processes needs a sandbox"),
    ],
)
def test_impossible_sandbox_options_end_with_one_line(
    cli, toy_env, tmp_path, flags, message
) -> None:
    out = tmp_path / "run"
    result = cli("dei-run", "--domain", "toy", "--out", str(out), *flags, env=toy_env, check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), lines
    assert not out.exists()
