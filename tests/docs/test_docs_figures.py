"""The figures in README.md and docs/*.md are exactly what their JSON files render to.

Every number in the docs that describes this project's results sits in a figure region
(``<!-- figure: set/name -->`` ... ``<!-- /figure -->``, or ``<!-- fig: set/name -->`` inline)
rendered by ``docs/figures/render.py`` from ``docs/figures/<set>.json``, which the script
``docs/figures/<set>.py`` writes. Editing a figure by hand, or regenerating a JSON without
rendering, fails here.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "figures"
NOT_SETS = {"figurelib", "render"}


def load_renderer():
    spec = importlib.util.spec_from_file_location("dei_docs_render", FIGURES / "render.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render = load_renderer()
PAGES = render.pages()
SET_JSONS = sorted(FIGURES.glob("*.json"))


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_figures_match_their_json(page):
    differing = render.stale([page], {})
    assert not differing, (
        "figures differ from docs/figures/*.json; run `python docs/figures/render.py` "
        "(never edit a figure by hand):\n" + "".join(differing.values())
    )


def test_the_docs_have_figures_and_every_set_is_used():
    used = {
        figure_id.split("/")[0]
        for page in PAGES
        for figure_id in render.figure_ids(page.read_text())
    }
    assert "families" in used, "docs/experiments.md must render the family experiment"
    assert used == {path.stem for path in SET_JSONS}, "a figure JSON no page uses, or vice versa"


@pytest.mark.parametrize("path", SET_JSONS, ids=[p.name for p in SET_JSONS])
def test_figure_json_names_its_script_and_provenance(path):
    record = json.loads(path.read_text())
    assert record["set"] == path.stem
    assert record["script"] == f"docs/figures/{path.stem}.py"
    assert (ROOT / record["script"]).is_file(), f"{record['script']} does not exist"
    assert len(record["git"]["commit"] or "") == 40
    # From a commit, not from uncommitted code (figurelib refuses that unless told otherwise).
    assert record["git"]["dirty"] is False, f"{path.name} came from a tree with uncommitted changes"
    # A commit in this branch's history, so that anyone can check it out and regenerate the set.
    in_history = subprocess.run(
        ["git", "merge-base", "--is-ancestor", record["git"]["commit"], "HEAD"],
        cwd=ROOT,
        capture_output=True,
    )
    assert in_history.returncode == 0, (
        f"{path.name} records commit {record['git']['commit'][:12]}, which is not in the history "
        "of HEAD (regenerate it from a commit of this branch)"
    )
    assert record["commands"] and all(isinstance(c, str) and c for c in record["commands"])
    assert record["n"] and record["spread"] and record["date"]
    assert record["machine"]["cores"] >= 1
    assert isinstance(record["quick"], bool) and isinstance(record["data"], dict)


def test_every_figure_script_has_its_json():
    scripts = {p.stem for p in FIGURES.glob("*.py")} - NOT_SETS
    assert scripts == {p.stem for p in SET_JSONS}


def first_block(pages):
    for page in pages:
        match = render.BLOCK.search(page.read_text())
        if match:
            return page, match
    raise AssertionError("no block figure in the docs")


def test_changing_one_number_by_hand_is_caught():
    page, match = first_block(PAGES)
    text = page.read_text()
    body_start = match.start("body")
    digit = next(i for i in range(body_start, match.end("body")) if text[i].isdigit())
    edited = text[:digit] + str((int(text[digit]) + 1) % 10) + text[digit + 1 :]
    assert render.render_page(edited, page, {}) == text


def test_inline_figure_is_rendered_and_checked():
    cache: dict = {}
    figure_set, value = render.lookup("families/repeats", cache)
    page = ROOT / "docs" / "experiments.md"
    text = "over <!-- fig: families/repeats -->999<!-- /fig --> repeats"
    assert render.render_page(text, page, cache) == (
        f"over <!-- fig: families/repeats -->{value}<!-- /fig --> repeats"
    )
    assert value == str(figure_set.record["data"]["repeats"])


def test_block_figure_carries_its_source_and_quick_warning():
    cache: dict = {}
    page = ROOT / "docs" / "experiments.md"
    text = "<!-- figure: families/all-conditions -->\nold\n<!-- /figure -->\n"
    rendered = render.render_page(text, page, cache)
    record = cache["families"].record
    assert "| condition |" in rendered and "old" not in rendered
    assert f"commit `{record['git']['commit'][:7]}`" in rendered
    assert "(figures/families.json)" in rendered
    assert ("quick pipeline run" in rendered) == record["quick"]


@pytest.mark.parametrize(
    "text, cause",
    [
        ("<!-- figure: families/no-such-figure -->\n<!-- /figure -->", "has no 'no-such-figure'"),
        ("<!-- fig: nosuchset/x -->1<!-- /fig -->", "nosuchset.json does not exist"),
        ("<!-- figure: families/all-conditions -->\nnever closed\n", "without a matching"),
        ("<!-- fig: families/all-conditions -->x<!-- /fig -->", "spans several lines"),
    ],
)
def test_bad_markers_name_the_cause(text, cause):
    with pytest.raises(render.FigureError, match=cause):
        render.render_page(text, ROOT / "docs" / "x.md", {})


def test_render_check_exits_1_and_writes_nothing_on_a_stale_page(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    stale_text = "<!-- fig: families/repeats -->999<!-- /fig -->\n"
    page.write_text(stale_text)
    monkeypatch.setattr(render, "pages", lambda: [page])
    lines: list[str] = []
    assert render.main(["--check"], write=lines.append) == 1
    assert page.read_text() == stale_text and "999" in "".join(lines)
    assert render.main([], write=lines.append) == 0
    assert page.read_text() != stale_text
    assert render.main(["--check"], write=lines.append) == 0


def synthetic_summary(**comparison_keys):
    stat = {"mean": 0.5, "std": 0.1, "n": 3, "values": [0.4, 0.5, 0.6]}
    block = {
        "operators": ["a"],
        "nodes": 1,
        "repeats_completed": 3,
        "merged": {
            "coverage": stat,
            "qd_score": stat,
            "common": {"coverage": stat, "qd_score": stat},
        },
        "niche_novelty": stat,
        "operator_divergence": stat,
    }
    comparisons = [
        {
            "a": "diverse",
            "b": "solo",
            "metric": metric,
            "diff": 0.25,
            "p_value": 0.1,
            "n_a": 3,
            "n_b": 3,
            **comparison_keys,
        }
        for metric in ("merged.common.coverage", "merged.common.qd_score")
    ]
    return {
        "budget": 8,
        "rounds": 2,
        "repeats": 3,
        "seeds": [1, 2, 3],
        "equal_compute": True,
        "conditions": {"solo": block, "diverse": block},
        "comparisons": comparisons,
    }


def test_families_extraction_reads_renamed_and_new_statistics():
    families = render.load_script(FIGURES / "families.py")
    plain = families.figures(families.extract(synthetic_summary(ci95=[0.1, 0.4])))
    assert "+0.25 [+0.10, +0.40]" in plain["diverse-vs-common"]
    assert "Holm" not in plain["diverse-vs-common"] and "A12" not in plain["diverse-vs-common"]
    richer = families.figures(
        families.extract(
            synthetic_summary(hl_ci95=[0.05, 0.5], p_holm=0.2, a12=0.83, ci_method="Hodges-Lehmann")
        )
    )
    table = richer["diverse-vs-common"]
    assert "p (Holm)" in table and "A12" in table
    assert "+0.25 [+0.05, +0.50]" in table and "0.200" in table and "0.83" in table
    assert "Hodges-Lehmann" in richer["methods"]
    assert richer["diverse-solo.common-qd.p"] == "0.100"


def test_markers_quoted_in_inline_code_are_text():
    text = "write `<!-- figure: families/x -->` ... `<!-- /figure -->` or `<!-- fig: a/b -->`\n"
    assert render.render_page(text, ROOT / "docs" / "x.md", {}) == text


def test_families_extraction_reads_the_hodges_lehmann_shift_and_its_level():
    families = render.load_script(FIGURES / "families.py")
    data = families.extract(
        synthetic_summary(
            shift=0.2,
            ci=[0.05, 0.5],
            ci_level=0.9,
            ci95=None,
            a12=0.8,
            p_holm=0.3,
            interval="Hodges-Lehmann shift a - b",
        )
    )
    shown = families.figures(data)
    assert "+0.25; shift +0.20 [+0.05, +0.50]" in shown["diverse-vs-common"]
    assert "Hodges-Lehmann shift a - b" in shown["methods"] and "level 0.900" in shown["methods"]


def test_families_tables_name_the_unit_of_each_spread():
    families = render.load_script(FIGURES / "families.py")
    summary = synthetic_summary()
    for block in summary["conditions"].values():
        block["niche_novelty"] = {**block["niche_novelty"], "unit": "nodes x repeats"}
        block["merged"]["coverage"] = {**block["merged"]["coverage"], "unit": "repeats"}
    table = families.figures(families.extract(summary))["all-conditions"]
    assert "niche novelty: nodes x repeats" in table and "coverage (raw): repeats" in table
    assert "over —" not in families.figures(families.extract(synthetic_summary()))["all-conditions"]


def _condition(values, operators):
    stat = {"mean": sum(values) / len(values), "std": 0.1, "n": len(values), "values": values}
    return {
        "operators": operators,
        "nodes": len(operators),
        "repeats_completed": len(values),
        "merged": {
            "coverage": stat,
            "qd_score": stat,
            "common": {"coverage": stat, "qd_score": stat},
        },
    }


def test_static_domains_compares_homo_with_solo_when_there_is_no_diverse(tmp_path):
    static = render.load_script(FIGURES / "static_domains.py")
    conditions = {
        "solo": _condition([0.1, 0.2, 0.3, 0.4, 0.5], ["g"]),
        "homo": _condition([0.6, 0.7, 0.8, 0.9, 1.0], ["g"] * 4),
    }
    summary = {
        "budget": 8,
        "rounds": 4,
        "repeats": 5,
        "seeds": [100, 104],
        "comparisons": [],
        "equal_compute": True,
        "conditions": conditions,
    }
    run = tmp_path / "homo" / "repeat-0"
    run.mkdir(parents=True)
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (run / "config.json").write_text(json.dumps({"lifecycle": "continual"}))
    (run / "summary.json").write_text(
        json.dumps(
            {
                "nodes": {
                    "n0": {"sharing": {"published": 4, "accepted": 3}},
                    "n1": {"sharing": {"published": 4, "accepted": 2}},
                }
            }
        )
    )
    data = static.extract("symreg", tmp_path)
    entry = next(e for e in data["comparisons"] if e["metric"] == "merged.common.qd_score")
    # Every Homo repeat above every Solo repeat: A12 1 and the exact two-sided p 2/252.
    assert (entry["a"], entry["b"]) == ("homo", "solo")
    assert entry["a12"] == 1.0 and abs(entry["p"] - 2 / 252) < 1e-9
    shown = static.figures({"symreg": data | {"command": "dei experiment"}})
    assert shown["symreg.tally"] == "wins 2, loses 0, ties 0"
    assert "**higher**" in shown["symreg.reading"] and "Homo −" in shown["symreg.vs-common"]
    assert shown["symreg.lifecycle"] == "continual" and shown["symreg.accepted"] == "homo 5.0"
    # Overlapping samples: no verdict either way.
    summary["conditions"]["homo"] = _condition([0.15, 0.25, 0.35, 0.45, 0.55], ["g"] * 4)
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    tied = static.figures({"symreg": static.extract("symreg", tmp_path) | {"command": ""}})
    assert tied["symreg.tally"] == "wins 0, loses 0, ties 2"


def _remeasured(differences, sem=0.5):
    runs = [
        {
            "run": f"docs/example-report/families/solo/repeat-{k}",
            "elites": 6,
            "reported_qd": 5.0,
            "reported_sem": sem,
            "fresh_qd": 5.0 + d,
            "fresh_sem": sem,
            "difference": d,
            "z": d / (sem * 2**0.5),
            "within_reported_sem": abs(d) < sem,
        }
        for k, d in enumerate(differences)
    ]
    zs = [r["z"] for r in runs]
    return {
        "runs": runs,
        "n_runs": len(runs),
        "fresh_seeds": 10,
        "within_2_standard_errors": sum(abs(z) <= 2 for z in zs),
        "within_reported_sem": sum(r["within_reported_sem"] for r in runs),
        "expected_within_reported_sem": 0.52 * len(runs),
        "mean_difference": sum(differences) / len(runs),
        "mean_difference_sem": sem * 2**0.5 / len(runs) ** 0.5,
        "pooled_z": sum(zs) / len(zs) ** 0.5,
        "negative_differences": sum(d < 0 for d in differences),
    }


def test_common_remeasure_states_whether_the_check_passes():
    remeasure = render.load_script(FIGURES / "common_remeasure.py")
    # Differences of both signs, each within its error: passes.
    unbiased = remeasure.figures(_remeasured([0.3, -0.4, 0.1, -0.2, 0.5, -0.6, 0.2, -0.1]))
    assert unbiased["verdict"] == "passes" and "**the check passes**" in unbiased["summary"]
    assert "8 runs" in unbiased["summary"] and "| solo | 8 |" in unbiased["by-condition"]
    assert unbiased["runs"].count("\n") == 8 + 1  # header, rule, one row per run
    # Each run only about one standard error low, but all of them: the pooled z catches it.
    shifted = remeasure.figures(_remeasured([-0.6, -0.7, -0.5, -0.8, -0.6, -0.7, -0.5, -0.6]))
    assert shifted["verdict"] == "fails" and "**the check fails**" in shifted["summary"]
    # Too many runs outside two standard errors fails too, whatever their signs.
    wild = remeasure.figures(_remeasured([2.0, -2.0, 1.9, -1.9, 0.1, -0.1, 2.1, -2.1]))
    assert wild["verdict"] == "fails"


def test_figures_are_refused_from_a_dirty_tree_unless_told(monkeypatch):
    import figurelib

    monkeypatch.delenv(figurelib.ALLOW_DIRTY_VARIABLE, raising=False)
    with pytest.raises(SystemExit, match="uncommitted changes"):
        figurelib.require_clean_tree({"commit": "0" * 40, "dirty": True})
    figurelib.require_clean_tree({"commit": "0" * 40, "dirty": False})
    monkeypatch.setenv(figurelib.ALLOW_DIRTY_VARIABLE, "1")
    figurelib.require_clean_tree({"commit": "0" * 40, "dirty": True})  # a try-out: allowed
