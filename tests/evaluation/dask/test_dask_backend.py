"""The ``dask`` evaluation backend on a real Dask cluster (scheduler and workers as processes on
loopback): the same results as the local pool, a killed worker changes nothing but the timing,
a lost scheduler is one clear error and a resumable run, a worker on another version is
refused."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from dask_cluster import RUN_FLAGS, run_console, shadowed_version_env, start_cluster, wait_for

import dei_framework


def archives(run_dir: Path) -> dict[str, bytes]:
    """The merged archive and every node's round archive of a run, by relative path."""
    files = [run_dir / "merged_archive.json", *sorted(run_dir.glob("nodes/*/round-*.json"))]
    assert len(files) == 1 + 4 * 2
    return {str(path.relative_to(run_dir)): path.read_bytes() for path in files}


def budget(run_dir: Path) -> dict:
    summary = json.loads((run_dir / "summary.json").read_text())
    return {
        name: (node["calls"], node["attempts"]) for name, node in summary["budget"]["nodes"].items()
    }


def evaluations_under_way(run_dir: Path, count: int) -> bool:
    events = run_dir / "events.jsonl"
    return events.exists() and events.read_text().count('"evaluated"') >= count


def start_run(out: Path, *flags: str) -> subprocess.Popen:
    return subprocess.Popen(
        ["dei-run", *RUN_FLAGS, "--out", str(out), *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _coreware_domain():
    from dei_framework.contract.context import FactoryContext
    from dei_framework.plugin.manager import load_plugins

    registry = load_plugins()
    context = FactoryContext(registry=registry, options={"rounds": 2}, seed=0)
    return registry.domain("coreware").factory(context)


def test_dei_plugins_lists_both_built_in_backends(cli) -> None:
    listing = json.loads(cli("dei", "plugins", "--json").stdout)
    assert {row["name"]: row["plugin"] for row in listing["evaluators"]} == {
        "local": "dei_framework",
        "dask": "dei_framework",
    }


@pytest.mark.slow
def test_a_seeded_run_on_dask_equals_the_local_run(dask_address, local_run, tmp_path) -> None:
    out = tmp_path / "dask"
    run_console(
        "dei-run",
        *RUN_FLAGS,
        "--evaluator",
        "dask",
        "--evaluator-address",
        dask_address,
        "--out",
        str(out),
    )
    assert archives(out) == archives(local_run)
    assert budget(out) == budget(local_run)
    config = json.loads((out / "config.json").read_text())
    assert (config["evaluator"], config["evaluator_address"]) == ("dask", dask_address)


def run_under_way(out, cluster):
    """A seeded run on ``cluster`` (the dask backend), once its first evaluations are under way
    (it must still be running then)."""
    run = start_run(out, "--evaluator", "dask", "--evaluator-address", cluster.address)
    wait_for(
        lambda: evaluations_under_way(out, 3) or run.poll() is not None,
        180,
        "the run's first evaluations",
    )
    assert run.poll() is None, run.stderr.read()
    return run


@pytest.mark.slow
def test_killing_a_worker_mid_run_changes_nothing_but_the_timing(local_run, tmp_path) -> None:
    cluster = start_cluster(2)
    try:
        out = tmp_path / "killed"
        run = run_under_way(out, cluster)
        cluster.kill_worker(cluster.workers[0])
        _, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, stderr
    finally:
        cluster.stop()
    assert archives(out) == archives(local_run)
    assert budget(out) == budget(local_run)


@pytest.mark.slow
def test_a_lost_scheduler_is_one_clear_error_and_the_run_resumes(local_run, tmp_path) -> None:
    cluster = start_cluster(2)
    out = tmp_path / "lost"
    try:
        run = run_under_way(out, cluster)
        cluster.kill_scheduler()
        _, stderr = run.communicate(timeout=300)
    finally:
        cluster.stop()
    assert run.returncode == 1
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert f"lost the Dask scheduler at {cluster.address}" in errors[0]
    assert f"dei-run --resume {out}" in errors[0]
    assert (out / "checkpoint.json").exists() and not (out / "summary.json").exists()
    run_console(
        "dei-run",
        "--resume",
        str(out),
        "--evaluator",
        "local",
        "--progress",
        "quiet",
        "--no-report",
    )
    assert archives(out) == archives(local_run)
    assert budget(out) == budget(local_run)


def test_an_unreachable_scheduler_is_refused_before_the_run_starts(cli, tmp_path) -> None:
    from dask_cluster import free_port

    address = f"tcp://127.0.0.1:{free_port()}"
    result = cli(
        "dei-run",
        *RUN_FLAGS,
        "--evaluator",
        "dask",
        "--evaluator-address",
        address,
        "--out",
        str(tmp_path / "never"),
        check=False,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: cannot reach the Dask scheduler at {address}")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "never").exists()


def test_a_worker_on_another_version_is_refused(cli, tmp_path) -> None:
    cluster = start_cluster(1)
    try:
        stranger = cluster.add_worker(env=shadowed_version_env(tmp_path / "shadow", "9.9.9"))
        cluster.wait_for_workers(2)
        assert stranger.poll() is None
        result = cli(
            "dei-run",
            *RUN_FLAGS,
            "--evaluator",
            "dask",
            "--evaluator-address",
            cluster.address,
            "--out",
            str(tmp_path / "refused"),
            check=False,
            timeout=120,
        )
    finally:
        cluster.stop()
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert f"refusing the Dask workers at {cluster.address}" in error
    assert f"runs dei-framework 9.9.9 (this run: {dei_framework.__version__})" in error
    assert error.count("runs dei-framework") == 1  # the worker on the same version is fine
    assert not (tmp_path / "refused").exists()


def test_opponents_reach_each_worker_once_and_jobs_carry_a_reference(dask_address) -> None:
    import asyncio
    import pickle
    import time

    from dei_framework.evaluation import dask_worker
    from dei_framework.evaluation.dask_backend import DaskBackend
    from dei_framework.evaluation.local import Evaluator, evaluate

    domain = _coreware_domain()
    opponents = [domain.parse(text) for text in domain.initial_opponents()]
    texts = [domain.parse(text).text for text in domain.reference_opponents()] * 3
    backend = DaskBackend(domain, address=dask_address)
    evaluator = Evaluator(domain, backend=backend)

    async def batch(installed, offset):
        return await asyncio.gather(
            *(evaluator.evaluate(text, installed, seed=offset + i) for i, text in enumerate(texts))
        )

    async def scenario():
        installed = evaluator.install(opponents)
        first = await batch(installed, 0)
        # Longer than Dask's active memory manager's interval (2 s), which drops the replicas
        # of scattered data no waiting task needs: the set must still be on every worker.
        time.sleep(3)
        second = await batch(installed, len(texts))
        (shipped,) = backend._sets.values()  # one install for every job of the round
        carried = shipped.result()
        received = backend._client.run(dask_worker.received)
        return first + second, carried, received, backend.workers

    try:
        outcomes, carried, received, workers = asyncio.run(scenario())
    finally:
        evaluator.close()
    assert workers == 2 and len(received) == 2
    # What a job carries in place of the programs: a name, a small fraction of their size.
    assert len(pickle.dumps(carried)) * 10 < len(pickle.dumps(opponents))
    for counts in received.values():  # the domain and the set, each sent to each worker once
        assert counts[carried.name] == 1
        assert sum(1 for name in counts if name.startswith("dei-domain-")) >= 1
        assert all(count == 1 for count in counts.values())
    seeds = range(2 * len(texts))
    expected = [
        evaluate(domain, text, opponents, seed=seed)
        for seed, text in zip(seeds, texts * 2, strict=True)
    ]
    assert [o.evaluation for o in outcomes] == [e.evaluation for e in expected]
    assert all(o.evaluation is not None for o in outcomes)


@pytest.mark.slow
def test_without_an_address_a_local_cluster_serves_the_run(local_run, tmp_path) -> None:
    out = tmp_path / "own-cluster"
    result = run_console(
        "dei-run", *RUN_FLAGS, "--evaluator", "dask", "--eval-workers", "2", "--out", str(out)
    )
    assert archives(out) == archives(local_run)
    assert result.stderr == ""  # the cluster started and stopped without a word


def test_a_worker_joining_on_another_version_is_refused_and_named(tmp_path, capfd) -> None:
    import asyncio

    from dei_framework.evaluation.dask_backend import DaskBackend
    from dei_framework.evaluation.local import Evaluator, evaluate

    domain = _coreware_domain()
    opponents = [domain.parse(text) for text in domain.initial_opponents()]
    texts = [domain.parse(text).text for text in domain.reference_opponents()]
    cluster = start_cluster(1)
    try:
        backend = DaskBackend(domain, address=cluster.address)
        evaluator = Evaluator(domain, backend=backend)
        try:
            asyncio.run(evaluator.start())  # the cluster as it is now passes the check
            stranger = cluster.add_worker(env=shadowed_version_env(tmp_path / "shadow", "9.9.9"))
            stranger.wait(timeout=90)  # it closes itself on arrival
            wait_for(lambda: backend.refused, 30, "the refusal to reach the run")

            async def evaluations():
                return await asyncio.gather(
                    *(evaluator.evaluate(text, opponents, seed=i) for i, text in enumerate(texts))
                )

            outcomes = asyncio.run(evaluations())  # the run goes on with the other worker
            direct = set(backend._actors)
        finally:
            evaluator.close()
    finally:
        cluster.stop()
    (line,) = backend.refused
    refused_worker = line.split()[4]  # "refused the Dask worker tcp://... that joined ..."
    (kept,) = direct  # the refused worker got no actor; the other one has its own
    assert refused_worker.startswith("tcp://") and kept != refused_worker
    assert line.startswith("refused the Dask worker tcp://127.0.0.1:")
    assert f"that joined {cluster.address}" in line
    assert f"runs dei-framework 9.9.9 (this run: {dei_framework.__version__})" in line
    assert f"warning: {line}" in capfd.readouterr().err
    expected = [evaluate(domain, text, opponents, seed=i) for i, text in enumerate(texts)]
    assert [o.evaluation for o in outcomes] == [e.evaluation for e in expected]


def test_an_old_set_leaves_the_workers_unless_a_job_under_way_carries_it(
    dask_address, monkeypatch
) -> None:
    import asyncio

    from dei_framework.evaluation import dask_backend, dask_worker
    from dei_framework.evaluation.dask_backend import DaskBackend

    monkeypatch.setattr(dask_backend, "RESIDENT_SETS", 1)
    domain = _coreware_domain()
    programs = [domain.parse(text) for text in domain.initial_opponents()]
    backend = DaskBackend(domain, address=dask_address)

    def held() -> set[str]:
        return {
            name for names in backend._client.run(dask_worker.resident).values() for name in names
        }

    async def scenario():
        await backend.start()
        first = await backend.ship("first", programs[:1])
        backend._carried[first.name] += 1  # a job carrying it is under way
        second = await backend.ship("second", programs[:2])
        assert list(backend._sets) == ["first", "second"]  # beyond the limit, but carried
        kept = held()
        backend._carried[first.name] -= 1  # that job finished
        third = await backend.ship("third", programs[:3])
        await asyncio.sleep(0)
        return first, second, third, kept

    try:
        first, second, third, kept = asyncio.run(scenario())
        wait_for(
            lambda: first.name not in held() and second.name not in held(),
            30,
            "the old sets to leave the workers",
        )
        assert third.name in held()
    finally:
        backend.close()
    assert {first.name, second.name} <= kept


def _domain_bug(domain, message: str) -> None:
    """A job that fails as a buggy domain does (sent by value on the direct path)."""
    raise ValueError(message)


def _timed_nap(domain, seconds: float) -> tuple[int, str, float, float]:
    """A job that notes its process, its thread and when it ran (sent by value)."""
    import os
    import threading
    import time

    start = time.monotonic()  # one clock per machine: the workers share this one
    time.sleep(seconds)
    return os.getpid(), threading.current_thread().name, start, time.monotonic()


def _jobs_by_path(backend) -> dict[str, int]:
    """The jobs of ``backend`` the cluster's workers ran, by path (``actor``: direct; ``task``:
    scheduler); other runs sharing the cluster do not count."""
    from dei_framework.evaluation import dask_worker

    totals = {"actor": 0, "task": 0}
    for counts in backend._client.run(dask_worker.ran, backend._domain).values():
        for path, count in counts.items():
            totals[path] += count
    return totals


def test_candidate_jobs_go_straight_to_the_workers_actors(dask_address) -> None:
    import asyncio
    import sys

    import cloudpickle

    from dei_framework.evaluation.dask_backend import DaskBackend
    from dei_framework.evaluation.local import _parse

    domain = _coreware_domain()
    texts = [domain.parse(text).text for text in domain.reference_opponents()] * 2
    backend = DaskBackend(domain, address=dask_address)

    async def scenario():
        await backend.start()
        actors = sorted(backend._actors)
        before = _jobs_by_path(backend)
        parsed = await asyncio.gather(*(backend.run(_parse, text) for text in texts))
        after_candidates = _jobs_by_path(backend)
        # The workers cannot import this module: the function travels by value.
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
        try:
            with pytest.raises(ValueError, match="^a bug of the domain$"):
                await backend.run(_domain_bug, "a bug of the domain")
        finally:
            cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        after_bug = _jobs_by_path(backend)
        general = await backend.run(_parse, texts[0], lane="generality")
        after_generality = _jobs_by_path(backend)
        return actors, parsed + [general], before, after_candidates, after_bug, after_generality

    try:
        actors, parsed, before, candidates, bug, generality = asyncio.run(scenario())
        workers = set(backend._client.nthreads())
    finally:
        backend.close()
    assert set(actors) == workers and len(workers) == 2  # one actor per worker
    assert [one.program.text for one in parsed] == [*texts, texts[0]]
    # Every candidate job took the direct path, none went through the scheduler.
    assert candidates == {"actor": before["actor"] + len(texts), "task": before["task"]}
    # The domain's own exception is raised as it was, and the job is not done again.
    assert bug == {"actor": candidates["actor"] + 1, "task": candidates["task"]}
    # The generality lane stays a task of the scheduler (its low priority).
    assert generality == {"actor": bug["actor"], "task": bug["task"] + 1}


def test_a_worker_killed_during_an_actor_call_has_its_job_redone() -> None:
    import asyncio
    import os
    import signal

    from dei_framework.evaluation import dask_worker
    from dei_framework.evaluation.dask_backend import DaskBackend
    from dei_framework.evaluation.local import Evaluator, evaluate

    domain = _coreware_domain()
    opponents = [domain.parse(text) for text in domain.initial_opponents()]
    # About 2 s of evaluations per worker: the kill lands in the middle of a call.
    texts = [domain.parse(text).text for text in domain.reference_opponents()] * 120
    cluster = start_cluster(2)
    try:
        backend = DaskBackend(domain, address=cluster.address)
        evaluator = Evaluator(domain, backend=backend)

        async def scenario():
            await evaluator.start()
            actors = set(backend._actors)
            client = backend._client
            pids = await asyncio.to_thread(client.run, os.getpid)
            batch = asyncio.gather(
                *(evaluator.evaluate(text, opponents, seed=i) for i, text in enumerate(texts))
            )
            running: list[str] = []
            while not running:  # a worker that has begun its job and not answered yet
                await asyncio.sleep(0.05)
                ran = await asyncio.to_thread(client.run, dask_worker.ran, backend._domain)
                running = [
                    address
                    for address, counts in ran.items()
                    if counts.get("actor")
                    and address in backend._actors
                    and backend._actors[address].outstanding
                ]
            os.kill(pids[running[0]], signal.SIGKILL)
            outcomes = await asyncio.wait_for(batch, 300)
            ran = await asyncio.to_thread(client.run, dask_worker.ran, backend._domain)
            return actors, running[0], outcomes, ran, set(backend._actors)

        try:
            actors, killed, outcomes, ran, left = asyncio.run(scenario())
        finally:
            evaluator.close()
    finally:
        cluster.stop()
    assert len(actors) == 2 and left == actors - {killed}  # its actor is forgotten
    (survivor,) = ran
    assert ran[survivor].get("task", 0) >= 1  # the survivor redid the job, as a task
    expected = [evaluate(domain, text, opponents, seed=i) for i, text in enumerate(texts)]
    assert [o.evaluation for o in outcomes] == [e.evaluation for e in expected]
    assert all(o.evaluation is not None for o in outcomes)


def test_a_joining_worker_gets_an_actor_and_a_leaving_one_loses_it() -> None:
    import asyncio

    from dei_framework.evaluation import dask_worker
    from dei_framework.evaluation.dask_backend import DaskBackend
    from dei_framework.evaluation.local import _parse

    domain = _coreware_domain()
    programs = [domain.parse(text) for text in domain.initial_opponents()]
    texts = [program.text for program in programs]
    cluster = start_cluster(1)
    try:
        backend = DaskBackend(domain, address=cluster.address)

        async def scenario():
            await backend.start()
            first = set(backend._actors)
            joined = cluster.add_worker()
            await asyncio.to_thread(cluster.wait_for_workers, 2)
            await backend.ship("round-1", programs)  # once a round: the workers are counted
            await asyncio.to_thread(
                wait_for,
                lambda: len(backend._actors) == 2,
                30,
                "an actor on the worker that joined",
            )
            both = set(backend._actors)
            parsed = await asyncio.gather(*(backend.run(_parse, text) for text in texts))
            ran = await asyncio.to_thread(backend._client.run, dask_worker.ran, backend._domain)
            cluster.kill_worker(joined)
            await asyncio.to_thread(
                wait_for,
                lambda: len(backend._client.nthreads()) == 1,
                30,
                "the scheduler to drop the killed worker",
            )
            await backend.ship("round-2", programs)
            return first, both, parsed, ran, set(backend._actors)

        try:
            first, both, parsed, ran, after = asyncio.run(scenario())
        finally:
            backend.close()
    finally:
        cluster.stop()
    assert len(first) == 1 and len(both) == 2 and first < both
    assert [one.program.text for one in parsed] == texts
    # Jobs go to the actor with the fewest outstanding: both workers took some directly.
    assert set(ran) == both and all(counts.get("actor", 0) >= 1 for counts in ran.values())
    assert all(counts.get("task", 0) == 0 for counts in ran.values())
    assert after == first  # the worker that left has no actor any more


def test_a_one_thread_worker_runs_one_direct_job_at_a_time_in_its_task_thread(dask_address) -> None:
    import asyncio
    import sys

    import cloudpickle

    from dei_framework.evaluation.dask_backend import DaskBackend

    domain = _coreware_domain()
    backend = DaskBackend(domain, address=dask_address)

    async def scenario():
        await backend.start()
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
        try:
            return await asyncio.gather(*(backend.run(_timed_nap, 0.3) for _ in range(6)))
        finally:
            cloudpickle.unregister_pickle_by_value(sys.modules[__name__])

    try:
        naps = asyncio.run(scenario())
        threads = backend._client.nthreads()
    finally:
        backend.close()
    assert set(threads.values()) == {1}  # the cluster's workers have one thread each
    by_worker: dict[int, list[tuple[float, float]]] = {}
    for pid, thread, start, end in naps:
        # Not the worker's one actor thread: the thread its tasks run in.
        assert thread.startswith("Dask-Default-Threads"), thread
        by_worker.setdefault(pid, []).append((start, end))
    assert len(by_worker) == 2  # both workers took jobs
    for spans in by_worker.values():  # one after the other on each
        spans.sort()
        assert all(end <= later for (_, end), (later, _) in zip(spans[:-1], spans[1:], strict=True))


def test_the_worker_that_frees_up_first_takes_the_waiting_jobs() -> None:
    import asyncio
    import sys

    import cloudpickle

    from dei_framework.evaluation.dask_backend import DaskBackend

    cluster = start_cluster(2)  # its own: another test's jobs must not hold a worker up
    try:
        backend = DaskBackend(_coreware_domain(), address=cluster.address)

        async def scenario():
            await backend.start()
            cloudpickle.register_pickle_by_value(sys.modules[__name__])
            try:
                # One long job, then six short ones, asked for at once on two one-thread
                # workers: jobs handed out at once would be split 4 / 3 and the long
                # worker's share would wait behind it.
                return await asyncio.gather(
                    backend.run(_timed_nap, 3.0), *(backend.run(_timed_nap, 0.05) for _ in range(6))
                )
            finally:
                cloudpickle.unregister_pickle_by_value(sys.modules[__name__])

        try:
            naps = asyncio.run(scenario())
            paths = _jobs_by_path(backend)
        finally:
            backend.close()
    finally:
        cluster.stop()
    long_pid = naps[0][0]
    assert [pid for pid, *_ in naps[1:]].count(long_pid) == 0  # the other worker took them all
    assert paths == {"actor": 7, "task": 0}  # they waited in the run, then went direct
    assert max(end for *_, end in naps[1:]) < naps[0][3]  # done while the long one ran


def test_direct_jobs_of_two_event_loops_each_go_over_that_loops_own_connections(
    dask_address,
) -> None:
    import asyncio
    import threading

    from dei_framework.evaluation.dask_backend import DaskBackend
    from dei_framework.evaluation.local import _parse

    domain = _coreware_domain()
    texts = [domain.parse(text).text for text in domain.reference_opponents()] * 2
    backend = DaskBackend(domain, address=dask_address)
    answers: dict[str, tuple[list[str], dict[str, int]]] = {}

    def a_run(name: str) -> None:  # a run with an event loop of its own, in its own thread
        async def scenario():
            await backend.start()
            parsed = await asyncio.gather(*(backend.run(_parse, text) for text in texts))
            loop = asyncio.get_running_loop()
            kept = {
                address: len(comms)
                for (owner, address), comms in list(backend._connections.items())
                if owner is loop
            }
            return [one.program.text for one in parsed], kept

        answers[name] = asyncio.run(scenario())

    try:
        runs = [threading.Thread(target=a_run, args=(name,)) for name in ("first", "second")]
        for run in runs:
            run.start()
        for run in runs:
            run.join(120)
        paths = _jobs_by_path(backend)
        threads = backend._client.nthreads()
        connections = [comm for comms in backend._connections.values() for comm in comms]
        open_before = [not comm.closed() for comm in connections]
    finally:
        backend.close()
    assert set(answers) == {"first", "second"}
    for parsed, kept in answers.values():
        assert parsed == texts
        # Each loop kept its connections to the workers it called, at most one per thread.
        assert kept and all(1 <= count <= threads[address] for address, count in kept.items())
    assert paths["actor"] == 2 * len(texts) and paths["task"] == 0  # all went direct
    assert connections and all(open_before)
    assert all(comm.closed() for comm in connections)  # close() closed them


def _loop_settings(dask_worker=None, dask_scheduler=None) -> dict[str, float | None]:
    """A Dask process's profiler and event-loop check intervals, in ms (``None``: off)."""
    server = dask_worker or dask_scheduler
    return {
        name: getattr(server.periodic_callbacks.get(name), "callback_time", None)
        for name in ("profile", "tick")
    }


def test_a_local_cluster_of_the_run_runs_without_the_profiler_and_checks_its_loop_slowly() -> None:
    import asyncio

    from dei_framework.evaluation.dask_backend import DaskBackend

    backend = DaskBackend(_coreware_domain(), workers=1)
    try:
        asyncio.run(backend.start())
        workers = backend._client.run(_loop_settings)
        scheduler = backend._client.run_on_scheduler(_loop_settings)
    finally:
        backend.close()
    # Dask's defaults: the profiler every 10 ms, the loop checked every 20 ms.
    assert list(workers.values()) == [{"profile": None, "tick": 1000}]
    assert scheduler == {"profile": None, "tick": 1000}


def test_the_dask_settings_the_docs_and_ci_start_clusters_with_are_the_backends() -> None:
    from dei_framework.evaluation.dask_backend import quiet_environment

    root = Path(__file__).resolve().parents[3]
    wanted = {f"{name}={value}" for name, value in quiet_environment().items()}
    for path in ("docs/multi-machine.md", ".ci/run"):
        lines = (root / path).read_text().splitlines()
        exports = [set(line.split()[1:]) for line in lines if line.startswith("export DASK_")]
        assert exports == [wanted], path
