"""The watch page in a real browser: Debian's headless Chromium, during a 4-node run.

Skips (with the reason) only where no Chromium is installed; `.ci/run` installs it.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import tempfile
from html.parser import HTMLParser

import pytest
from watch_helpers import get, read_url, wait_for, watched_run

from dei_framework.app.watch.run import WatchedRun

CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium is not installed (Debian: apt-get install chromium; .ci/run "
    "installs it)",
)


class Page(HTMLParser):
    """What the rendered DOM shows: panels with their data, flow elements, curves."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.panels: dict[str, dict[str, str]] = {}
        self.champions = self.transfers = self.filled = self.curves = 0
        self.version = None
        self.html = html
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "body":
            self.version = a.get("data-version")
        if tag == "article" and "panel" in classes:
            self.panels[a["data-node"]] = a
        elif tag == "circle" and "champion" in classes:
            self.champions += 1
        elif tag == "path" and "transfer" in classes:
            self.transfers += 1
        elif tag == "rect" and "filled" in classes:
            self.filled += 1
        elif tag == "path" and a.get("data-series"):
            self.curves += 1


def dump(url: str) -> Page:
    """The DOM of ``url`` after 4 s of the page's (virtual) time in headless Chromium.

    Each browser has a profile folder of its own, so that browsers started at once (tests
    under ``-n``, other users) do not share one.
    """
    with tempfile.TemporaryDirectory(prefix="dei-chromium-") as profile:
        result = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-proxy-server",
                f"--user-data-dir={profile}",
                "--window-size=1400,1200",
                "--virtual-time-budget=4000",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 0, result.stderr[-2000:]
    return Page(result.stdout)


def dump_filled(url: str, attempts: int = 3) -> Page:
    """:func:`dump` of a page that shows elites: in a Red Queen run every archive starts
    empty each round (the merged one is the best per cell of the nodes' current archives), so
    a page drawn just as all nodes entered a round shows none; it is drawn again then."""
    for _ in range(attempts - 1):
        page = dump(url)
        if page.filled:
            return page
    return dump(url)


def test_page_renders_node_panels_and_champion_flow_and_updates(toy_env, tmp_path) -> None:
    # A long run (240 calls per node): it must still run after two headless browsers have
    # drawn the page, which a loaded CI machine makes slow; the test stops it at the end.
    with watched_run(toy_env, tmp_path, delay=0.5, budget=960) as (url, _, _):
        # Coverage is drawn once the grid is known (from the first checkpoint or round file).
        wait_for(
            lambda s: (
                len(s["nodes"]) == 4
                and all(n["calls"] for n in s["nodes"])
                and s["merged"]["curve"]
                and s["merged"]["curve"][-1][1] is not None
            ),
            url + "api/state",
        )
        first = dump_filled(url)
        # Later: a round has ended, champions have travelled, the run is still going.
        state = wait_for(
            lambda s: s["transfers"] and s["run"]["status"] == "running", url + "api/state"
        )
        second = dump_filled(url)
        assert get(url + "api/state")["run"]["status"] == "running", "run ended too soon"
    nodes = [n["name"] for n in state["nodes"]]
    for page in (first, second):
        assert list(page.panels) == ["merged", *nodes]  # one panel per node, plus the merged one
        assert page.filled > 0 and page.curves == 2 * 5  # coverage and QD-score, 4 nodes + merged
    assert int(second.version) > int(first.version)
    for name in ["merged", *nodes]:
        assert int(second.panels[name]["data-calls"]) > int(first.panels[name]["data-calls"])
    assert second.champions >= max(first.champions, 4)  # one per node and finished round
    assert second.transfers >= max(first.transfers, 1)
    # One round numbering: 0-based indices, "round k of R" (header and every node panel).
    for page in (first, second):
        assert len(re.findall(r"round [0-3] of 4", page.html)) >= 1 + 4, page.html
        assert not re.search(r"rounds? \d+/\d", page.html)


def test_finished_experiment_page_offers_its_runs(finished_experiment, toy_env) -> None:
    watch = subprocess.Popen(
        ["dei", "watch", str(finished_experiment), "--port", "0"],
        env=toy_env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = read_url(watch)
        page = dump(url + "#run=homo%2Frepeat-1")
    finally:
        watch.send_signal(signal.SIGINT)
        watch.wait(timeout=30)
    expected = WatchedRun(finished_experiment / "homo" / "repeat-1").state(seconds=None)
    assert list(page.panels) == ["merged", "node-0", "node-1", "node-2", "node-3"]
    assert page.champions == len(expected["champions"]) == 4 * 2
    assert page.transfers == len(expected["transfers"])
    assert page.filled == len(expected["merged"]["cells"]) + sum(
        len(n["cells"]) for n in expected["nodes"]
    )  # 2-D grid: one drawn cell per elite
    options = re.findall(r"<option[^>]*>([^<]*)</option>", page.html)
    assert options == ["solo", "homo", "repeat-0", "repeat-1"]
    assert re.search(r'<option value="homo/repeat-1" selected="">', page.html)
    assert "finished" in page.html
    # A finished run: the header and every node panel say all rounds are done, as a count.
    assert page.html.count("all 2 rounds done") == 1 + 4
    assert not re.search(r"rounds? \d+/\d|round 2 of 2", page.html)
    # The transfer list: one outcome per line, a new niche said as what it is.
    items = re.findall(r"<li>(round \d+: .*?)</li>", page.html)
    shown = expected["transfers"][-12:]
    assert len(items) == len(shown) > 0
    outcome = r": (took its cell|kept out by a better elite|invalid there|not evaluated yet)"
    assert all(re.search(outcome, item) for item in items), items
    niche = "held no elite there in its previous round (a new niche)"
    assert sum(niche in item for item in items) == sum(bool(t["novel"]) for t in shown)
