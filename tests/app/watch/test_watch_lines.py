"""Fast line reading: the search loop's evaluated lines by pattern give what JSON parsing gives."""

from __future__ import annotations

import json

from dei_framework.app.watch.lines import Evaluated, events
from dei_framework.app.watch.state import RunState
from dei_framework.app.watch.tail import parse_lines


def model_of(items) -> RunState:
    state = RunState()
    for item in items:
        if isinstance(item, Evaluated):
            state.evaluated(item)
        else:
            state.apply(item)
    return state


def picture(state: RunState) -> dict:
    """Everything the state serves, as plain data."""
    return {
        "events": state.events,
        "calls": state.calls,
        "kinds": state.kinds,
        "merged": state.merged.to_json(None, 0.0),
        "merged_curve": state.merged_curve.values(),
        "transfers": [t.to_json() for t in state.transfers],
        "texts": state.texts,
        "champions": state.champions,
        "extent": state.extent,
        "nodes": {
            name: {
                **node.archive.to_json(None, 0.0),
                "statuses": node.statuses,
                "causes": node.causes,
                "examples": node.examples,
                "curve": node.curve.values(),
                "calls": node.calls,
                "round_calls": node.round_calls,
                "invalid": node.invalid,
                "operator": node.operator,
                "best_ever": node.best_ever,
                "round_stats": node.round_stats,
            }
            for name, node in state.nodes.items()
        },
    }


def test_a_real_run_reads_the_same_by_pattern_and_by_json(finished_run) -> None:
    text = (finished_run / "events.jsonl").read_text()
    fast = list(events(text))
    evaluated = sum(1 for line in text.splitlines() if '"event":"evaluated"' in line)
    # The search loop's own lines take the fast path (all but the invalid candidates).
    assert sum(isinstance(item, Evaluated) for item in fast) > 0.8 * evaluated
    assert picture(model_of(fast)) == picture(model_of(parse_lines(text)))


def test_lines_outside_the_layout_fall_back_to_json_with_the_same_fields() -> None:
    base = {
        "event": "evaluated",
        "id": "n-r0-s1",
        "node": "n",
        "round": 0,
        "operator": "gp",
        "kind": "mutate",
        "parent": None,
        "slot": 0,
        "status": "new",
        "fitness": 1.5,
        "descriptor": {"x": 0.5},
        "cell": [2, 3],
        "timings": {"eval_s": 0.1},
    }
    variants = [
        base,
        {**base, "id": 'quote"d', "operator": "caf\u00e9"},  # escaped strings
        {**base, "fitness": 2.5e-05},  # an exponent
        {**base, "descriptor": {"x": {"nested": 1}}},
        {
            **base,
            "status": "invalid",
            "error": "line 3: bad",
            "fitness": None,
            "cell": None,
            "descriptor": None,
        },
        {k: base[k] for k in reversed(base)},  # another writer's field order
    ]
    compact = "".join(json.dumps(v, separators=(",", ":")) + "\n" for v in variants)
    spaced = "".join(json.dumps(v) + "\n" for v in variants)  # json.dumps' default spacing
    for text in (compact, spaced):
        items = list(events(text + "not json\n\n[1]\n" + '{"event":"evaluated","id":"x"'))
        assert len(items) == len(variants)
        assert picture(model_of(items)) == picture(model_of(parse_lines(text)))
    fast = [isinstance(item, Evaluated) for item in events(compact)]
    assert fast == [True, False, True, False, False, False]
    infinite = json.dumps({**base, "fitness": float("inf")}, separators=(",", ":"))
    (item,) = events(infinite)
    assert item == {**base, "fitness": float("inf")}  # "Infinity" is read by json
    first = next(events(compact))
    assert first == Evaluated("n", 0, "mutate", "new", 1.5, (2, 3), "n-r0-s1", "gp", '{"x":0.5}')
