"""The paper's protocol as a preset, and the documented deviations from it, pinned to the code."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest
from dei_coreware.domain import CorewarOptions

from dei_framework.app.cli_experiment import plan_from_flags
from dei_framework.contract.errors import ConfigError
from dei_framework.plugin.manager import load_plugins
from dei_framework.runtime.config import resolve as cfg
from dei_framework.runtime.config import run_config
from dei_framework.runtime.config.settings import DEI_PAPER, get_preset

DOCS = Path(__file__).resolve().parents[2] / "docs"

#: The paper's settings (shared/docs/dei-notes.md), typed in independently of the preset.
PAPER = {
    "domain": "coreware",
    "nodes": 4,
    "rounds": 20,
    "new_fraction": 0.1,
    "max_champions": 20,
    "sharing": "champion",
    "axes": ("tsp", "mc"),
    "selector": "uniform",
    "archive": "grid",
    # 250 calls per round and condition, 20 rounds; 62 per node per round is the nearest
    # whole equal split over 4 nodes.
    "budget": 62 * 4 * 20,
}
PAPER_MARS = {
    "coresize": 8000,
    "cycles": 80000,
    "processes": 8000,
    "maxlength": 100,
    "mindistance": 100,
    "rounds": 20,
}


def table(path: Path, heading: str) -> list[list[str]]:
    """The rows of the first Markdown table after ``heading``."""
    text = path.read_text()
    start = text.index(heading)
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif rows:
            break
    return rows[1:]  # without the header


def test_the_preset_holds_the_papers_values() -> None:
    assert dict(DEI_PAPER.settings) == PAPER
    assert dict(DEI_PAPER.domain_options) == PAPER_MARS
    assert DEI_PAPER.operator_options == {"temperature": 1.0}
    assert DEI_PAPER.experiment == {"conditions": "solo,homo,diverse"}
    assert get_preset("dei-paper") is DEI_PAPER
    with pytest.raises(ConfigError, match="unknown preset 'drq'"):
        get_preset("drq")


def test_dei_run_with_the_preset_gets_exactly_those_settings() -> None:
    config = cfg.resolve_config(
        {"preset": "dei-paper", "operators": ("gp", "templates")}, load_plugins()
    )
    assert (config.domain, len(config.nodes), config.rounds, config.budget) == (
        "coreware",
        4,
        20,
        4960,
    )
    assert (config.new_fraction, config.max_champions, config.sharing, config.axes) == (
        0.1,
        20,
        "champion",
        ("tsp", "mc"),
    )
    assert dict(config.domain_options) == PAPER_MARS
    assert all(node.options["temperature"] == 1.0 for node in config.nodes)


def test_flags_win_over_the_preset_and_say_so(capsys) -> None:
    config = cfg.resolve_config(
        {
            "preset": "dei-paper",
            "operators": ("gp",),
            "rounds": 8,
            "domain_option": ("cycles=8000",),
        },
        load_plugins(),
    )
    assert config.rounds == 8 and config.domain_options["cycles"] == 8000
    assert config.domain_options["coresize"] == 8000
    err = capsys.readouterr().err
    assert "not the dei-paper protocol any more" in err
    assert "--rounds 8 (preset: 20)" in err and "cycles=8000 (preset: 80000)" in err
    # --iterations replaces the preset's budget instead of clashing with it.
    assert (
        cfg.resolve_config(
            {"preset": "dei-paper", "operators": ("gp",), "iterations": 3}, load_plugins()
        ).budget
        is None
    )


def test_an_experiment_with_the_preset_records_it() -> None:
    plan = plan_from_flags(
        {"preset": "dei-paper", "operators": ("gp", "templates")}, load_plugins()
    )
    assert plan.preset == "dei-paper" and plan.budget == 4960 and plan.base.rounds == 20
    assert [c.name for c in plan.conditions] == ["solo", "homo:gp", "homo:templates", "diverse"]
    assert all(c.nodes == 4 for c in plan.conditions[1:])
    assert plan.to_json()["preset"] == "dei-paper"


def test_paper_protocol_doc_lists_what_the_preset_sets() -> None:
    rows = table(DOCS / "paper-protocol.md", "## What `--preset dei-paper` sets")
    documented = {setting: value for setting, value, _ in rows}

    def show(value):
        return ",".join(value) if isinstance(value, tuple) else str(value)

    expected = {
        f"`{k}`": show(v)
        for k, v in {
            **DEI_PAPER.settings,
            **DEI_PAPER.operator_options,
            **DEI_PAPER.experiment,
        }.items()
    }
    for key, value in DEI_PAPER.domain_options.items():
        label = f"`{key}` (domain)" if f"`{key}`" in expected else f"`{key}`"
        expected[label] = show(value)
    assert documented == expected


#: How to read each default listed in docs/deviations.md from the code.
DEFAULTS = {
    "`rounds`": lambda: str(run_config.DEFAULTS["rounds"]),
    "`budget` per node": lambda: str(cfg.DEFAULT_CALLS_PER_NODE),
    "`generality_rounds`": lambda: str(CorewarOptions().generality_rounds),
    "`opponents`": lambda: ",".join(CorewarOptions().opponents),
    "`transport`": lambda: run_config.DEFAULTS["transport"],
    "`human_set`": lambda: (
        f"bundled generality folder ({_bundled_generality()} project-written warriors)"
        if CorewarOptions().human_set is None
        else "changed"
    ),
}


def _bundled_generality() -> int:
    from dei_coreware.generality import BUNDLED_GENERALITY

    return len(list(BUNDLED_GENERALITY.glob("*.red")))


def test_deviations_doc_matches_every_listed_default() -> None:
    rows = table(DOCS / "deviations.md", "## Defaults that differ from the paper")
    listed = {row[0]: row for row in rows}
    assert set(listed) == set(DEFAULTS), "every listed default needs a check here, and back"
    for setting, read in DEFAULTS.items():
        assert listed[setting][1] == read(), f"{setting}: docs/deviations.md is out of date"


def test_listed_preset_values_match_the_preset() -> None:
    rows = {
        row[0]: row
        for row in table(DOCS / "deviations.md", "## Defaults that differ from the paper")
    }
    assert rows["`rounds`"][3] == str(DEI_PAPER.settings["rounds"])
    assert rows["`budget` per node"][3] == f"{DEI_PAPER.settings['budget']} in total"
    assert re.fullmatch(r"not set", rows["`transport`"][3])
    assert "transport" not in DEI_PAPER.settings
    assert attrs.fields(CorewarOptions).generality_rounds.default == 10
