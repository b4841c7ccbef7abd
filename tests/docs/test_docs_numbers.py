"""No measured number is typed into the prose of README.md and docs/*.md.

A measured number belongs inside a render marker (``<!-- fig: set/name -->``), so that it comes
from a figure JSON and changes when the figure is regenerated. This test reads the prose
(outside code blocks, inline code, comments and markers) and fails, naming ``file:line``, on
every number with a unit that looks measured:

* a percentage, a p-value or a ratio written against its number (``1.2×``, ``10x``);
* a duration, size or rate written with decimals (``12.3 s``, ``4.5 ms``, ``1.5 kB``), unless
  it has one significant digit (``0.05 s``, ``0.5 s``: how settings are written).

Whole durations and sizes (``30 s``, ``4 MiB``) are how defaults, limits and schedules are
written, and a figure script always writes decimals, so they are not flagged; a spaced
``6 × 6`` is a product, not a ratio. What remains and is not measured is in :data:`ALLOWED`,
each with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_docs_figures import render

ROOT = Path(__file__).resolve().parents[2]

#: Numbers with a unit that are not measurements, with why (the text as the page writes it).
ALLOWED = {
    "95 %": "the nominal level of the confidence intervals",
    "10 %": "`new_fraction`'s default, and the 1-in-10 slow calls of the latency benchmarks",
    "90 %": "the 9-in-10 fast calls of the latency benchmarks' setting",
    "5 %": "the significance level: 1 − 95 %",
    "20 %": "the acceptance limit of the scaling criterion in performance.md",
    "30%": "the message loss the chaos test injects",
    "70 %": "the coreware operator's probability of a structural edit",
    "100%": "what tests/coreware/test_domain_operators.py asserts (every request assembles)",
    "93 %": "the coverage tests/analysis/test_stats.py asserts of the intervals",
    "96.8 %": "the exact level of the interval at n = 5 against 5 (a property of the test)",
    "94.4 %": "the next narrower exact level at n = 5 against 5",
    "95.7 %": "the exact level at n = 10 against 10",
    "124 %": "the paper's published result (quoted, not measured here)",
    "63 %": "the paper's published result",
    "63.0 %": "the paper's published result",
    "59.0 %": "the paper's published result",
    "80.6 %": "the paper's published result",
    "2×": "two free cores' ideal speed-up",
    "5×": "the acceptance limit of the ask/tell overhead criterion",
    "10×": "the acceptance limit of the one-node criterion",
    "10x": "the slow peer's setting: ten times the fast nodes' latency",
    "p < 0.05": "the significance threshold",
    "1.5 s": "how long the fault-injection test makes an operator fail",
    "1.6 s": "the chaos test's partition schedule",
    "1.8 s": "the chaos test's crash schedule",
    "2.8 s": "the chaos test's crash schedule",
    "1.5 kB": "the size of the champion the transport benchmark publishes",
    "0.25 s": "the gossip simulator's publishing interval",
    "0.15 s": "the evaluation time the pipeline benchmark sets",
}

NUMBER = r"(?<![\w.\-/#])(?P<number>\d+(?:\.\d+)?)"
SPACE = r"[ \u00a0\u202f]?"
PERCENT = re.compile(NUMBER + SPACE + r"%")
RATIO = re.compile(NUMBER + r"[×x](?![\w])")
QUANTITY = re.compile(
    NUMBER + SPACE + r"(?:ms|µs|ns|s|min|h|kB|KB|MB|GB|MiB|GiB|calls/s|evals/s)(?![\w/])"
)
P_VALUE = re.compile(r"\bp\s*(?:=|<|≤|>)?\s*\d?\.\d+")
HIDDEN = [
    re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE),  # code blocks
    render.BLOCK,
    render.INLINE,
    re.compile(r"`[^`\n]*`"),  # inline code
    re.compile(r"<!--.*?-->", re.DOTALL),  # comments
]


def prose(text: str) -> str:
    """``text`` with everything but prose blanked out (line numbers kept)."""
    for pattern in HIDDEN:
        text = pattern.sub(lambda match: re.sub(r"[^\n]", " ", match.group(0)), text)
    return text


def one_significant_digit(number: str) -> bool:
    return "." in number and len(number.replace(".", "").strip("0")) == 1


def typed_numbers(text: str) -> list[tuple[int, str]]:
    """(line, text) of every number in the prose of ``text`` that looks measured."""
    shown = prose(text)
    found = [*PERCENT.finditer(shown), *RATIO.finditer(shown), *P_VALUE.finditer(shown)]
    found += [
        match
        for match in QUANTITY.finditer(shown)
        if "." in match["number"] and not one_significant_digit(match["number"])
    ]
    normal = [
        (shown.count("\n", 0, m.start()) + 1, re.sub(r"[\u00a0\u202f]", " ", m.group(0)))
        for m in found
    ]
    return sorted((line, token) for line, token in normal if token not in ALLOWED)


PAGES = render.pages()


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_no_measured_number_is_typed_outside_the_markers(page):
    typed = typed_numbers(page.read_text())
    assert not typed, (
        "measured numbers typed by hand (put them in a figure JSON and render them with a "
        "<!-- fig: set/name --> marker, or take them out; a default or constant goes into "
        "ALLOWED with its reason):\n"
        + "\n".join(f"{page.relative_to(ROOT)}:{line}: {token}" for line, token in typed)
    )


def test_every_allowed_number_is_still_used():
    # An entry no page needs any more would let a later measurement with that value through.
    every = "\n".join(prose(page.read_text()) for page in PAGES)
    unused = [token for token in ALLOWED if token not in re.sub(r"[\u00a0\u202f]", " ", every)]
    assert not unused, f"ALLOWED entries no page uses: {unused}"


@pytest.mark.parametrize(
    "line",
    [
        "the suite took 20.8 min",
        "a CPU time of 18.7 s",
        "at 4.5 ms per call",
        "Holm p 0.738",
        "coverage 81 % here",
        "a 1.2× speed-up",
        "p = 0.43",
    ],
)
def test_a_hand_typed_measurement_is_caught(line):
    assert typed_numbers(f"Some prose.\n{line}\n") == [(2, typed_numbers(line)[0][1])]


def test_code_markers_and_settings_are_not_flagged():
    text = (
        "```\nran in 12.3 s\n```\n"
        "a `12.3 s` quote, <!-- fig: quickstart/cpu -->12.3 s<!-- /fig --> rendered,\n"
        "a 30 s default, a 0.05 s latency, a 6 × 6 grid, 4 MiB frames\n"
    )
    assert typed_numbers(text) == []
