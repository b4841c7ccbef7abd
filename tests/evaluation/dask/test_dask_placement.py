"""Where a run's evaluations go: ``dei node --evaluator/--evaluator-address`` (as ``dei-run``
takes them) and a Dask scheduler reached over TLS."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from dask_cluster import RUN_FLAGS, free_port, start_cluster, tls_files

from dei_framework.contract.context import FactoryContext
from dei_framework.contract.errors import ConfigError
from dei_framework.evaluation.dask_backend import DaskBackend
from dei_framework.evaluation.local import Evaluator, evaluate
from dei_framework.plugin.manager import load_plugins

#: One node of a shared run, alone (no sharing, so any transport serves).
NODE_CONFIG = """\
domain = "coreware"
rounds = 2
iterations = 3
seed = 3
sharing = "none"

[[node]]
name = "a"
operator = "gp"
"""


def node_files(out: Path) -> dict[str, bytes]:
    """The node's merged archive and round archives, by relative path."""
    node = out / "processes" / "a"
    files = [node / "merged_archive.json", *sorted(node.glob("nodes/*/round-*.json"))]
    assert len(files) == 1 + 2
    return {str(path.relative_to(node)): path.read_bytes() for path in files}


@pytest.mark.slow
def test_dei_node_evaluates_on_the_dask_cluster_it_is_given(dask_address, cli, tmp_path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(NODE_CONFIG)
    common = ("dei", "node", "--config", str(config), "--name", "a", "--progress", "quiet")
    cli(*common, "--out", str(tmp_path / "local"), "--evaluator", "local", "--eval-workers", "1")
    cli(
        *common,
        "--out",
        str(tmp_path / "dask"),
        "--evaluator",
        "dask",
        "--evaluator-address",
        dask_address,
    )
    assert node_files(tmp_path / "dask") == node_files(tmp_path / "local")
    recorded = json.loads((tmp_path / "dask" / "processes" / "a" / "config.json").read_text())
    assert (recorded["evaluator"], recorded["evaluator_address"]) == ("dask", dask_address)


def test_dei_node_refuses_an_unreachable_scheduler(cli, tmp_path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(NODE_CONFIG)
    address = f"tcp://127.0.0.1:{free_port()}"
    result = cli(
        "dei",
        "node",
        "--config",
        str(config),
        "--name",
        "a",
        "--out",
        str(tmp_path / "never"),
        "--progress",
        "quiet",
        "--evaluator",
        "dask",
        "--evaluator-address",
        address,
        check=False,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: cannot reach the Dask scheduler at {address}")
    assert "Traceback" not in result.stderr


def test_dei_node_refuses_an_unknown_evaluator(cli, tmp_path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(NODE_CONFIG)
    result = cli(
        "dei",
        "node",
        "--config",
        str(config),
        "--name",
        "a",
        "--out",
        str(tmp_path / "never"),
        "--evaluator",
        "nowhere",
        check=False,
    )
    assert result.returncode == 1
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "nowhere" in error and "Traceback" not in result.stderr


def test_a_tls_address_without_certificates_is_one_clear_error(cli, tmp_path) -> None:
    address = f"tls://127.0.0.1:{free_port()}"
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
    )
    assert result.returncode == 1
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert f"the Dask scheduler at {address} speaks TLS: give tls_ca_file, tls_cert, " in error
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize(
    ("address", "options", "message"),
    [
        (
            "tcp://127.0.0.1:8786",
            {"tls_ca_file": "ca.pem", "tls_cert": "c.pem", "tls_key": "k"},
            "names TLS files but the Dask scheduler address tcp://127.0.0.1:8786 is not tls://",
        ),
        (
            "tls://127.0.0.1:8786",
            {"tls_ca_file": "missing.pem", "tls_cert": "c", "tls_key": "k"},
            "tls_ca_file = 'missing.pem': no such file",
        ),
        ("tcp://127.0.0.1:8786", {"knob": 1}, "takes no [evaluator_options] key 'knob'"),
    ],
)
def test_bad_tls_options_are_refused_by_name(address, options, message) -> None:
    with pytest.raises(ConfigError, match=None) as caught:
        DaskBackend(object(), address=address, tls=options)
    assert message in str(caught.value)


def test_a_tls_cluster_evaluates_as_the_local_pool(tmp_path) -> None:
    tls = tls_files(tmp_path / "tls")
    cluster = start_cluster(1, tls=tls)
    registry = load_plugins()
    domain = registry.domain("coreware").factory(
        FactoryContext(registry=registry, options={"rounds": 2}, seed=0)
    )
    opponents = [domain.parse(text) for text in domain.initial_opponents()]
    texts = [domain.parse(text).text for text in domain.reference_opponents()]
    try:
        assert cluster.address.startswith("tls://")
        evaluator = Evaluator(domain, backend=DaskBackend(domain, address=cluster.address, tls=tls))

        async def evaluations():
            return await asyncio.gather(
                *(evaluator.evaluate(text, opponents, seed=i) for i, text in enumerate(texts))
            )

        try:
            outcomes = asyncio.run(evaluations())
        finally:
            evaluator.close()
        # Without the certificates the scheduler is not reachable at all.
        plain = Evaluator(
            domain, backend=DaskBackend(domain, address=cluster.address.replace("tls://", "tcp://"))
        )
        with pytest.raises(Exception, match="Dask scheduler at tcp://"):
            asyncio.run(plain.start())
        plain.close()
    finally:
        cluster.stop()
    expected = [evaluate(domain, text, opponents, seed=i) for i, text in enumerate(texts)]
    assert [o.evaluation for o in outcomes] == [e.evaluation for e in expected]


def test_the_tls_flags_reach_the_backend(cli, tmp_path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("")
    result = cli(
        "dei-run",
        *RUN_FLAGS,
        "--evaluator",
        "dask",
        "--evaluator-address",
        "tcp://127.0.0.1:8786",
        "--evaluator-tls-ca",
        str(ca),
        "--evaluator-tls-cert",
        str(ca),
        "--evaluator-tls-key",
        str(ca),
        "--out",
        str(tmp_path / "never"),
        check=False,
    )
    assert result.returncode == 1
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "names TLS files but the Dask scheduler address tcp://127.0.0.1:8786 is not" in error


@pytest.mark.slow
def test_dei_node_evaluates_over_tls_with_the_flags(cli, tmp_path) -> None:
    tls = tls_files(tmp_path / "tls")
    config = tmp_path / "run.toml"
    config.write_text(NODE_CONFIG)
    common = ("dei", "node", "--config", str(config), "--name", "a", "--progress", "quiet")
    cli(*common, "--out", str(tmp_path / "local"), "--evaluator", "local", "--eval-workers", "1")
    cluster = start_cluster(1, tls=tls)
    try:
        cli(
            *common,
            "--out",
            str(tmp_path / "tls-run"),
            "--evaluator",
            "dask",
            "--evaluator-address",
            cluster.address,
            "--evaluator-tls-ca",
            tls["tls_ca_file"],
            "--evaluator-tls-cert",
            tls["tls_cert"],
            "--evaluator-tls-key",
            tls["tls_key"],
        )
    finally:
        cluster.stop()
    assert node_files(tmp_path / "tls-run") == node_files(tmp_path / "local")
    recorded = json.loads((tmp_path / "tls-run" / "processes" / "a" / "config.json").read_text())
    assert recorded["evaluator_address"] == cluster.address
    assert recorded["evaluator_options"] == tls
