"""The run summary's event figures, counted as events are logged (run_summary.EventTally)."""

from __future__ import annotations

import numpy as np

from dei_framework.contract.descriptors import DescriptorSpace, UniformAxis
from dei_framework.runtime.summary import EventTally

SPACE = DescriptorSpace([UniformAxis("x", 0.0, 1.0, 4), UniformAxis("y", 0.0, 1.0, 5)])


def _evaluated(node: str, kind: str, x: float | None, y: float | None, cell=None) -> dict:
    valid = x is not None
    return {
        "event": "evaluated",
        "node": node,
        "kind": kind,
        "status": "new" if valid else "invalid",
        "descriptor": {"x": x, "y": y} if valid else None,
        "cell": cell if cell is not None else ([0, 0] if valid else None),
    }


EVENTS = [
    _evaluated("a", "new", 0.1, 0.9),
    _evaluated("a", "mutate", 0.6, 0.3),
    _evaluated("a", "mutate", 0.6, 0.35),
    _evaluated("a", "mutate", None, None),
    _evaluated("a", "warm", 0.9, 0.9),  # not operator-made: no cell counted
    _evaluated("b", "new", 0.95, 0.05),
    _evaluated("b", "peer", 0.2, 0.2),
    {"event": "round", "node": "a", "round": 0},
    {"event": "received", "node": "b", "round": 1},
]


def _expected_histograms(events: list[dict]) -> dict[str, np.ndarray]:
    """What the summary computed before the tally: every cell placed again in the run's grid,
    then counted per node."""
    histograms: dict[str, np.ndarray] = {}
    for event in events:
        if (
            event.get("event") != "evaluated"
            or event.get("cell") is None
            or event.get("kind") not in ("new", "mutate")
        ):
            continue
        counts = histograms.setdefault(event["node"], np.zeros(int(np.prod(SPACE.shape))))
        counts[np.ravel_multi_index(SPACE.cell(event["descriptor"]), SPACE.shape)] += 1
    return histograms


def test_the_tally_counts_what_reading_the_log_back_counted() -> None:
    tally = EventTally(SPACE, EVENTS[:4])
    tally.add(EVENTS[4:])  # counted in pieces, as a run logs them
    assert tally.evaluated == 7 and tally.invalid == 1
    # operator-made candidates per node (what a resumed run's progress display starts from)
    assert tally.made == {"a": 4, "b": 1} and tally.made_invalid == {"a": 1, "b": 0}
    expected = _expected_histograms(EVENTS)
    histograms = tally.histograms()
    assert sorted(histograms) == sorted(expected) == ["a", "b"]
    for node, histogram in expected.items():
        assert np.array_equal(histograms[node], histogram), node
    assert histograms["a"].sum() == 3 and histograms["b"].sum() == 1


def test_a_placed_nodes_cells_are_taken_as_logged_and_others_are_placed_again() -> None:
    # Node "a" logs cells of the run's grid; node "b" logs cells of its own archive (wrong
    # here on purpose): only b's are placed again from the descriptor.
    events = [
        _evaluated("a", "new", 0.1, 0.1, cell=[3, 4]),
        _evaluated("b", "new", 0.1, 0.1, cell=[3, 4]),
    ]
    histograms = EventTally(SPACE, events, placed=["a"]).histograms()
    flat = SPACE.shape[1]
    assert histograms["a"][3 * flat + 4] == 1
    assert histograms["b"][0] == 1 and histograms["b"].sum() == 1
