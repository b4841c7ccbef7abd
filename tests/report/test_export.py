"""``dei export`` in the core: the plain-text default and the ``dei_export_program`` hook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import toy_domain

from dei_framework import hookimpl
from dei_framework.contract.errors import ConfigError
from dei_framework.plugin.manager import load_plugins
from dei_framework.report.export import export_programs
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.ensemble import run


class ToyFormat:
    """Gives the toy domain a format of its own, and declines every other domain."""

    @hookimpl
    def dei_export_program(self, domain, program):
        if domain != "toy":
            return None
        return ".toy", f"# {program.title}\n# {program.origin}\n{program.text}\n"


class OtherFormat:
    @hookimpl
    def dei_export_program(self, domain, program):
        return None if domain != "elsewhere" else (".x", "not toy")


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("export") / "run"
    nodes = [NodeConfig(name=f"node-{i}", operator="toy-random") for i in range(2)]
    config = RunConfig(domain="toy", nodes=nodes, budget=16, rounds=2, eval_workers=0)
    run(config, path, registry=load_plugins([toy_domain]))
    return path


def test_without_a_format_the_text_is_written_unchanged(toy_run, tmp_path) -> None:
    written = export_programs(toy_run, tmp_path / "out", load_plugins([toy_domain]))
    records = [json.loads(line) for line in (tmp_path / "out" / "programs.jsonl").open()]
    assert len(records) == len(written) > 0
    for record, path in zip(records, written, strict=True):
        assert path.suffix == ".txt" and path.name == record["file"]
        assert path.read_text() == record["text"].rstrip("\n") + "\n"
        assert record["domain"] == "toy" and record["run"] == "run"


def test_the_domains_plugin_gives_the_format(toy_run, tmp_path) -> None:
    registry = load_plugins([toy_domain, OtherFormat(), ToyFormat()])
    written = export_programs(toy_run, tmp_path / "out", registry, what="champions")
    assert {path.suffix for path in written} == {".toy"}
    first = written[0].read_text().splitlines()
    assert first[0] == "# run node-0 round 0 champion"
    assert first[1].startswith("# run run, node node-0, operator ")


def test_bad_arguments_are_config_errors(toy_run, tmp_path) -> None:
    registry = load_plugins([toy_domain])
    with pytest.raises(ConfigError, match="--what must be one of"):
        export_programs(toy_run, tmp_path / "out", registry, what="best")
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="is a file"):
        export_programs(toy_run, tmp_path / "file", registry)
