"""Fixtures of the evaluation-backend tests: a Dask cluster on loopback (the one `.ci/run`
started, or one started here) and a seeded local run to compare with."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dask_cluster import ADDRESS_VARIABLE, RUN_FLAGS, run_console, start_cluster

pytest.importorskip(
    "distributed",
    reason='the dask backend tests need Dask distributed (pip install "dei-framework[dask]")',
)


@pytest.fixture(scope="session")
def dask_address():
    """A scheduler with two workers: `DEI_DASK_ADDRESS` (set by `.ci/run`) or started here."""
    given = os.environ.get(ADDRESS_VARIABLE)
    if given:
        yield given
        return
    cluster = start_cluster(2)
    try:
        yield cluster.address
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeded run of :data:`RUN_FLAGS` on the local backend (two worker processes)."""
    out = tmp_path_factory.mktemp("local") / "run"
    run_console("dei-run", *RUN_FLAGS, "--eval-workers", "2", "--out", str(out))
    return out
