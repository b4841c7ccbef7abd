"""A 3-node DEI ensemble across three processes talking through three real AXL nodes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.axl


def test_three_dei_processes_share_champions_over_real_axl(axl_nodes, toy_env, tmp_path) -> None:
    names = ["alpha", "beta", "gamma"]
    processes = []
    for name, api in zip(names, axl_nodes, strict=True):
        config = tmp_path / f"{name}.toml"
        # A 0.3 s operator makes each round last about a second (3 batches), so the processes'
        # rounds overlap whatever their start-up times; nodes never wait for each other.
        config.write_text(
            'domain = "toy"\ntransport = "axl"\nbudget = 72\nrounds = 6\nseed = 1\n'
            f'eval_workers = 0\naxl_api = "{api}"\n'
            f'[[node]]\nname = "{name}"\noperator = "toy-random"\n'
            "[operator_options]\ndelay = 0.3\n"
            "[transport_options]\nheartbeat = 0.2\n"
        )
        processes.append(
            subprocess.Popen(
                [
                    "dei-run",
                    "--config",
                    str(config),
                    "--out",
                    str(tmp_path / name),
                    "--progress",
                    "quiet",
                    "--no-report",
                ],
                env=toy_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for process in processes:
        _, stderr = process.communicate(timeout=240)
        assert process.returncode == 0, stderr[-2000:]
    for name in names:
        run_dir = Path(tmp_path / name)
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["budget"]["calls"] == 72
        log = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
        senders = {e["from"] for e in log if e["event"] == "received"}
        assert senders == set(names) - {name}, f"{name} received from {senders}"
        assert summary["nodes"][name]["sharing"]["dropped"].get("forged", 0) == 0
