"""One formatter for figures: the reports and the command line print a missing value alike."""

from __future__ import annotations

from dei_framework.analysis.formatting import MISSING, number, plus_minus, reference_text, value_at
from dei_framework.app.cli import _condition_table
from dei_framework.experiment.summary import PER_NODE_REPEAT, describe


def test_mean_and_spread_with_n_only_when_pooled_over_nodes() -> None:
    assert plus_minus(describe([1.0, 2.0, 3.0]), ".2f") == "2.00 ± 1.00"
    assert plus_minus(describe([0.5]), ".1%") == "50.0%"
    pooled = describe([1.0, 3.0, None], unit=PER_NODE_REPEAT)
    assert plus_minus(pooled, ".1f") == "2.0 ± 1.4 (n = 2)"


def test_missing_values_print_one_mark() -> None:
    assert plus_minus(None) == plus_minus({}) == plus_minus(describe([None])) == MISSING
    assert number(None) == number(float("nan")) == reference_text(None) == MISSING
    assert value_at([1, 2], 5) is None and value_at([1, 2], 1) == 2


def test_the_cli_condition_table_prints_the_reports_missing_mark() -> None:
    # A condition from before common ground: its common-ground figures are missing.
    merged = {"coverage": describe([0.25, 0.5]), "qd_score": describe([1.0, 2.0])}
    condition = {"nodes": 1, "budget": {"calls": [8, 8]}, "merged": merged}
    (line,) = _condition_table({"solo": condition})
    assert f"coverage {MISSING}" in line and f"QD-score {MISSING}" in line
    assert "(raw: 37.5% ± 17.7%, 1.50 ± 0.71)" in line


def test_a_value_that_rounds_to_zero_has_no_sign() -> None:
    assert number(-0.0001, ".2f") == "0.00" and number(-0.0, "+.2f") == "+0.00"
    assert number(-0.00004, ".1%") == "0.0%" and number(-0.02, ".2f") == "-0.02"
    assert plus_minus({"mean": -1e-9, "std": 0.0}, ".2f") == "0.00 ± 0.00"


def test_an_empty_reference_set_is_named_as_such() -> None:
    assert reference_text({"count": 0, "sha256": "e3b0c44298fc1c14"}) == "none"
    assert reference_text({"count": 4, "sha256": "1a2b3c4d5e6f7a8b"}) == (
        "4 programs, sha256 `1a2b3c4d5e6f`"
    )
