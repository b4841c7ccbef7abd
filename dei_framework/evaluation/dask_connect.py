"""Connecting the ``dask`` backend to its cluster: a local cluster started for a run given no
address (quiet: :data:`QUIET_CLUSTER`), a client opened (over TLS when the run has its files)
once the cluster has a worker, and Dask's own log lines silenced.

The names are importable from :mod:`dei_framework.evaluation.dask_backend` as well, whose
:class:`~dei_framework.evaluation.dask_backend.DaskBackend` connects with them.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from typing import Any

from dei_framework.contract.backend import EvaluatorLost
from dei_framework.evaluation.dask_options import CONNECT_SECONDS

#: Seconds to wait for a first worker to join the scheduler.
WORKER_WAIT_SECONDS = 60.0
#: Dask settings for a cluster that evaluates: Dask's statistical profiler samples a worker's
#: threads every 10 ms, and its event-loop health check wakes every process's loop every
#: 20 ms; on the cores that evaluate, both take CPU (and a worker's GIL) from the evaluations
#: (``benchmarks/scale_out.py``: ``idle_cpu_ms_per_s``, ``task_ms``). Neither is needed to
#: evaluate: without the profiler the dashboard shows no profile, and a loop blocked for
#: longer than Dask's warning limit (3 s) is still reported. A local cluster of the run gets
#: them; ``dask scheduler`` and ``dask worker`` get them from :func:`quiet_environment`
#: (docs/multi-machine.md).
QUIET_CLUSTER = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
}


def quiet_environment() -> dict[str, str]:
    """:data:`QUIET_CLUSTER` as the environment variables Dask reads its settings from."""
    return {
        "DASK_" + key.upper().replace(".", "__").replace("-", "_"): str(value)
        for key, value in QUIET_CLUSTER.items()
    }


def quiet_dask_logs() -> None:
    """Silences Dask's loggers: every failure the client meets reaches the user as one message
    of the backend (EvaluatorLost, WorkerDied, a refused worker); Dask's own log lines for the
    same event (reconnect attempts with their tracebacks) would bury it."""
    for name in ["distributed", *logging.root.manager.loggerDict]:
        if name.partition(".")[0] == "distributed":  # Dask's config sets some apart
            logging.getLogger(name).setLevel(logging.CRITICAL)


def start_local_cluster(distributed: Any, workers: int | None) -> Any:
    """Starts a local cluster for a run given no address: ``workers`` worker processes (``None``
    or 0: Dask's default), one thread each, quiet (:data:`QUIET_CLUSTER`)."""
    import dask.config

    with warnings.catch_warnings(), dask.config.set(QUIET_CLUSTER):
        # Another cluster's HTTP port: a note only.
        warnings.filterwarnings("ignore", message="Port .* is already in use")
        return distributed.LocalCluster(
            n_workers=workers or None,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )


def open_client(distributed: Any, address: str, tls: Mapping[str, str] | None) -> Any:
    """A client of the scheduler at ``address`` (over TLS with ``tls``' files, when given), once
    the cluster has a worker.

    Raises:
        EvaluatorLost: The scheduler cannot be reached, or has no worker in time.
    """
    security = None
    if tls:
        security = distributed.security.Security(
            tls_ca_file=tls["tls_ca_file"],
            tls_client_cert=tls["tls_cert"],
            tls_client_key=tls["tls_key"],
            require_encryption=True,
        )
    try:
        # direct_to_workers: jobs on the direct path and results go between the run
        # and the workers without the scheduler in between.
        client = distributed.Client(
            address,
            timeout=CONNECT_SECONDS,
            set_as_default=False,
            security=security,
            direct_to_workers=True,
        )
    except (OSError, TimeoutError) as exc:
        raise EvaluatorLost(
            f"cannot reach the Dask scheduler at {address}: {exc}; is it running?"
        ) from None
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
    except (OSError, TimeoutError):
        client.close()
        raise EvaluatorLost(
            f"the Dask scheduler at {address} has no workers (waited {WORKER_WAIT_SECONDS:.0f}s)"
        ) from None
    return client
